// GEMM and tensor contraction by named axes.
#pragma once

#include <cstdint>

#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// C[M,N] = A[M,K] · B[K,N] (+ C when accumulate), all row-major and contiguous.
// f32-gemm-ref: the scalar reference loop (i-k-j order so the inner loop vectorizes).
void gemmRef(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
             bool accumulate);
// The dispatching entry: rows of C are split over ctx's pool when the work is large.
void gemm(ExecContext& ctx, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c, bool accumulate);

// Contracts a and b over `contracted` (axes both have, equal extents). Axes both have that are
// not contracted are batch axes. Result axes: a's remaining axes in a's order, then b's
// remaining axes that a lacks, in b's order. Any strides; the result is contiguous.
// A valid `initial` (axes a subset of the result's, same extents) is broadcast into the result
// buffer first and the GEMM accumulates onto it: the fused bias of addDot.
internal::RawTensor contract(ExecContext& ctx, const internal::RawTensor& a,
                             const internal::RawTensor& b, const Tags& contracted,
                             const internal::RawTensor& initial = {});

}  // namespace fucina::kernels
