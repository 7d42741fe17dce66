// Contraction as a batched GEMM (Note [Tiled GEMM]). Each operand is read through its own strides
// (a group of axes that does not fold into one stride is copied contiguous first), and its tile is
// loaded along whichever of its two axes is contiguous, so neighbouring invocations read
// neighbouring words.
#include <string>

#include "fucina/backend/cpu/gemm.h"
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
// C[b] contiguous, added to when word kGemmWord + 8 is set. B of f16, bf16 or q8_0 is read in
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
      "  let o = (b * uw(0u) + m) * uw(1u) + n;\n"
      "  if (" + word(8) + " != 0) { c[o] = c[o] + v; } else { c[o] = v; }\n"
      "}\n";
  return tiledGemmSource(operands, 3, a, b);
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
    const int64_t m = ma.rows.extent, n = mb.rows.extent, z = ma.z.extent;
    Uniforms u;
    u.set(kGemmWord - 1, 0);
    u.i(ma.t.offset()).i(ma.z.stride).i(ma.rows.stride).i(ma.cols.stride);
    u.i(mb.t.offset()).i(mb.z.stride).i(mb.rows.stride).i(mb.cols.stride);
    u.u(accumulate ? 1 : 0);
    const uint32_t buffers[3] = {bufferOf(ma.t, "contract"), bufferOf(mb.t, "contract"), bufferOf(out, "contract")};
    dispatchGemm(contractSource(loadOf(ma, k), loadOf(mb, k), mb.t.dtype()), buffers, u, {z, m, n, k}, "contract");
  }
  return kernels::inResultOrder(ctx, out, a, contracted, axes.b_free);
}

}  // namespace fucina::backend::webgpu
