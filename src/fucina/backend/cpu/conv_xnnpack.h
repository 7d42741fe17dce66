// XNNPACK's convolution operator as the channels-last conv2d forward (Note [Channels last]), in
// native builds that found it (FUCINA_XNNPACK).
#pragma once

#include "fucina/backend/conv_geometry.h"
#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// y = conv2d(x, w) for a channels-last plan: true when XNNPACK computed it; false, having
// computed nothing, when it is not built in or does not take the plan (the caller then runs the
// GEMM path). Its threads are ctx's pool's. XNNPACK may read 16 bytes past its input: x (contiguous)
// is taken only when its block holds them, as all but buffers of exactly a size class do.
bool xnnpackConv2d(ExecContext& ctx, const ConvPlan& p, const internal::RawTensor& x, const float* w, float* y);

// The fewest multiply-adds (N·P·OC·C/G·kh·kw) a convolution needs to run on XNNPACK.
inline constexpr double kXnnpackMinWork = 4e6;

}  // namespace fucina::kernels
