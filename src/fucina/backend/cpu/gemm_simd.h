// The packed, register-blocked SIMD GEMM (gemm_simd.cpp, Highway): the single-threaded worker
// behind kernels::gemm, which splits C over the pool and calls it once per piece.
#pragma once

#include <cstdint>

#include "fucina/backend/cpu/gemm.h"

namespace fucina::kernels::detail {

// The depth of one packed slice (gemm_simd.cpp, "Cache blocking"): a depth k is cut into equal
// slices of at most kKC, rounded up to 8 (the last one takes the rest). It depends on k alone,
// never on a piece or the thread count, so sums, and so bits, are the same on any thread count.
inline constexpr int64_t kKC = 512;
inline int64_t sliceDepth(int64_t k) {
  if (k <= kKC) return k;
  const int64_t slices = (k + kKC - 1) / kKC;
  return ((k + slices - 1) / slices + 7) / 8 * 8;
}

// C[M,N] (+)= op(A)·op(B) in the layout of kernels::gemm (gemm.h).
struct GemmArgs {
  bool trans_a, trans_b;
  int64_t m, n, k;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  bool accumulate;
  GemmBand band = {};
  const float* bias = nullptr;  // per column of C, added when not accumulating (gemm.h)
  // Nonzero: the same product over several calls of gemmBlock on one thread (rows claimed one
  // block at a time), so a thread's packed B panels from its previous call are reused. Unique
  // per product: the same B pointer may hold new values in a later product.
  uint64_t product_id = 0;
  // A typed B (gemm.h, TypedB): b is then unused and b_base/b_offset locate its elements.
  DType b_dtype = DType::f32;
  const std::byte* b_base = nullptr;
  int64_t b_offset = 0;
  // B already packed whole (Note [Packed B], packWholeB): b, b_dtype and product_id are then
  // unused, n0 of every gemmBlock call is a multiple of gemmPanelCols().
  const float* b_packed = nullptr;
  // A already packed whole (Note [Packed A]): a, lda and trans_a are then unused, and m0 of every
  // gemmBlock call is a multiple of gemmTileRows().
  const float* a_packed = nullptr;
};

// Note [Packed B]: a right operand packed once for many products (packRhs, gemm.h): for each
// depth slice of sliceDepth(k) rows starting at pc (the last takes the rest, kc deep), the
// NR-wide panels of all n columns one after another, zero-padded to npad = n rounded up to NR.
// The slice starts at pc·npad; the panel of column j0 (a multiple of NR) at pc·npad + j0·kc.
// These are the panels PackB makes for every block of the product, so a product read from them
// gives the bits it gives when it packs B itself (for the same slices of the depth).
int64_t gemmPanelCols();                  // NR on the dispatched target
int64_t packedBFloats(int64_t k, int64_t n);  // k · npad
// Packs op(B) (g's b/typed fields, trans_b, ldb; g.k and g.n its sizes) for columns [n0, n1) of
// one depth slice [pc, pc + kc), n0 a multiple of NR, into dst laid out as above.
void packBSlice(const GemmArgs& g, int64_t pc, int64_t kc, int64_t n0, int64_t n1, float* dst);

// Note [Packed A]: a left operand packed once for many products (a convolution's weights, one
// product per image): for each depth slice as above, the MR-row panels of all m rows one after
// another, zero-padded to mpad = m rounded up to MR: the slice at pc·mpad, the panel of row i0 (a
// multiple of MR) at pc·mpad + i0·kc. These are the panels GemmBlock packs A into per block, so
// the products have the bits they have with A packed, or read in place, per product.
int64_t packedAFloats(int64_t m, int64_t k);  // mpad · k
// Packs op(A) (trans_a: op(A)(i, p) = a[p·lda + i], else a[i·lda + p]), m×k, into dst as above.
void packA(bool trans_a, int64_t m, int64_t k, const float* a, int64_t lda, float* dst);

// out[i] = element e + i of a typed buffer (f16, bf16 or q8_0) as f32, i < n: what PackB reads a
// typed B through. SIMD on the dispatched target; exposed for the tests.
void convertRun(const std::byte* base, DType dtype, int64_t e, int64_t n, float* out);

// Computes the block rows [m0, m1) × columns [n0, n1) of C, all of K. Thread-safe: the packing
// buffers are per thread.
void gemmBlock(const GemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);

// Columns of one packed block of B on the dispatched target (NC): a product with n ≤ this and
// depth ≤ kKC packs B once per thread, whatever rows each gemmBlock call covers.
int64_t gemmBlockCols();

// Rows of the microkernel's tile on the dispatched target (MR: 4, 6 or 8): a cut of C's rows at
// multiples of it keeps every piece whole tiles.
int64_t gemmTileRows();

// Name of the SIMD target the dispatcher chose ("AVX2", "AVX3", "WASM", ...): for benchmarks.
const char* gemmTargetName();

}  // namespace fucina::kernels::detail
