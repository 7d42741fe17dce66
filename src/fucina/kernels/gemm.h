// GEMM and tensor contraction by named axes.
#pragma once

#include <cstdint>

#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// C[M,N] = op(A)[M,K] · op(B)[K,N] (+ C when accumulate), row-major with leading dimensions:
// op(A)(i,p) is a[i·lda + p], or a[p·lda + i] when trans_a; op(B)(p,j) is b[p·ldb + j], or
// b[j·ldb + p] when trans_b; C(i,j) is c[i·ldc + j]. Any ld ≥ 0 (0 broadcasts a row).
// f32-gemm-ref: the scalar reference (i-k-j order), what the tests compare the fast path with.
void gemmRef(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);
// The fast path: the packed SIMD kernel (gemm_simd.h), C's tile grid split over ctx's pool when
// the work is large enough.
void gemm(ExecContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
          bool accumulate);

// The fast kernel on the calling thread only: for callers whose work items already spread over
// the pool (attention's per-head tiles), where a nested split would only add overhead.
void gemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);

// The same with contiguous, untransposed operands: A[M,K], B[K,N], C[M,N].
inline void gemmRef(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                    bool accumulate) {
  gemmRef(false, false, m, n, k, a, k, b, n, c, n, accumulate);
}
inline void gemm(ExecContext& ctx, int64_t m, int64_t n, int64_t k, const float* a,
                 const float* b, float* c, bool accumulate) {
  gemm(ctx, false, false, m, n, k, a, k, b, n, c, n, accumulate);
}

// Contracts a and b over `contracted` (axes both have, equal extents). Axes both have that are
// not contracted are batch axes. Result axes: a's remaining axes in a's order, then b's
// remaining axes that a lacks, in b's order. Any strides; the result is contiguous.
// A valid `initial` (axes a subset of the result's, same extents) is broadcast into the result
// buffer first and the GEMM accumulates onto it: the fused bias of addDot.
internal::RawTensor contract(ExecContext& ctx, const internal::RawTensor& a,
                             const internal::RawTensor& b, const Tags& contracted,
                             const internal::RawTensor& initial = {});

}  // namespace fucina::kernels
