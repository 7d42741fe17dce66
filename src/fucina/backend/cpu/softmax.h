// Row-wise softmax kernels: rows of length n, contiguous, max subtracted. The scalar reference
// sums in f64; the SIMD path (vector_ops.h) sums in f32 lanes, then in f64.
#pragma once

#include <cstdint>

#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// y = softmax(x) (or log_softmax when log) over each row of n elements.
void softmaxRows(ExecContext& ctx, const float* x, float* y, int64_t rows, int64_t n, bool log);
// The same over the rows of x (its last axis, contiguous f32), and the VJP from y and gy (Kernels).
internal::RawTensor softmaxRows(ExecContext& ctx, const internal::RawTensor& x, bool log);
internal::RawTensor softmaxRowsVjp(ExecContext& ctx, const internal::RawTensor& y, const internal::RawTensor& gy,
                                   bool log);

}  // namespace fucina::kernels
