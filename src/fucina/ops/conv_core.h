// conv2d's validated im2col + GEMM forward (ops/conv.cpp, Note [Convolution core]), for the
// prepared convolution's GEMM path (ops/conv_prepared.cpp), which must agree with it exactly.
#pragma once

#include <string_view>

#include "fucina/ag/tensor.h"

namespace fucina::ops {

// conv2d(x, w, options) with f32 operands, the errors named `op`; `bias` (f32 {out_channels}, or
// none) and `relu` are fused into the output loop. Records a VJP only if an operand requires grad.
Tensor conv2dForward(ExecContext& ctx, const Tensor& x, const Tensor& w, const Conv2dOptions& options,
                     std::string_view op, const internal::RawTensor& bias, bool relu);

}  // namespace fucina::ops
