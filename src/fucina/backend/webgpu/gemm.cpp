// Contraction as a batched GEMM (Note [Tiled GEMM]). Each operand is read through its own strides
// (a group of axes that does not fold into one stride is copied contiguous first), and its tile is
// loaded along whichever of its two axes is contiguous, so neighbouring invocations read
// neighbouring words.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/tiled_gemm.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// A group of axes as one (extent, stride), when their strides nest.
struct Folded {
  int64_t extent = 1, stride = 0;
  bool ok = true;
};

Folded fold(const RawTensor& t, const Tags& group) {
  Folded f;
  for (Tag tag : group) {
    const size_t d = t.axis(tag);
    const int64_t e = t.shape()[d], s = t.strides()[d];
    if (e == 1) continue;
    if (f.extent == 1) f = {e, s, true};
    else if (f.stride == s * e) f = {f.extent * e, s, true};
    else return {0, 0, false};
  }
  return f;
}

// An operand as [z] matrices over (rows, cols): the three groups folded, copying t contiguous in
// that order when one does not fold.
struct Matrices {
  RawTensor t;
  Folded z, rows, cols;
};

Matrices asMatrices(ExecContext& ctx, const RawTensor& t, const Tags& z, const Tags& rows, const Tags& cols) {
  Matrices m{t, fold(t, z), fold(t, rows), fold(t, cols)};
  if (m.z.ok && m.rows.ok && m.cols.ok) return m;
  Tags order = z;
  order.insert(order.end(), rows.begin(), rows.end());
  order.insert(order.end(), cols.begin(), cols.end());
  const RawTensor c = t.permuted(order).contiguous(ctx);
  return {c, fold(c, z), fold(c, rows), fold(c, cols)};
}

// How a folded operand's tiles load (Note [Tiled GEMM]): four k at a time when its rows are
// contiguous along k and every row starts at a multiple of four floats.
TileLoad loadOf(const Matrices& m, int64_t k) {
  if (m.cols.stride != 1) return TileLoad::along_rows;
  if (m.t.dtype() != DType::f32) return TileLoad::along_depth;  // read element by element
  const bool aligned = k % 4 == 0 && m.t.offset() % 4 == 0 && m.z.stride % 4 == 0 && m.rows.stride % 4 == 0;
  return aligned ? TileLoad::quads : TileLoad::along_depth;
}

// A[b][m][k] and B[b][k][n] through each operand's offset and strides (words from kGemmWord on);
// C[b][m][n] at offset + b·(batch stride) + m·(row stride) + n (words kGemmWord + 9..11: a block
// of C, Note [Bound in pieces]), added to when word kGemmWord + 8 is set. B of f16, bf16 or q8_0 is read in
// place, each element converted (a q8_0 one dequantized) as the tile is loaded.
std::string contractSource(TileLoad a, TileLoad b, DType b_dtype) {
  auto word = [](int k) { return "ui(" + std::to_string(kGemmWord + k) + "u)"; };
  auto operand = [&](int binding, const char* fn, const char* buf, int w, TileLoad how) {
    const std::string at = word(w) + " + " + word(w + 1) + " * i32(b) + i32(r) * " + word(w + 2);
    if (how == TileLoad::quads)  // k and every term above are multiples of 4
      return readBinding(binding, buf, "vec4<f32>") + "fn " + fn + "4(b: u32, r: u32, k: u32) -> vec4<f32> { return " +
             buf + "[u32(" + at + " + i32(k)) / 4u]; }\n";
    const std::string e = "u32(" + at + " + i32(k) * " + word(w + 3) + ")";
    if (binding == 1 && b_dtype != DType::f32)
      return readBinding(binding, buf, "u32") + kHalves + elementReader(buf, b_dtype) + "fn " + fn +
             "(b: u32, r: u32, k: u32) -> f32 { return " + buf + "_at(" + e + "); }\n";
    return readBinding(binding, buf) + "fn " + fn + "(b: u32, r: u32, k: u32) -> f32 { return " + buf + "[" + e + "]; }\n";
  };
  const std::string operands =
      operand(0, "a_at", "lhs", 0, a) + operand(1, "b_at", "rhs", 4, b) + writeBinding(2, "c") +
      "fn store(b: u32, s: u32, m: u32, n: u32, v: f32) {\n"
      "  let o = u32(" + word(9) + " + " + word(11) + " * i32(b) + " + word(10) + " * i32(m) + i32(n));\n"
      "  if (" + word(8) + " != 0) { c[o] = c[o] + v; } else { c[o] = v; }\n"
      "}\n";
  return tiledGemmSource(operands, 3, a, b);
}

// A block of the product and how its operands are bound.
struct GemmBlock {
  GemmShape shape;
  int64_t k0 = 0;
  int64_t a_offset = 0, b_offset = 0, c_offset = 0;  // elements, before the windows' shifts
  std::array<Bound, 3> bound;
};

// The product in blocks whose operands' windows fit one binding: one block when every buffer
// fits; else a block side (batches, m or n, k) halved at a time, the one that widens the
// offending operand's span most, kept a multiple of the 64-wide tile while it is wider (k of 4:
// the quads' loads).
std::vector<GemmBlock> gemmBlocks(const Matrices& a, const Matrices& b, std::span<const uint32_t> buffers,
                                  const GemmShape& whole) {
  if (!overBinding(buffers)) return {GemmBlock{whole, 0, a.t.offset(), b.t.offset(), 0, {}}};
  struct Side {
    int64_t extent, block, step;
  };
  enum { Z, M, N, K };
  std::array<Side, 4> side{Side{whole.batches, whole.batches, 1}, Side{whole.m, whole.m, 1}, Side{whole.n, whole.n, 1},
                           Side{whole.k, whole.k, 4}};
  // Per operand: its sides and their strides, its dtype.
  const int64_t cz = whole.m * whole.n;
  struct Operand {
    std::array<int, 3> sides;
    std::array<int64_t, 3> strides;
    DType dtype;
  };
  const std::array<Operand, 3> ops{Operand{{Z, M, K}, {a.z.stride, a.rows.stride, a.cols.stride}, a.t.dtype()},
                                   Operand{{Z, N, K}, {b.z.stride, b.rows.stride, b.cols.stride}, b.t.dtype()},
                                   Operand{{Z, M, N}, {cz, whole.n, 1}, DType::f32}};
  auto reach = [&](const Operand& o, int j) { return std::abs(o.strides[j]) * (side[o.sides[j]].block - 1); };
  for (;;) {
    const Operand* wide = nullptr;
    for (const Operand& o : ops)
      if (!windowFits(o.dtype, reach(o, 0) + reach(o, 1) + reach(o, 2) + 1)) wide = &o;
    if (!wide) break;
    int best = -1;
    for (int j = 0; j < 3; ++j) {
      const Side& sd = side[wide->sides[j]];
      if (sd.block > sd.step && (best < 0 || reach(*wide, j) > reach(*wide, best))) best = j;
    }
    if (best < 0)
      unsupported("a product whose smallest block still spans more than one binding (" +
                  std::to_string(Gpu::get().bindingLimit()) + " bytes: Note [Bound in pieces])");
    Side& sd = side[wide->sides[best]];
    const int64_t half = (sd.block + 1) / 2, unit = half >= 64 ? 64 : sd.step;
    sd.block = std::max(sd.step, (half + unit - 1) / unit * unit);
  }
  std::vector<GemmBlock> blocks;
  for (int64_t z0 = 0; z0 < whole.batches; z0 += side[Z].block)
    for (int64_t m0 = 0; m0 < whole.m; m0 += side[M].block)
      for (int64_t n0 = 0; n0 < whole.n; n0 += side[N].block)
        for (int64_t k0 = 0; k0 < whole.k; k0 += side[K].block) {
          GemmBlock blk;
          blk.shape = {std::min(side[Z].block, whole.batches - z0), std::min(side[M].block, whole.m - m0),
                       std::min(side[N].block, whole.n - n0), std::min(side[K].block, whole.k - k0)};
          blk.k0 = k0;
          blk.a_offset = a.t.offset() + z0 * a.z.stride + m0 * a.rows.stride + k0 * a.cols.stride;
          blk.b_offset = b.t.offset() + z0 * b.z.stride + n0 * b.rows.stride + k0 * b.cols.stride;
          blk.c_offset = z0 * cz + m0 * whole.n + n0;
          const std::array<int64_t, 3> offsets{blk.a_offset, blk.b_offset, blk.c_offset};
          const std::array<int64_t, 4> extents{blk.shape.batches, blk.shape.m, blk.shape.n, blk.shape.k};
          for (size_t j = 0; j < 3; ++j) {
            const Operand& o = ops[j];
            const int64_t e[3] = {extents[o.sides[0]], extents[o.sides[1]], extents[o.sides[2]]};
            const Span sp = spanOf(offsets[j], e, o.strides);
            blk.bound[j] = bindRange(buffers[j], o.dtype, sp.lo, sp.hi);
            if (!blk.bound[j].fits) unsupported("a block of a product over one binding (Note [Bound in pieces])");
          }
          blocks.push_back(blk);
        }
  return blocks;
}

}  // namespace

RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted,
                   const RawTensor& initial) {
  const kernels::ContractionAxes axes = kernels::contractionAxes(a, b, contracted);
  requireF32(a, "contract");
  if (b.dtype() != DType::f32 && b.dtype() != DType::f16 && b.dtype() != DType::bf16 && b.dtype() != DType::q8_0)
    requireF32(b, "contract");
  Tags out_tags = axes.batch;
  out_tags.insert(out_tags.end(), axes.a_free.begin(), axes.a_free.end());
  out_tags.insert(out_tags.end(), axes.b_free.begin(), axes.b_free.end());
  Extents out_shape;
  for (Tag t : out_tags) out_shape.push_back(hasTag(a.tags(), t) ? a.extent(t) : b.extent(t));
  RawTensor out = RawTensor::empty(ctx, out_tags, out_shape);
  int64_t k = 1;
  for (Tag t : contracted) k *= a.extent(t);
  const bool accumulate = initial.valid();
  if (accumulate) copy(ctx, initial.broadcastView(out_tags, out_shape), out);
  if (out.numel() > 0 && k == 0 && !accumulate) fill(ctx, out, 0.0);
  if (out.numel() > 0 && k > 0) {
    const Matrices ma = asMatrices(ctx, a, axes.batch, axes.a_free, contracted);
    const Matrices mb = asMatrices(ctx, b, axes.batch, axes.b_free, contracted);
    const GemmShape whole{ma.z.extent, ma.rows.extent, mb.rows.extent, k};
    const uint32_t buffers[3] = {bufferOf(ma.t, "contract"), bufferOf(mb.t, "contract"), bufferOf(out, "contract")};
    const std::string source = contractSource(loadOf(ma, k), loadOf(mb, k), mb.t.dtype());
    // Note [Bound in pieces]: blocks of (batch, m, n, k), the whole product unless an operand's
    // buffer is over one binding; blocks past the first along k add to C.
    for (const GemmBlock& blk : gemmBlocks(ma, mb, buffers, whole)) {
      const std::array<Bound, 3> bound = blk.bound;
      Uniforms u;
      u.set(kGemmWord - 1, 0);
      u.i(blk.a_offset - bound[0].shift).i(ma.z.stride).i(ma.rows.stride).i(ma.cols.stride);
      u.i(blk.b_offset - bound[1].shift).i(mb.z.stride).i(mb.rows.stride).i(mb.cols.stride);
      u.u(accumulate || blk.k0 > 0 ? 1 : 0);
      u.i(blk.c_offset - bound[2].shift).i(whole.n).i(whole.m * whole.n);
      const Window windows[3] = {bound[0].window, bound[1].window, bound[2].window};
      const bool windowed = windows[0].size || windows[1].size || windows[2].size;
      dispatchGemm(source, buffers, u, blk.shape, "contract", windowed ? windows : std::span<const Window>{});
    }
  }
  return kernels::inResultOrder(ctx, out, a, contracted, axes.b_free);
}

}  // namespace fucina::backend::webgpu
