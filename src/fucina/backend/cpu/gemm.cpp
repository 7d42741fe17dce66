#include "fucina/backend/cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "fucina/core/error.h"
#include "fucina/exec/claims.h"
#include "fucina/exec/context.h"
#include "fucina/exec/trace.h"
#include "fucina/backend/cpu/copy.h"
#include "fucina/backend/cpu/gemm_simd.h"

namespace fucina::kernels {

using internal::RawTensor;

void gemmRef(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  if (!accumulate)
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.f);
  constexpr int64_t kBlock = 256;  // keeps a slab of B in cache while rows of A stream past
  for (int64_t k0 = 0; k0 < k; k0 += kBlock) {
    const int64_t k1 = std::min(k, k0 + kBlock);
    for (int64_t i = 0; i < m; ++i) {
      float* ci = c + i * ldc;
      for (int64_t p = k0; p < k1; ++p) {
        const float av = trans_a ? a[p * lda + i] : a[i * lda + p];
        if (trans_b) {
          for (int64_t j = 0; j < n; ++j) ci[j] += av * b[j * ldb + p];
        } else {
          const float* bp = b + p * ldb;
          for (int64_t j = 0; j < n; ++j) ci[j] += av * bp[j];
        }
      }
    }
  }
}

void gemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
                GemmBand band) {
  const detail::GemmArgs g{trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate, band};
  detail::gemmBlock(g, 0, m, 0, n);
}

int64_t packedLhsFloats(int64_t m, int64_t k) { return detail::packedAFloats(m, k); }
void packLhs(bool trans_a, int64_t m, int64_t k, const float* a, int64_t lda, float* dst) {
  detail::packA(trans_a, m, k, a, lda, dst);
}
void gemmSerialPackedLhs(bool trans_b, int64_t m, int64_t n, int64_t k, const float* packed_a, const float* b,
                         int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  detail::GemmArgs g{false, trans_b, m, n, k, nullptr, 0, b, ldb, c, ldc, accumulate};
  g.a_packed = packed_a;
  detail::gemmBlock(g, 0, m, 0, n);
}

// Note [Split the depth]: a deep product into a small C (a weight gradient Xᵀ·dY: C 128×384,
// depth 2048 tokens) scaled 1.25–1.46× on 2 threads when C was cut in two, because each piece
// packs all of the operand it does not cut, and here that packing is a large share of the work.
// Such products are computed as two halves of the depth instead, the first into C and the second
// into a scratch C added afterwards, so each piece packs only its half of both operands. The
// choice depends on the shape alone, never on the thread count, so a result is the same to the
// bit on any number of threads.
//
// Note [Weight gradients by rows]: a product with a transposed A (a weight gradient dYᵀ·X, C of
// shape {out, in}) packs A whichever way C is cut, so cutting C's rows costs little more packing
// than cutting its longer side, and it gives each thread whole rows of C to write: cut by
// columns, the two threads write halves of the same rows, which these machines make costly
// ("Few depth slices" in the design notes). W1's 512×784 weight gradient on 2 threads: 391 →
// 344 µs per step. Rows are cut at the target's MR, so 256 rows split 128/128, not 120/136.
//
// Note [Claimed GEMM pieces]: the two halves of a static cut end unequally: one vCPU runs a few %
// slower than the other for minutes at a time, and in wasm either thread at times loses a
// quarter of a region (design notes, "Threads: static chunks"). So where a piece costs no more
// packing than the whole, the units are handed out by OwnerFirstClaims (exec/claims.h): each
// thread works through its own half as before and a thread done early takes the other's last
// units. That holds for column cuts with A read in place (each piece packs only its columns of
// B), and for row cuts whose B is one packed block (depth ≤ kKC, n ≤ NC): a thread packs it once
// and reuses it for every block of rows it claims (GemmArgs::product_id). Every unit is computed
// whole by one thread with the same code, so results do not depend on who claimed it.
namespace {
bool claimable(bool by_rows, bool trans_a, int64_t halves, int64_t n, int64_t k) {
  if (halves != 1) return false;
  if (!by_rows) return !trans_a;
  return k <= detail::kKC && n <= detail::gemmBlockCols();
}

constexpr int64_t kDepthSplitMin = 1024, kDepthSplitMaxC = int64_t{1} << 17;
bool splitsDepth(int64_t m, int64_t n, int64_t k) {
  return k >= kDepthSplitMin && k >= 2 * std::max(m, n) && m * n <= kDepthSplitMaxC;
}
}  // namespace

namespace {
// Both gemm overloads, gemmPacked and gemmPackedLhs: b for an f32 B, typed.base for a typed one,
// packed for one packed whole (Note [Packed B]); a_packed for an A packed whole (Note [Packed A]).
void gemmAny(ExecContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
             const float* a, int64_t lda, const float* b, const TypedB& typed, int64_t ldb, float* c,
             int64_t ldc, bool accumulate, const float* bias, const float* packed = nullptr,
             const float* a_packed = nullptr) {
  if (m <= 0 || n <= 0) return;
  FUCINA_TRACE_TEXT(trace::Kind::kGemm, m, n,
                    ("k=" + std::to_string(k) + " ta=" + std::to_string(trans_a) + " tb=" + std::to_string(trans_b)).c_str());
  FUCINA_TRACE_END_OF_SCOPE(trace::Kind::kGemmEnd);
  if (bias && accumulate) fail(ErrorCode::InvalidArgument, "gemm: a bias is added only when not accumulating");
  // Pieces are whole tiles (MR rows of the target; 32 columns, a multiple of every NR), and each
  // thread gets at least kMinWork multiply-adds, so small products stay on the calling thread.
  constexpr int64_t kColUnit = 32;
  const int64_t row_unit = detail::gemmTileRows();
  // Note [Threads for a few rows]: a product of fewer rows than a tile (one token through a
  // layer) reads each element of B once for few multiply-adds, so its time is reading B, and
  // two threads each reading half of B pay at an eighth of the work (GPT-2's 768x3072 MLP for
  // one token: 0.11 -> 0.06 ms). Column pieces compute every element whole: the same bits.
  const int64_t kMinWork = m < row_unit ? int64_t{1} << 18 : int64_t{1} << 21;
  const int64_t depth = std::max<int64_t>(k, 1);
  // C is cut into `units` pieces along its longer side, or by rows when A is transposed (Note
  // [Weight gradients by rows]); each of `halves` depth ranges is cut so.
  const bool by_rows = m >= n || (trans_a && m >= 2 * row_unit);
  const int64_t unit = by_rows ? row_unit : kColUnit;
  const int64_t units = ((by_rows ? m : n) + unit - 1) / unit;
  // A packed operand holds the slices of the whole depth: its products are not split (Note [Packed B]).
  const int64_t halves = !packed && !a_packed && splitsDepth(m, n, k) ? 2 : 1;
  const int64_t k_split = halves == 2 ? k / 2 / 8 * 8 : k;  // each half then slices by its own depth
  thread_local std::vector<float> scratch;  // the caller's; only grows: no steady-state allocation
  if (halves == 2 && scratch.size() < static_cast<size_t>(m * n)) scratch.resize(static_cast<size_t>(m * n));
  float* const second_half = scratch.data();  // by pointer: workers' `scratch` is their own
  auto piece = [&](int64_t half, int64_t u0, int64_t u1, uint64_t product_id = 0) {
    const int64_t k0 = half == 0 ? 0 : k_split, kk = half == 0 ? k_split : k - k_split;
    const int64_t b_skip = trans_b ? k0 : k0 * ldb;  // B's first element of this half
    const detail::GemmArgs g{trans_a, trans_b, m, n, kk,
                             a + (trans_a ? k0 * lda : k0), lda, typed.dtype == DType::f32 ? b + b_skip : nullptr, ldb,
                             half == 0 ? c : second_half, half == 0 ? ldc : n,
                             half == 0 && accumulate, {}, half == 0 ? bias : nullptr, product_id,
                             typed.dtype, typed.base, typed.offset + b_skip, packed, a_packed};
    const int64_t lo = u0 * unit, hi = std::min(by_rows ? m : n, u1 * unit);
    if (by_rows) detail::gemmBlock(g, lo, hi, 0, n);
    else detail::gemmBlock(g, 0, m, lo, hi);
  };
  const int64_t pieces = halves * units;
  if (ctx.threads() <= 1 || m * n * depth < 2 * kMinWork) {
    for (int64_t h = 0; h < halves; ++h) piece(h, 0, units);
  } else {
    const int64_t grain = std::max<int64_t>(1, kMinWork / (unit * (by_rows ? n : m) * (depth / halves)));
    if (claimable(by_rows, trans_a, halves, n, k)) {  // Note [Claimed GEMM pieces]
      static std::atomic<uint64_t> products{0};
      const uint64_t id = products.fetch_add(1, std::memory_order_relaxed) + 1;
      // At most one thread per grain of work, as parallelFor would use.
      claimedFor(ctx, units, pieces / grain, [&](int64_t u0, int64_t u1) { piece(0, u0, u1, id); });
      return;
    }
    ctx.parallelFor(pieces, grain, [&](int64_t begin, int64_t end) {
      for (int64_t h = begin / units; h * units < end; ++h)  // each half's run of the pieces
        piece(h, std::max(begin - h * units, int64_t{0}), std::min(end - h * units, units));
    });
  }
  if (halves == 1) return;
  ctx.parallelFor(m, std::max<int64_t>(1, (int64_t{16} << 10) / n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float* ci = c + i * ldc;
      const float* si = second_half + i * n;
      for (int64_t j = 0; j < n; ++j) ci[j] += si[j];
    }
  });
}
}  // namespace

void gemm(ExecContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
          bool accumulate, const float* bias) {
  gemmAny(ctx, trans_a, trans_b, m, n, k, a, lda, b, TypedB{}, ldb, c, ldc, accumulate, bias);
}

void gemm(ExecContext& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
          const float* a, int64_t lda, const TypedB& b, int64_t ldb, float* c, int64_t ldc,
          bool accumulate, const float* bias) {
  if (b.dtype != DType::f16 && b.dtype != DType::bf16 && b.dtype != DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "gemm: a typed right operand is f16, bf16 or q8_0, not " +
                                       std::string(name(b.dtype)));
  gemmAny(ctx, trans_a, trans_b, m, n, k, a, lda, nullptr, b, ldb, c, ldc, accumulate, bias);
}

int64_t packedRhsFloats(int64_t k, int64_t n) { return detail::packedBFloats(k, n); }

void packRhs(ExecContext& ctx, bool trans_b, int64_t k, int64_t n, const float* b, const TypedB& typed,
             int64_t ldb, float* dst) {
  if (k <= 0 || n <= 0) return;
  const detail::GemmArgs g{false, trans_b, 0, n, k, nullptr, 0, typed.dtype == DType::f32 ? b : nullptr, ldb,
                           nullptr, 0, false, {}, nullptr, 0, typed.dtype, typed.base, typed.offset};
  // Pieces: one depth slice × kColUnit-aligned column ranges, each written by one thread.
  const int64_t slice = detail::sliceDepth(k), slices = (k + slice - 1) / slice;
  const int64_t cols = detail::gemmBlockCols(), col_blocks = (n + cols - 1) / cols;
  ctx.parallelFor(slices * col_blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t pc = u / col_blocks * slice, n0 = u % col_blocks * cols;
      detail::packBSlice(g, pc, std::min(slice, k - pc), n0, std::min(n, n0 + cols), dst);
    }
  });
}

void gemmPacked(ExecContext& ctx, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                const float* packed, float* c, int64_t ldc, const float* bias) {
  gemmAny(ctx, false, false, m, n, k, a, lda, nullptr, TypedB{}, 0, c, ldc, false, bias, packed);
}

void gemmPackedLhs(ExecContext& ctx, bool trans_b, int64_t m, int64_t n, int64_t k, const float* packed_a,
                   const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  gemmAny(ctx, false, trans_b, m, n, k, nullptr, 0, b, TypedB{}, ldb, c, ldc, accumulate, nullptr, nullptr, packed_a);
}

namespace {

// Gathers the extents of `tags` in t, and their product.
int64_t productOf(const RawTensor& t, const Tags& tags, Extents* extents) {
  int64_t p = 1;
  for (Tag tag : tags) {
    const int64_t e = t.extent(tag);
    if (extents) extents->push_back(e);
    p *= e;
  }
  return p;
}

// Stride of a group of axes folded into one (axes in memory-nesting order), kAnyStride when the
// group has no axis longer than 1, kNoFold when the group is not one strided run.
constexpr int64_t kAnyStride = INT64_MIN, kNoFold = INT64_MIN + 1;
int64_t foldedStride(const RawTensor& t, const Tags& group) {
  int64_t stride = kAnyStride, next = 0;
  for (auto it = group.rbegin(); it != group.rend(); ++it) {
    const int64_t e = t.extent(*it);
    if (e == 1) continue;
    const int64_t s = t.strides()[t.axis(*it)];
    if (stride == kAnyStride) stride = s;
    else if (s != next) return kNoFold;
    next = s * e;
  }
  return stride;
}

// An operand seen as a batch of rows × cols matrices for gemm: a view of its own storage when
// each group folds into one stride and one group has unit stride (a transposed operand becomes
// trans = true), else a contiguous copy laid out [batch, rows, cols].
struct MatrixOperand {
  RawTensor storage;  // the tensor data points into (the copy, when one was made)
  const float* data = nullptr;
  TypedB typed;  // an f16, bf16 or q8_0 operand read in place (B only): data is then null
  int64_t ld = 0;
  bool trans = false;
  std::vector<int64_t> batch_offsets;  // row-major over the batch axes
};

MatrixOperand asMatrices(ExecContext& ctx, const RawTensor& t, const Tags& batch, const Tags& rows,
                         const Tags& cols) {
  MatrixOperand op;
  op.storage = t;
  const int64_t rs = foldedStride(t, rows), cs = foldedStride(t, cols);
  const int64_t ncols = productOf(t, cols, nullptr);
  if (rs != kNoFold && (cs == kAnyStride || cs == 1)) {
    op.ld = rs == kAnyStride ? ncols : rs;
  } else if (cs != kNoFold && rs == 1) {
    op.trans = true;
    op.ld = cs;
  } else {
    // A typed operand whose layout does not fold is the rare case that is converted whole.
    const RawTensor ordered = t.permuted(joinTags({batch, rows, cols}));
    op.storage = t.dtype() == DType::f32 ? ordered.contiguous(ctx) : ordered.to(ctx, DType::f32);
    op.ld = ncols;
  }
  if (op.storage.dtype() == DType::f32) op.data = op.storage.f32();
  else op.typed = TypedB{op.storage.storage()->data(), op.storage.dtype(), op.storage.offset()};
  op.batch_offsets = op.storage.offsetsOver(batch);
  return op;
}

}  // namespace

ContractionAxes contractionAxes(const RawTensor& a, const RawTensor& b, const Tags& contracted) {
  ContractionAxes axes;
  for (Tag tag : contracted) {
    if (a.extent(tag) != b.extent(tag))
      fail(ErrorCode::ShapeMismatch, "dot over '" + std::string(tag.name()) + "': extent " +
                                         std::to_string(a.extent(tag)) + " in " + a.describe() +
                                         " but " + std::to_string(b.extent(tag)) + " in " +
                                         b.describe());
  }
  for (Tag tag : a.tags()) {
    if (hasTag(contracted, tag)) continue;
    if (hasTag(b.tags(), tag)) {
      if (a.extent(tag) != b.extent(tag))
        fail(ErrorCode::ShapeMismatch, "dot: batch axis '" + std::string(tag.name()) +
                                           "' has extent " + std::to_string(a.extent(tag)) +
                                           " in " + a.describe() + " but " +
                                           std::to_string(b.extent(tag)) + " in " + b.describe());
      axes.batch.push_back(tag);
    } else {
      axes.a_free.push_back(tag);
    }
  }
  for (Tag tag : b.tags())
    if (!hasTag(contracted, tag) && !hasTag(a.tags(), tag)) axes.b_free.push_back(tag);
  return axes;
}

RawTensor inResultOrder(ExecContext& ctx, const RawTensor& computed, const RawTensor& a,
                        const Tags& contracted, const Tags& b_free) {
  // Result order: a's remaining axes (batch and free, as they stand in a), then b_free.
  Tags order;
  for (Tag tag : a.tags())
    if (!hasTag(contracted, tag)) order.push_back(tag);
  order.insert(order.end(), b_free.begin(), b_free.end());
  if (order == computed.tags()) return computed;
  return computed.permuted(order).contiguous(ctx);
}

RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b,
                   const Tags& contracted, const RawTensor& initial) {
  // References, not structured bindings: Emscripten's clang cannot capture those in lambdas.
  const ContractionAxes axes = contractionAxes(a, b, contracted);
  const Tags &batch = axes.batch, &a_free = axes.a_free, &b_free = axes.b_free;
  Extents batch_shape, m_shape, n_shape;
  const int64_t nb = productOf(a, batch, &batch_shape);
  const int64_t m = productOf(a, a_free, &m_shape);
  const int64_t n = productOf(b, b_free, &n_shape);
  const int64_t k = productOf(a, contracted, nullptr);

  // An operand with no elements may have no buffer (null data), and 2^40 along its other axes:
  // then no GEMM, no batch offsets and no pointer arithmetic on it (ops_fuzz: UBSan, and an 8 TiB
  // offset list). The product is the initial value alone, or zeros.
  const bool empty = k == 0 || nb == 0 || m == 0 || n == 0;
  // Both operands as [batch] matrices op(A)[m, k] and op(B)[k, n]; copies only when a group of
  // axes does not fold into one stride.
  const MatrixOperand ma = empty ? MatrixOperand{} : asMatrices(ctx, a, batch, a_free, contracted);
  const MatrixOperand mb = empty ? MatrixOperand{} : asMatrices(ctx, b, batch, contracted, b_free);
  Extents gemm_shape = batch_shape;
  gemm_shape.insert(gemm_shape.end(), m_shape.begin(), m_shape.end());
  gemm_shape.insert(gemm_shape.end(), n_shape.begin(), n_shape.end());
  const Tags gemm_tags = joinTags({batch, a_free, b_free});
  RawTensor out = RawTensor::empty(ctx, gemm_tags, gemm_shape, DType::f32);
  float* pc = out.f32();
  // An `initial` over b's free axes alone, stored in their order (a Linear's bias), is fused into
  // the GEMM's stores; any other is copied into the result first and the GEMM accumulates.
  const bool fused_bias = initial.valid() && initial.tags() == b_free && initial.shape() == n_shape &&
                          initial.isContiguous() && initial.dtype() == DType::f32;
  const bool accumulate = initial.valid() && !fused_bias;
  if (accumulate || (empty && initial.valid())) copyConvert(initial.broadcastView(gemm_tags, gemm_shape), out, &ctx);
  else if (empty) fill(out, 0.0, &ctx);
  if (!empty && !ma.data)
    fail(ErrorCode::DTypeMismatch, "contract: the left operand " + a.describe() + " must be f32, got " +
                                       std::string(name(a.dtype())));
  for (int64_t i = 0; !empty && i < nb; ++i) {
    const float* pa = ma.data + ma.batch_offsets[i];
    const float* bias = fused_bias ? initial.f32() : nullptr;
    if (mb.data) {
      gemm(ctx, ma.trans, mb.trans, m, n, k, pa, ma.ld, mb.data + mb.batch_offsets[i], mb.ld,
           pc + i * m * n, n, accumulate, bias);
    } else {
      TypedB tb = mb.typed;
      tb.offset += mb.batch_offsets[i];
      gemm(ctx, ma.trans, mb.trans, m, n, k, pa, ma.ld, tb, mb.ld, pc + i * m * n, n, accumulate, bias);
    }
  }

  return inResultOrder(ctx, out, a, contracted, b_free);
}

}  // namespace fucina::kernels
