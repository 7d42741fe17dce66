// The cpu backend's plane-wise spatial primitives (backend/kernels.h): im2col/col2im over
// images, pooling and 2x upsampling with their VJPs, and channelAffine, each running the loops
// of backend/cpu/conv.h over chunks of planes on the work pool.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

using internal::RawTensor;
using Pool = backend::Kernels::Pool;

RawTensor im2colImages(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                       const Extents& shape);
RawTensor col2imImages(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                       const Extents& shape);

backend::Kernels::Pooled pool2d(ExecContext& ctx, Pool kind, const RawTensor& x, const Conv2dGeometry& g, size_t trailing,
                                bool argmax);
RawTensor pool2dVjp(ExecContext& ctx, Pool kind, const RawTensor& gy, const RawTensor& argmax, const Conv2dGeometry& g,
                    size_t trailing);

RawTensor upsample2x(ExecContext& ctx, const RawTensor& x);
RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy);

RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                        Tag channel);
backend::Kernels::AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale,
                                               const RawTensor& gy, Tag channel, bool input, bool params);

}  // namespace fucina::kernels
