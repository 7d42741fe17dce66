// The cpu backend's convolution core (Note [Convolution core]): conv2d's forward and its two
// adjoints as im2col + GEMM per image, or depthwise row loops, split over the work pool.
#pragma once

#include "fucina/backend/conv_geometry.h"
#include "fucina/backend/kernels.h"
#include "fucina/core/raw_tensor.h"

namespace fucina {
class ExecContext;
}

namespace fucina::kernels {

using internal::RawTensor;

// The primitives of Kernels (backend/kernels.h): y, gx and gw over (tags, shape), contiguous
// operands laid out as p says.
RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                 const Extents& shape, const RawTensor& bias, bool relu);
RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                          const Tags& tags, const Extents& shape);
RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                           const Tags& tags, const Extents& shape);
// Kernels::conv2dVjp in one pass over the images (Note [Fused convolution VJP]), for a plan that
// fusedVjp accepts (channels first, not depthwise) and a gy that is not empty.
bool fusedVjp(const ConvPlan& p);
backend::Kernels::ConvGrads conv2dVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& relu_y, const RawTensor& x,
                                      const RawTensor& w, const ConvPlan& p,
                                      const backend::Kernels::ConvGradLayout& layout, bool bias);
// Kernels::conv2dReluPool and its VJP with each image pooled from its chunk's scratch (Note
// [Pooled conv2dRelu]), for a plan that fusedPool accepts (channels first, not depthwise) or, for
// the VJP, fusedVjp (a subset of those), with a result and gy that are not empty.
bool fusedPool(const ConvPlan& p);
backend::Kernels::Pooled conv2dReluPool(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p,
                                        const Tags& tags, const Extents& shape, const RawTensor& bias,
                                        const Conv2dGeometry& pool, bool argmax);
backend::Kernels::ConvGrads conv2dReluPoolVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& pooled,
                                              const RawTensor& argmax, const RawTensor& x, const RawTensor& w,
                                              const ConvPlan& p, const Conv2dGeometry& pool,
                                              const backend::Kernels::ConvGradLayout& layout, bool bias);
// The Winograd primitives on backend/cpu/winograd.h's kernels.
RawTensor winogradWeights(ExecContext& ctx, const RawTensor& w, int64_t groups);
RawTensor winogradConv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& u, const ConvPlan& p,
                         const Tags& tags, const Extents& shape, const RawTensor& bias, bool relu);

}  // namespace fucina::kernels
