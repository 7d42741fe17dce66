// Packed, register-blocked f32 GEMM written once with Highway (docs/design-notes.md, "GEMM").
// Goto/BLIS structure: for each NC-column block and KC-deep slice, B is packed into NR-wide
// panels; for each MC-row block a transposed A is packed into MR-tall panels (an A whose rows
// run along the depth is read in place); the microkernel then keeps an MR×NR tile of C in
// registers over the whole slice. Packing absorbs both transposes and any leading dimension.
// Native builds compile this file once per x86 target (foreach_target.h) and pick the best at
// run time; wasm compiles it once for SIMD128 (HWY_COMPILE_ONLY_STATIC).
#ifndef FUCINA_KERNELS_GEMM_SIMD_SHARED
#define FUCINA_KERNELS_GEMM_SIMD_SHARED

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fucina/core/q8.h"
#include "fucina/backend/cpu/gemm_simd.h"

namespace fucina::kernels::detail {
namespace {

// Per-thread packing buffer that only grows, 64-byte aligned: no allocation in steady state.
float* scratch(int slot, size_t floats) {
  thread_local std::vector<float> buffers[3];  // A panels, B panels, a typed B block as f32
  std::vector<float>& buf = buffers[slot];
  if (buf.size() < floats + 16) buf.resize(floats + 16);
  const auto addr = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<float*>((addr + 63) & ~uintptr_t{63});
}

int64_t roundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

}  // namespace
}  // namespace fucina::kernels::detail

#endif  // FUCINA_KERNELS_GEMM_SIMD_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fucina/backend/cpu/gemm_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace fucina::kernels::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
#include "fucina/backend/cpu/relaxed-inl.h"  // MulAddAcc

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// Tile: kMR rows × kNV vectors of C held in registers (kMR·kNV accumulators).
#if HWY_TARGET == HWY_WASM && defined(__wasm_relaxed_simd__)
// relaxed_madd is one instruction (V8: an FMA), so 12 accumulators + 2 B vectors + 1 splat fit
// V8's 15 vector registers, where 8 left the FMA's latency exposed (docs/relaxed-simd.md: the
// kernels must then stay out of line, scripts/build-wasm).
constexpr int64_t kMR = 6, kNV = 2;
#elif HWY_TARGET == HWY_WASM || HWY_TARGET == HWY_WASM_EMU256
// V8 gives wasm 15 vector registers: 8 accumulators + 2 B vectors + 1 splat; 12 would spill
// (a multiply then an add holds the product in one more).
constexpr int64_t kMR = 4, kNV = 2;
#elif HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr int64_t kMR = 8, kNV = 2;  // 16 of 32 zmm registers for C
#elif HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
constexpr int64_t kMR = 4, kNV = 2;
#else
constexpr int64_t kMR = 6, kNV = 2;  // AVX2/SSE: 12 accumulators + 2 B + 1 broadcast of 16
#endif
constexpr int64_t kLanes = static_cast<int64_t>(hn::MaxLanes(D()));
constexpr int64_t kNR = kNV * kLanes;
// Cache blocking: a KC×NR panel of B stays in L1 while MC/MR panels of A (an MC×KC block, in L2)
// stream past it; a KC×NC block of B sits in L2/L3. On one thread KC 128/256/384 and MC 8/16/32
// panels were within a few % of each other (thread CPU time, 1024³ and 128×784×512). KC is up to
// 512 (kKC and sliceDepth, gemm_simd.h) because each slice rewrites C: with C cut by columns over
// two threads, each writing half of every row, 7 slices at depth 784 cost 20% of each piece's
// time, 2 slices nothing measurable (design notes, "GEMM").
constexpr int64_t kMC = kMR * 16;
constexpr int64_t kNC = kNR * 64;
// Note [A read in place]: an A whose rows run along the depth is read in place natively, where a
// load's address takes a row base plus a scaled index at no cost. A wasm load adds only a
// constant offset, so reading the tile's four rows in place costs an address computation per row
// and depth step, where a packed panel's four floats sit at constant offsets from one pointer.
// Wasm therefore packs such an A for a block of at least four panels of B, where packing is a
// small share: W4 1024³ 49.9 → 46.9 ms (simd) and 42.4 → 41.3 (relaxed-simd), W3 164.7 → 159.5
// (simd, relaxed-simd level), W2 33.7 → 32.6 (simd, with Note [Packed A] for its weights; node
// bench/bench.mjs, two alternated runs, Zen 4). The sums, and so the bits, are the same either way.
#if HWY_TARGET == HWY_WASM || HWY_TARGET == HWY_WASM_EMU256
constexpr int64_t kPackAFromCols = 4 * kNR;
#else
constexpr int64_t kPackAFromCols = INT64_MAX;
#endif

// C tile (mr ≤ kRows rows, nr ≤ kPanels·kNR columns at c) += A panel · kPanels packed B panels
// (panel q at pb + q·panel_stride), or, when overwrite, = the product plus bias[j] per column (bias
// null: plus 0). A is a packed panel (element (i, p) at a[p·kMR + i], whatever kRows) or,
// kDirect, A's own rows read in place (a[i·lda + p]; rows past mr repeat the last one, whose
// products are never stored). The full tile is kRows = kMR, one panel; Note [Short tiles] says
// when fewer rows and more panels run.
template <bool kDirect, int64_t kRows = kMR, int64_t kPanels = 1>
HWY_NOINLINE void MicroKernel(int64_t kc, const float* HWY_RESTRICT a, int64_t lda,
                              const float* HWY_RESTRICT pb, int64_t panel_stride, float* HWY_RESTRICT c, int64_t ldc,
                              int64_t mr, int64_t nr, bool overwrite, const float* HWY_RESTRICT bias) {
  constexpr int64_t kVecs = kPanels * kNV, kCols = kPanels * kNR;
  const D d;
  V acc[kRows][kVecs];
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t v = 0; v < kVecs; ++v) acc[i][v] = hn::Zero(d);
  const float* rows[kRows] = {};
  if constexpr (kDirect)
    for (int64_t i = 0; i < kRows; ++i) rows[i] = a + std::min(i, mr - 1) * lda;
  // The K loop stays rolled: V8 hoists an unrolled body's loads and spills (14 vs 26 GFLOP/s).
#if HWY_TARGET == HWY_WASM || HWY_TARGET == HWY_WASM_EMU256
#pragma clang loop unroll(disable)
#endif
  for (int64_t p = 0; p < kc; ++p) {
    if constexpr (kRows == 1) {  // each B vector is used once: loaded where it is used, not held
      const V av = hn::Set(d, kDirect ? rows[0][p] : a[0]);
      for (int64_t q = 0; q < kPanels; ++q)
        for (int64_t v = 0; v < kNV; ++v)
          acc[0][q * kNV + v] = MulAddAcc(av, hn::Load(d, pb + q * panel_stride + v * kLanes), acc[0][q * kNV + v]);
      if (!kDirect) a += kMR;
      pb += kNR;
      continue;
    }
    V b[kVecs];
    for (int64_t q = 0; q < kPanels; ++q)
      for (int64_t v = 0; v < kNV; ++v) b[q * kNV + v] = hn::Load(d, pb + q * panel_stride + v * kLanes);
    for (int64_t i = 0; i < kRows; ++i) {
      const V av = hn::Set(d, kDirect ? rows[i][p] : a[i]);
      for (int64_t v = 0; v < kVecs; ++v) acc[i][v] = MulAddAcc(av, b[v], acc[i][v]);
    }
    if (!kDirect) a += kMR;
    pb += kNR;
  }
  // The panels are adjacent columns of C, so vector v of the tile's row is at column v·kLanes.
  if (mr == kRows && nr == kCols) {
    V base[kVecs];
    for (int64_t v = 0; v < kVecs; ++v) base[v] = bias ? hn::LoadU(d, bias + v * kLanes) : hn::Zero(d);
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t v = 0; v < kVecs; ++v) {
        float* ci = c + i * ldc + v * kLanes;
        hn::StoreU(hn::Add(overwrite ? base[v] : hn::LoadU(d, ci), acc[i][v]), d, ci);
      }
    return;
  }
  HWY_ALIGN float tile[kRows * kCols];
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t v = 0; v < kVecs; ++v) hn::Store(acc[i][v], d, tile + i * kCols + v * kLanes);
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nr; ++j)
      c[i * ldc + j] = (overwrite ? (bias ? bias[j] : 0.f) : c[i * ldc + j]) + tile[i * kCols + j];
}

// Note [Short tiles]: a block of fewer than kMR rows (a product with m < kMR: one token through a
// layer while generating, a small batch) would run the full kMR-row tile and throw most of its
// rows away: 8 rows computed for 1 on AVX-512 (gemm_bench, 1x128x384: half XNNPACK's speed). So
// would the rows left below a block's full tiles (W2's first weight gradient, 9 rows: 16 computed
// on AVX-512, 12 in wasm). Such a block, or such a remainder, runs kRows = 1, 2 or 4 rows (the
// next at or above its count) over up to 4 / kRows panels at once, so a row still has several
// independent accumulators to hide the multiply-add latency. Every element of C is still the sum
// of its products in depth order from zero, plus the bias or C, so results are the same bits as
// the full tile's. Where kMR is 4 (simd wasm) no short tile is 4 rows: that would add call sites to the
// full tile's kernel, and with them wasm's GEMM ran 17% slower (W4 1024³ in Node: 42.7 -> 50.0 ms;
// the kernel's own code was unchanged).
template <bool kDirect, int64_t kRows>
void ShortTiles(int64_t kc, const float* a, int64_t lda, const float* pb, float* c, int64_t ldc, int64_t mr,
                int64_t nc, bool overwrite, const float* bias) {
  constexpr int64_t kPanels = std::max<int64_t>(1, 4 / kRows), kCols = kPanels * kNR;
  int64_t jr = 0;
  for (; jr + kCols <= nc; jr += kCols)
    MicroKernel<kDirect, kRows, kPanels>(kc, a, lda, pb + jr * kc, kc * kNR, c + jr, ldc, mr, kCols, overwrite,
                                         bias ? bias + jr : nullptr);
  for (; jr < nc; jr += kNR)
    MicroKernel<kDirect, kRows, 1>(kc, a, lda, pb + jr * kc, kc * kNR, c + jr, ldc, mr, std::min(kNR, nc - jr),
                                   overwrite, bias ? bias + jr : nullptr);
}

// Note [Edge columns]: a product whose last panel of B holds one or two columns (W2's second
// convolution: 121 = 15·8 + 1 columns per image in wasm; a 10-class layer: 8 + 2) would run the
// full tile over that panel and keep an eighth or a quarter of it: 6% of the convolution's
// multiply-adds thrown away. A packed A panel holds its kMR rows side by side at each depth, so
// those columns run with the rows in the vector instead, A's panel loaded and B's element
// broadcast: kEdgeLo rows in one vector and the kEdgeHi left, if any, in a second (6 = 4 + 2 in
// relaxed wasm and on AVX2/SSE4), an accumulator per vector and column, over enough panels at once
// for 8 independent accumulators to hide the multiply-add's latency. Each element is still the sum
// of its products in depth order from zero (a·b, as the tile's b·a: the same bits), plus the bias
// or C, so results are the tile's bits. Only for a packed A: one read in place would gather rows.
constexpr int64_t PowerOfTwoFloor(int64_t x) { return x < 2 ? 1 : 2 * PowerOfTwoFloor(x / 2); }
constexpr int64_t kEdgeLo = PowerOfTwoFloor(std::min(kMR, kLanes)), kEdgeHi = kMR - kEdgeLo;
constexpr bool kEdgeByRows = kEdgeHi == 0 || (kEdgeHi == PowerOfTwoFloor(kEdgeHi) && kEdgeHi < kEdgeLo);
constexpr int64_t kEdgeMaxCols = 2, kEdgeVectors = kEdgeHi > 0 ? 2 : 1;

// C rows [0, rows) × columns [0, kCols) = (or +=) kPanels A panels (panel r at pa + r·a_stride) ·
// the B panel's first kCols columns; rows ≤ kPanels·kMR.
template <int64_t kCols, int64_t kPanels>
HWY_NOINLINE void EdgeKernel(int64_t kc, const float* HWY_RESTRICT pa, int64_t a_stride, const float* HWY_RESTRICT pb,
                             float* HWY_RESTRICT c, int64_t ldc, int64_t rows, bool overwrite,
                             const float* HWY_RESTRICT bias) {
  const hn::CappedTag<float, kEdgeLo> dl;
  const hn::CappedTag<float, (kEdgeByRows && kEdgeHi > 0 ? kEdgeHi : 1)> dh;  // unused where kEdgeHi is 0
  using VL = hn::Vec<decltype(dl)>;
  using VH = hn::Vec<decltype(dh)>;
  VL lo[kPanels][kCols];
  VH hi[kPanels][kCols];
  for (int64_t r = 0; r < kPanels; ++r)
    for (int64_t j = 0; j < kCols; ++j) lo[r][j] = hn::Zero(dl), hi[r][j] = hn::Zero(dh);
#if HWY_TARGET == HWY_WASM || HWY_TARGET == HWY_WASM_EMU256
#pragma clang loop unroll(disable)
#endif
  for (int64_t p = 0; p < kc; ++p) {
    VL bl[kCols];
    VH bh[kCols];
    for (int64_t j = 0; j < kCols; ++j) bl[j] = hn::Set(dl, pb[p * kNR + j]), bh[j] = hn::Set(dh, pb[p * kNR + j]);
    for (int64_t r = 0; r < kPanels; ++r) {
      const float* ap = pa + r * a_stride + p * kMR;
      const VL al = hn::LoadU(dl, ap);
      for (int64_t j = 0; j < kCols; ++j) lo[r][j] = MulAddAcc(al, bl[j], lo[r][j]);
      if constexpr (kEdgeHi > 0) {
        const VH ah = hn::LoadU(dh, ap + kEdgeLo);
        for (int64_t j = 0; j < kCols; ++j) hi[r][j] = MulAddAcc(ah, bh[j], hi[r][j]);
      }
    }
  }
  float lanes[kEdgeLo + kEdgeHi];
  for (int64_t r = 0; r < kPanels; ++r)
    for (int64_t j = 0; j < kCols; ++j) {
      hn::StoreU(lo[r][j], dl, lanes);
      if constexpr (kEdgeHi > 0) hn::StoreU(hi[r][j], dh, lanes + kEdgeLo);
      for (int64_t i = 0; i < std::min(kMR, rows - r * kMR); ++i) {
        float* cij = c + (r * kMR + i) * ldc + j;
        *cij = (overwrite ? (bias ? bias[j] : 0.f) : *cij) + lanes[i];
      }
    }
}

// C rows [0, rows) × columns [0, cols), cols ≤ kEdgeMaxCols, from the packed A panels at pa
// (stride kc·kMR) and the B panel at pb: kPanels panels at a time, one at a time for the rest.
template <int64_t kCols>
void EdgeColumns(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc, int64_t rows, bool overwrite,
                 const float* bias) {
  constexpr int64_t kPanels = 8 / (kCols * kEdgeVectors);
  const int64_t a_stride = kc * kMR;
  int64_t r0 = 0;
  for (; r0 + kPanels * kMR <= rows; r0 += kPanels * kMR)
    EdgeKernel<kCols, kPanels>(kc, pa + r0 * kc, a_stride, pb, c + r0 * ldc, ldc, kPanels * kMR, overwrite, bias);
  for (; r0 < rows; r0 += kMR)
    EdgeKernel<kCols, 1>(kc, pa + r0 * kc, a_stride, pb, c + r0 * ldc, ldc, rows - r0, overwrite, bias);
}

// The short-tile row count for a block of mr < kMR rows, or 0 when the full tile serves.
constexpr int64_t ShortRows(int64_t mr) { return mr <= 1 ? 1 : mr <= 2 ? 2 : mr <= 4 && kMR > 4 ? 4 : 0; }

template <bool kDirect>
void ShortBlock(int64_t rows, int64_t kc, const float* a, int64_t lda, const float* pb, float* c, int64_t ldc,
                int64_t mr, int64_t nc, bool overwrite, const float* bias) {
  if (rows == 1) ShortTiles<kDirect, 1>(kc, a, lda, pb, c, ldc, mr, nc, overwrite, bias);
  else if (rows == 2) ShortTiles<kDirect, 2>(kc, a, lda, pb, c, ldc, mr, nc, overwrite, bias);
  else if constexpr (kMR > 4) ShortTiles<kDirect, 4>(kc, a, lda, pb, c, ldc, mr, nc, overwrite, bias);
}

// Packing order. Where the depth is contiguous (ps = 1) a panel is filled by 4×4 transposes of
// four of its lines. Where the lines are contiguous (ls = 1) a panel is filled W floats from each
// of its kc rows, one panel after another. A first version filled that case row by row across all
// panels: sequential reads, but each store kc·W floats from the last (4 KiB at kc = 128, W = 8),
// all in one L1 set (perf, W3: 30% of PackA's samples on that store). Reading down kc rows touches
// a page per row once ld reaches 1024 floats, yet at 1024³ (ld = 1024) the panel order measured as
// fast (gemm_bench, AVX-512: 188.8 against 183.0 GFLOP/s).

#if HWY_TARGET != HWY_SCALAR
// dst[c·ld_dst + r] = src[r·ld_src + c] for r, c < 4.
HWY_INLINE void Transpose4x4(const float* HWY_RESTRICT src, int64_t ld_src, float* HWY_RESTRICT dst,
                             int64_t ld_dst) {
  const hn::Full128<float> d4;
  const auto r0 = hn::LoadU(d4, src), r1 = hn::LoadU(d4, src + ld_src);
  const auto r2 = hn::LoadU(d4, src + 2 * ld_src), r3 = hn::LoadU(d4, src + 3 * ld_src);
  const auto lo01 = hn::InterleaveLower(d4, r0, r1), lo23 = hn::InterleaveLower(d4, r2, r3);  // a0 b0 a1 b1
  const auto hi01 = hn::InterleaveUpper(d4, r0, r1), hi23 = hn::InterleaveUpper(d4, r2, r3);  // a2 b2 a3 b3
  hn::StoreU(hn::ConcatLowerLower(d4, lo23, lo01), d4, dst);
  hn::StoreU(hn::ConcatUpperUpper(d4, lo23, lo01), d4, dst + ld_dst);
  hn::StoreU(hn::ConcatLowerLower(d4, hi23, hi01), d4, dst + 2 * ld_dst);
  hn::StoreU(hn::ConcatUpperUpper(d4, hi23, hi01), d4, dst + 3 * ld_dst);
}
// dst[c·ld_dst + r] = src[r·ld_src + c] for r < 2, c < 4: the two lines a 6-row panel has after
// its first four (element by element, they made packing A 2.5× slower than with 4-row panels).
HWY_INLINE void Transpose2x4(const float* HWY_RESTRICT src, int64_t ld_src, float* HWY_RESTRICT dst,
                             int64_t ld_dst) {
  const hn::Full128<float> d4;
  const hn::Half<decltype(d4)> d2;
  const auto r0 = hn::LoadU(d4, src), r1 = hn::LoadU(d4, src + ld_src);
  const auto lo = hn::InterleaveLower(d4, r0, r1), hi = hn::InterleaveUpper(d4, r0, r1);  // a0 b0 a1 b1, a2 b2 a3 b3
  hn::StoreU(hn::LowerHalf(d2, lo), d2, dst);
  hn::StoreU(hn::UpperHalf(d2, lo), d2, dst + ld_dst);
  hn::StoreU(hn::LowerHalf(d2, hi), d2, dst + 2 * ld_dst);
  hn::StoreU(hn::UpperHalf(d2, hi), d2, dst + 3 * ld_dst);
}
#endif

// Packs `count` lines of a matrix view (line i, depth p at src[i·ls + p·ps]; one of the strides
// is 1) into W-wide panels: panel q holds, for each p < kc, the W values of lines q·W .. q·W+W-1,
// zero-padded past `count`. A's panels are its rows (W = kMR), B's its columns (W = kNR).
template <int64_t W>
void PackPanels(const float* src, int64_t ls, int64_t ps, int64_t count, int64_t kc, float* dst) {
  const int64_t panels = (count + W - 1) / W;
  if (ls == 1) {  // lines are contiguous: W values from each row, one panel after another
    for (int64_t q = 0; q < panels; ++q) {
      float* out = dst + q * kc * W;
      const float* col = src + q * W;
      const int64_t n = std::min(W, count - q * W);
      if (n == W) {
        for (int64_t p = 0; p < kc; ++p) std::memcpy(out + p * W, col + p * ps, sizeof(float) * W);
      } else {
        for (int64_t p = 0; p < kc; ++p) {
          for (int64_t j = 0; j < n; ++j) out[p * W + j] = col[p * ps + j];
          for (int64_t j = n; j < W; ++j) out[p * W + j] = 0.f;
        }
      }
    }
    return;
  }
  for (int64_t q = 0; q < panels; ++q) {  // depth is contiguous: a transpose into the panel
    float* out = dst + q * kc * W;
    const int64_t n = std::min(W, count - q * W);
    int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR
    // Four lines at a time through 128-bit registers: a scalar loop stored one float per cycle,
    // and packing then cost a quarter of the multiply on AVX-512 (W3 perf).
    if (ps == 1) {
      for (; j + 4 <= n; j += 4) {
        const float* line = src + (q * W + j) * ls;
        int64_t p = 0;
        for (; p + 4 <= kc; p += 4) Transpose4x4(line + p, ls, out + p * W + j, W);
        for (; p < kc; ++p)
          for (int64_t r = 0; r < 4; ++r) out[p * W + j + r] = line[r * ls + p];
      }
      for (; j + 2 <= n; j += 2) {
        const float* line = src + (q * W + j) * ls;
        int64_t p = 0;
        for (; p + 4 <= kc; p += 4) Transpose2x4(line + p, ls, out + p * W + j, W);
        for (; p < kc; ++p) out[p * W + j] = line[p], out[p * W + j + 1] = line[ls + p];
      }
    }
#endif
    for (; j < n; ++j) {
      const float* line = src + (q * W + j) * ls;
      for (int64_t p = 0; p < kc; ++p) out[p * W + j] = line[p * ps];
    }
    for (; j < W; ++j)
      for (int64_t p = 0; p < kc; ++p) out[p * W + j] = 0.f;
  }
}

// op(A), rows [m0, m0 + mc) × depth [p0, p0 + kc), as kMR-row panels: a transposed A always, one
// whose rows run along the depth only where Note [A read in place] says.
void PackA(const GemmArgs& g, int64_t m0, int64_t mc, int64_t p0, int64_t kc, float* dst) {
  if (g.trans_a) PackPanels<kMR>(g.a + p0 * g.lda + m0, 1, g.lda, mc, kc, dst);
  else PackPanels<kMR>(g.a + m0 * g.lda + p0, g.lda, 1, mc, kc, dst);
}

// out[i] = typed element e + i as f32 (gemm_simd.h, convertRun).
void ConvertRun(const std::byte* base, DType dtype, int64_t e, int64_t n, float* HWY_RESTRICT out) {
  [[maybe_unused]] const D d;  // unused by the scalar target
  [[maybe_unused]] constexpr int64_t N = kLanes;
  int64_t i = 0;
  if (dtype == DType::f16 || dtype == DType::bf16) {
    const uint16_t* src = reinterpret_cast<const uint16_t*>(base) + e;
#if HWY_TARGET != HWY_SCALAR
    if (dtype == DType::f16) {
      const hn::Rebind<hwy::float16_t, D> dh;
      const auto* h = reinterpret_cast<const hwy::float16_t*>(src);
      for (; i + N <= n; i += N) hn::StoreU(hn::PromoteTo(d, hn::LoadU(dh, h + i)), d, out + i);
    } else {  // bf16 is the high half of an f32
      const hn::Rebind<uint16_t, D> du16;
      const hn::RebindToUnsigned<D> du32;
      for (; i + N <= n; i += N)
        hn::StoreU(hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, src + i)))), d, out + i);
    }
#endif
    for (; i < n; ++i) out[i] = dtype == DType::f16 ? f16ToF32(src[i]) : bf16ToF32(src[i]);
    return;
  }
  // q8_0: the run crosses blocks; each block's values times its scale.
  while (i < n) {
    const int64_t at = e + i, in_block = at % q8::kBlock;
    const std::byte* block = q8::blockOf(base, at);
    const float scale = q8::scaleOf(block);
    const int8_t* q = q8::valuesOf(block) + in_block;
    const int64_t len = std::min(q8::kBlock - in_block, n - i);
    int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR
    const hn::Rebind<int8_t, D> di8;
    const hn::Rebind<int32_t, D> di32;
    const V vs = hn::Set(d, scale);
    for (; j + N <= len; j += N)
      hn::StoreU(hn::Mul(hn::ConvertTo(d, hn::PromoteTo(di32, hn::LoadU(di8, q + j))), vs), d, out + i + j);
#endif
    for (; j < len; ++j) out[i + j] = scale * static_cast<float>(q[j]);
    i += len;
  }
}

// op(B)[p0 : p0+kc, n0 : n0+nc] as kNR-column panels (op(B)(p, j) = b[p·ldb + j], or b[j·ldb + p]).
// A typed B is converted to f32 one run at a time into a kc×nc block first (its runs are along
// the unit-stride side, so each is one contiguous conversion), then packed like an f32 one.
void PackB(const GemmArgs& g, int64_t p0, int64_t kc, int64_t n0, int64_t nc, float* dst) {
  if (g.b_dtype == DType::f32) {
    if (g.trans_b) PackPanels<kNR>(g.b + n0 * g.ldb + p0, g.ldb, 1, nc, kc, dst);
    else PackPanels<kNR>(g.b + p0 * g.ldb + n0, 1, g.ldb, nc, kc, dst);
    return;
  }
  float* block = scratch(2, static_cast<size_t>(kc * nc));
  if (g.trans_b) {
    for (int64_t j = 0; j < nc; ++j)
      ConvertRun(g.b_base, g.b_dtype, g.b_offset + (n0 + j) * g.ldb + p0, kc, block + j * kc);
    PackPanels<kNR>(block, kc, 1, nc, kc, dst);
  } else {
    for (int64_t p = 0; p < kc; ++p)
      ConvertRun(g.b_base, g.b_dtype, g.b_offset + (p0 + p) * g.ldb + n0, nc, block + p * nc);
    PackPanels<kNR>(block, 1, nc, nc, kc, dst);
  }
}

// C's rows [i0, i0 + rows) × columns [j0, j0 + cols) = the bias (or 0): a product with no terms.
void FillRows(const GemmArgs& g, int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
  for (int64_t i = i0; i < i0 + rows; ++i) {
    float* ci = g.c + i * g.ldc + j0;
    if (g.bias) std::memcpy(ci, g.bias + j0, sizeof(float) * static_cast<size_t>(cols));
    else std::memset(ci, 0, sizeof(float) * static_cast<size_t>(cols));
  }
}

void GemmBlock(const GemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  if (m0 >= m1 || n0 >= n1) return;
  if (g.k == 0) {  // no products: C = bias (or 0), or C unchanged when accumulating
    if (!g.accumulate) FillRows(g, m0, m1 - m0, n0, n1 - n0);
    return;
  }
  const int64_t slice = sliceDepth(g.k);
  const bool packs_a = !g.a_packed && (g.trans_a || n1 - n0 >= kPackAFromCols);  // Note [A read in place]
  float* const own_pa = packs_a ? scratch(0, static_cast<size_t>(roundUp(std::min(kMC, m1 - m0), kMR) * slice)) : nullptr;
  const int64_t mpad = roundUp(g.m, kMR);
  float* const own_pb = g.b_packed ? nullptr : scratch(1, static_cast<size_t>(roundUp(std::min(kNC, n1 - n0), kNR) * slice));
  const int64_t npad = roundUp(g.n, kNR);
  for (int64_t jc = n0; jc < n1; jc += kNC) {
    const int64_t nc = std::min(kNC, n1 - jc);
    const bool direct_a = !g.a_packed && !g.trans_a && nc < kPackAFromCols;
    for (int64_t pc = 0; pc < g.k; pc += slice) {
      const int64_t kc = std::min(slice, g.k - pc);
      const bool overwrite = pc == 0 && !g.accumulate;
      // The panels this thread packed last, reused when the same product asks for them again.
      thread_local struct {
        uint64_t product = 0;
        const float* at = nullptr;
        int64_t jc = 0, nc = 0, pc = 0, kc = 0;
      } packed;
      const float* pb = own_pb;
      if (g.b_packed) {
        pb = g.b_packed + pc * npad + jc * kc;  // Note [Packed B]
      } else if (g.product_id == 0 || packed.product != g.product_id || packed.at != pb || packed.jc != jc ||
                 packed.nc != nc || packed.pc != pc || packed.kc != kc) {
        PackB(g, pc, kc, jc, nc, own_pb);
        packed = {g.product_id, pb, jc, nc, pc, kc};
      }
      for (int64_t ic = m0; ic < m1; ic += kMC) {
        const int64_t mc = std::min(kMC, m1 - ic);
        const float* pa = own_pa;
        if (g.a_packed) pa = g.a_packed + pc * mpad + ic * kc;  // Note [Packed A]
        else if (!direct_a) PackA(g, ic, mc, pc, kc, own_pa);
        const float* bias = g.bias ? g.bias + jc : nullptr;
        if (const int64_t rows = ShortRows(mc); rows > 0 && g.band.kind == Band::kFull) {  // Note [Short tiles]
          float* c = g.c + ic * g.ldc + jc;
          if (direct_a) ShortBlock<true>(rows, kc, g.a + ic * g.lda + pc, g.lda, pb, c, g.ldc, mc, nc, overwrite, bias);
          else ShortBlock<false>(rows, kc, pa, 0, pb, c, g.ldc, mc, nc, overwrite, bias);
          continue;
        }
        // The block's last rows, when fewer than a tile, run as short tiles too (Note [Short tiles]).
        const int64_t tail = mc % kMR;
        const int64_t tail_rows = tail > 0 && g.band.kind == Band::kFull ? ShortRows(tail) : 0;
        const int64_t tiled = tail_rows > 0 ? mc - tail : mc;
        for (int64_t jr = 0; jr < nc; jr += kNR) {
          if constexpr (kEdgeByRows) {  // Note [Edge columns]
            if (const int64_t cols = nc - jr; cols <= kEdgeMaxCols && !direct_a && g.band.kind == Band::kFull) {
              float* c = g.c + ic * g.ldc + jc + jr;
              const float* edge_bias = bias ? bias + jr : nullptr;
              if (cols == 1) EdgeColumns<1>(kc, pa, pb + jr * kc, c, g.ldc, tiled, overwrite, edge_bias);
              else EdgeColumns<2>(kc, pa, pb + jr * kc, c, g.ldc, tiled, overwrite, edge_bias);
              continue;
            }
          }
          for (int64_t ir = 0; ir < tiled; ir += kMR) {
            const int64_t mr = std::min(kMR, mc - ir), nr = std::min(kNR, nc - jr);
            float* c = g.c + (ic + ir) * g.ldc + jc + jr;
            // This row tile's depth range within the slice [pc, pc + kc) (gemm.h, GemmBand).
            const int64_t first_row = ic + ir, last_row = first_row + mr - 1, shift = g.band.shift;
            int64_t p0 = 0, p1 = kc;
            switch (g.band.kind) {
              case Band::kFull: break;
              case Band::kOutputLower:
                if (jc + jr > last_row + shift) continue;
                break;
              case Band::kALower: p1 = std::clamp<int64_t>(last_row + shift + 1 - pc, 0, kc); break;
              case Band::kAUpper: p0 = std::clamp<int64_t>(first_row - shift - pc, 0, kc); break;
            }
            if (p0 >= p1) {  // the tile's products in this slice are all zero
              if (overwrite) FillRows(g, ic + ir, mr, jc + jr, nr);
              continue;
            }
            const float* tile_bias = bias ? bias + jr : nullptr;
            if (direct_a)
              MicroKernel<true>(p1 - p0, g.a + (ic + ir) * g.lda + pc + p0, g.lda, pb + jr * kc + p0 * kNR, 0, c,
                                g.ldc, mr, nr, overwrite, tile_bias);
            else
              MicroKernel<false>(p1 - p0, pa + ir * kc + p0 * kMR, 0, pb + jr * kc + p0 * kNR, 0, c, g.ldc, mr, nr,
                                 overwrite, tile_bias);
          }
        }
        if (tail_rows > 0) {
          float* c = g.c + (ic + tiled) * g.ldc + jc;
          const float* a = direct_a ? g.a + (ic + tiled) * g.lda + pc : pa + tiled * kc;
          if (direct_a) ShortBlock<true>(tail_rows, kc, a, g.lda, pb, c, g.ldc, tail, nc, overwrite, bias);
          else ShortBlock<false>(tail_rows, kc, a, 0, pb, c, g.ldc, tail, nc, overwrite, bias);
        }
      }
    }
  }
}

// Note [Packed A]: every slice's panels of all m rows, as GemmBlock's PackA lays out a block.
void PackAWhole(bool trans_a, int64_t m, int64_t k, const float* a, int64_t lda, float* dst) {
  const int64_t slice = sliceDepth(k), mpad = roundUp(m, kMR);
  for (int64_t pc = 0; pc < k; pc += slice) {
    const int64_t kc = std::min(slice, k - pc);
    if (trans_a) PackPanels<kMR>(a + pc * lda, 1, lda, m, kc, dst + pc * mpad);
    else PackPanels<kMR>(a + pc, lda, 1, m, kc, dst + pc * mpad);
  }
}

// Note [Packed B]: columns [n0, n1) of the slice at pc, block by block as GemmBlock packs them.
void PackBSlice(const GemmArgs& g, int64_t pc, int64_t kc, int64_t n0, int64_t n1, float* dst) {
  const int64_t npad = roundUp(g.n, kNR);
  for (int64_t jc = n0; jc < n1; jc += kNC) PackB(g, pc, kc, jc, std::min(kNC, n1 - jc), dst + pc * npad + jc * kc);
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }
int64_t TileRows() { return kMR; }
int64_t BlockCols() { return kNC; }
int64_t PanelCols() { return kNR; }

}  // namespace HWY_NAMESPACE
}  // namespace fucina::kernels::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fucina::kernels::detail {

HWY_EXPORT(GemmBlock);
HWY_EXPORT(ConvertRun);
HWY_EXPORT(TargetName);
HWY_EXPORT(TileRows);
HWY_EXPORT(BlockCols);
HWY_EXPORT(PanelCols);
HWY_EXPORT(PackBSlice);
HWY_EXPORT(PackAWhole);

void gemmBlock(const GemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  HWY_DYNAMIC_DISPATCH(GemmBlock)(g, m0, m1, n0, n1);
}

void convertRun(const std::byte* base, DType dtype, int64_t e, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(ConvertRun)(base, dtype, e, n, out);
}

const char* gemmTargetName() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

int64_t gemmTileRows() { return HWY_DYNAMIC_DISPATCH(TileRows)(); }
int64_t gemmBlockCols() { return HWY_DYNAMIC_DISPATCH(BlockCols)(); }
int64_t gemmPanelCols() { return HWY_DYNAMIC_DISPATCH(PanelCols)(); }
int64_t packedBFloats(int64_t k, int64_t n) {
  const int64_t nr = gemmPanelCols();
  return k * ((n + nr - 1) / nr * nr);
}
void packBSlice(const GemmArgs& g, int64_t pc, int64_t kc, int64_t n0, int64_t n1, float* dst) {
  HWY_DYNAMIC_DISPATCH(PackBSlice)(g, pc, kc, n0, n1, dst);
}
int64_t packedAFloats(int64_t m, int64_t k) {
  const int64_t mr = gemmTileRows();
  return (m + mr - 1) / mr * mr * k;
}
void packA(bool trans_a, int64_t m, int64_t k, const float* a, int64_t lda, float* dst) {
  if (m > 0 && k > 0) HWY_DYNAMIC_DISPATCH(PackAWhole)(trans_a, m, k, a, lda, dst);
}

}  // namespace fucina::kernels::detail
#endif  // HWY_ONCE
