// Sum reductions over named axes (accumulated in f64, written as f32).
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

// Sums a over `axes` (each must be an axis of a); the result keeps a's other axes in a's order.
internal::RawTensor sumAxes(ExecContext& ctx, const internal::RawTensor& a, const Tags& axes);

// --- line kernels along one named axis (any strides; outputs contiguous f32) ---
// Max (or min) over axis, dropping it; ties and order: the FIRST extremum along the axis wins,
// NaN propagates. *index receives, per output element, that extremum's position (as f32).
internal::RawTensor extremumAlong(ExecContext& ctx, const internal::RawTensor& a, Tag axis,
                                  bool is_max, internal::RawTensor* index);
// Inclusive cumulative sum along axis (reverse: from the end), keeping a's axes and order.
internal::RawTensor cumsumAlong(ExecContext& ctx, const internal::RawTensor& a, Tag axis,
                                bool reverse);
// Product over axis (in f64), dropping it; 1 over an empty axis.
internal::RawTensor prodAlong(ExecContext& ctx, const internal::RawTensor& a, Tag axis);
// For each element, the product of the OTHER elements of its line along axis (exclusive prefix
// times exclusive suffix, so zeros need no division). Same axes and order as a.
internal::RawTensor prodOthersAlong(ExecContext& ctx, const internal::RawTensor& a, Tag axis);

// Kernels::reduceAlong: the line kernel above that op names.
backend::Kernels::Along reduceAlong(ExecContext& ctx, backend::Kernels::AlongAxis op, const internal::RawTensor& a,
                                    Tag axis);

}  // namespace fucina::kernels
