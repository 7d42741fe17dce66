// Sum reductions over named axes (accumulated in f64, written as f32).
#pragma once

#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// Sums a over `axes` (each must be an axis of a); the result keeps a's other axes in a's order.
internal::RawTensor sumAxes(ExecContext& ctx, const internal::RawTensor& a, const Tags& axes);
// Sums a down to (tags, shape): axes of a not in tags are summed; the result is laid out in the
// order of tags. Each tag must be an axis of a with the same extent. Used by broadcasting VJPs.
internal::RawTensor sumTo(ExecContext& ctx, const internal::RawTensor& a, const Tags& tags,
                          const Extents& shape);

}  // namespace fucina::kernels
