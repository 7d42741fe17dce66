// GEMM and tensor contraction by named axes.
#pragma once

#include <cstdint>

#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// C[M,N] = op(A)[M,K] · op(B)[K,N] (+ C when accumulate), row-major with leading dimensions:
// op(A)(i,p) is a[i·lda + p], or a[p·lda + i] when trans_a; op(B)(p,j) is b[p·ldb + j], or
// b[j·ldb + p] when trans_b; C(i,j) is c[i·ldc + j]. Any ld ≥ 0 (0 broadcasts a row).
//
// A band says that one side of the product is lower-triangular, as in causal attention, so
// that the kernel skips the tiles that cannot matter. With `shift`, row i of C sees
// columns/depth up to i + shift (shift = Tk − Tq for an end-aligned causal mask):
//   kOutputLower  only C(i, j) with j ≤ i + shift are wanted: register tiles wholly above that
//                 line are not computed and C keeps whatever it held there;
//   kALower       op(A)(i, p) = 0 for p > i + shift (e.g. probabilities times V): each row tile
//                 stops its depth loop at its last row's limit;
//   kAUpper       op(A)(i, p) = 0 for p < i − shift (e.g. the transposed probabilities of dV):
//                 each row tile starts its depth loop at its first row's limit.
// Entries the kernel does read must still hold those zeros (tiles are MR rows tall).
enum class Band : uint8_t { kFull, kOutputLower, kALower, kAUpper };
struct GemmBand {
  Band kind = Band::kFull;
  int64_t shift = 0;
};
// f32-gemm-ref: the scalar reference (i-k-j order), what the tests compare the fast path with.
void gemmRef(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);
// The fast path: the packed SIMD kernel (gemm_simd.h), C's tile grid split over ctx's pool when
// the work is large enough. A `bias` (n floats) makes it C = bias[j] + op(A)·op(B), fused into
// the kernel's stores (addDot's bias); it requires accumulate == false.
void gemm(ExecContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
          bool accumulate, const float* bias = nullptr);

// A right operand stored as f16, bf16 or q8_0: element (p, j) of op(B) is element index
// offset + p·ldb + j (offset + j·ldb + p when trans_b) of the buffer at base (Note [q8_0 layout]
// for q8_0), converted to f32 while the GEMM packs it, one packed block at a time, so the
// operand is never copied whole to f32 (the mixed-precision contractions of Note [Dtype rules]).
struct TypedB {
  const std::byte* base = nullptr;
  DType dtype = DType::f32;
  int64_t offset = 0;
};
void gemm(ExecContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, int64_t lda, const TypedB& b, int64_t ldb, float* c, int64_t ldc,
          bool accumulate, const float* bias = nullptr);

// A right operand packed once for many products (Note [Packed B], gemm_simd.h): op(B), k×n, from
// an f32 b (typed.dtype f32) or a typed one, into dst of packedRhsFloats(k, n) floats. The layout
// depends on the dispatched target, so it lives in this process only.
int64_t packedRhsFloats(int64_t k, int64_t n);
void packRhs(ExecContext& ctx, bool trans_b, int64_t k, int64_t n, const float* b, const TypedB& typed,
             int64_t ldb, float* dst);
// C[M,N] = A[M,K]·B (+ bias[j]) with B packed by packRhs; A's rows at a + i·lda. The same bits as
// gemm on the same operands, except for the products gemm splits along the depth (Note [Split
// the depth]), which a packed B does not allow: those agree within rounding.
void gemmPacked(ExecContext& ctx, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                const float* packed, float* c, int64_t ldc, const float* bias = nullptr);

// A left operand packed once for many products (Note [Packed A], gemm_simd.h): op(A), m×k
// (op(A)(i, p) = a[p·lda + i] when trans_a, else a[i·lda + p]), into dst of packedLhsFloats(m, k)
// floats, on the calling thread. The layout depends on the dispatched target, as a packed B's.
int64_t packedLhsFloats(int64_t m, int64_t k);
void packLhs(bool trans_a, int64_t m, int64_t k, const float* a, int64_t lda, float* dst);
// C[M,N] (+)= A·op(B) with A packed by packLhs: the same bits as gemm on the same operands, except
// for the products gemm splits along the depth (Note [Split the depth]), which a packed A does not
// allow. gemmSerialPackedLhs runs on the calling thread only, as gemmSerial.
void gemmPackedLhs(ExecContext& ctx, bool trans_b, int64_t m, int64_t n, int64_t k, const float* packed_a,
                   const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate);
void gemmSerialPackedLhs(bool trans_b, int64_t m, int64_t n, int64_t k, const float* packed_a, const float* b,
                         int64_t ldb, float* c, int64_t ldc, bool accumulate);

// The fast kernel on the calling thread only: for callers whose work items already spread over
// the pool (attention's per-head tiles), where a nested split would only add overhead.
void gemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                GemmBand band = {});

// The same with contiguous, untransposed operands: A[M,K], B[K,N], C[M,N].
inline void gemmRef(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                    bool accumulate) {
  gemmRef(false, false, m, n, k, a, k, b, n, c, n, accumulate);
}
inline void gemm(ExecContext& ctx, int64_t m, int64_t n, int64_t k, const float* a,
                 const float* b, float* c, bool accumulate) {
  gemm(ctx, false, false, m, n, k, a, k, b, n, c, n, accumulate);
}

// The axes of contract(a, b, contracted), checked: contracted and batch axes (shared, not
// contracted) must agree in extent (else ShapeMismatch); a_free and b_free are the axes only one
// operand has, in its order. Shared by the f32 and f64 (contract_f64.h) contractions.
struct ContractionAxes {
  Tags batch, a_free, b_free;
};
ContractionAxes contractionAxes(const internal::RawTensor& a, const internal::RawTensor& b,
                                const Tags& contracted);
// A result computed as [batch, a_free, b_free] in the documented order below (a view, or a
// contiguous copy when the orders differ).
internal::RawTensor inResultOrder(ExecContext& ctx, const internal::RawTensor& computed,
                                  const internal::RawTensor& a, const Tags& contracted,
                                  const Tags& b_free);

// Contracts a and b over `contracted` (axes both have, equal extents). Axes both have that are
// not contracted are batch axes. Result axes: a's remaining axes in a's order, then b's
// remaining axes that a lacks, in b's order. Any strides; the result is contiguous.
// A valid `initial` (axes a subset of the result's, same extents) is broadcast into the result
// buffer first and the GEMM accumulates onto it: the fused bias of addDot.
internal::RawTensor contract(ExecContext& ctx, const internal::RawTensor& a,
                             const internal::RawTensor& b, const Tags& contracted,
                             const internal::RawTensor& initial = {});

}  // namespace fucina::kernels
