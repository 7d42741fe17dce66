// The reference backend's convolution, pooling and channel primitives (backend/kernels.h): each
// output a direct sum over its window, in f64, on the calling thread.
#pragma once

#include <vector>

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

using ConvPlan = kernels::ConvPlan;
using Conv2dGeometry = kernels::Conv2dGeometry;

RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                 const Extents& shape, const RawTensor& bias, bool relu);
RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                          const Tags& tags, const Extents& shape);
RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                           const Tags& tags, const Extents& shape);
RawTensor winogradWeights(ExecContext& ctx, const RawTensor& w, int64_t groups);
RawTensor winogradConv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& u, const ConvPlan& p,
                         const Tags& tags, const Extents& shape, const RawTensor& bias, bool relu);
RawTensor im2col(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                 const Extents& shape);
RawTensor col2im(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                 const Extents& shape);

Kernels::Pooled pool2d(ExecContext& ctx, Kernels::Pool kind, const RawTensor& x, const Conv2dGeometry& g, size_t trailing,
                       bool argmax);
RawTensor pool2dVjp(ExecContext& ctx, Kernels::Pool kind, const RawTensor& gy, const RawTensor& argmax,
                    const Conv2dGeometry& g, size_t trailing);
RawTensor upsample2x(ExecContext& ctx, const RawTensor& x);
RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy);

RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                        Tag channel);
Kernels::AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale,
                                      const RawTensor& gy, Tag channel, bool input, bool params);

// A buffer of f64 sums written out as f32 into a fresh (tags, shape) tensor.
RawTensor fromSums(ExecContext& ctx, const Tags& tags, const Extents& shape, const std::vector<double>& sums);

}  // namespace fucina::backend::reference
