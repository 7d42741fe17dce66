// Contraction as a batched GEMM C[z] = A[z]·B[z] (+ C[z]): 64x64 tiles of C per workgroup of
// 16x16 invocations, each computing 4x4 outputs from 16-deep slices of A and B staged in
// workgroup memory. Each operand is read through its own strides (a group of axes that does not
// fold into one stride is copied contiguous first), and its tile is loaded along whichever of
// its two axes is contiguous, so neighbouring invocations read neighbouring words.
#include <string>

#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
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

// Loads of one operand's 16 x 64 tile into `tile`: `deep` the depth (k) index, `wide` the row
// (m, or n) index; `fast` names the index that moves between neighbouring invocations.
std::string tileLoad(const std::string& tile, const std::string& buf, const std::string& wide0,
                     const std::string& limit, const std::string& off, const std::string& s_wide,
                     const std::string& s_deep, bool deep_fast) {
  const std::string deep = deep_fast ? "e % 16u" : "e / 64u", wide = deep_fast ? "e / 16u" : "e % 64u";
  return "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
         "      let e = t + j * 256u;\n"
         "      let kk = " + deep + ";\n      let ww = " + wide + ";\n"
         "      let gw = " + wide0 + " + ww;\n      let gk = k0 + kk;\n"
         "      var v = 0.0;\n"
         "      if (gw < " + limit + " && gk < K) { v = " + buf + "[u32(" + off + " + i32(gw) * " + s_wide + " + i32(gk) * " + s_deep + ")]; }\n"
         "      " + tile + "[kk][ww] = v;\n"
         "    }\n";
}

std::string gemmSource(bool a_deep_fast, bool b_deep_fast) {
  return prelude(3) + readBinding(0, "a") + readBinding(1, "b") + writeBinding(2, "c") +
         "var<workgroup> ta: array<array<f32, 64>, 16>;\n"
         "var<workgroup> tb: array<array<f32, 64>, 16>;\n"
         "@compute @workgroup_size(16, 16) fn main(@builtin(local_invocation_id) lid: vec3u, "
         "@builtin(workgroup_id) wg: vec3u) {\n"
         "  let M = uw(0u);\n  let N = uw(1u);\n  let K = uw(2u);\n"
         "  let aoff = ui(3u) + ui(4u) * i32(wg.z);\n  let sam = ui(5u);\n  let sak = ui(6u);\n"
         "  let boff = ui(7u) + ui(8u) * i32(wg.z);\n  let sbn = ui(9u);\n  let sbk = ui(10u);\n"
         "  let m0 = wg.y * 64u;\n  let n0 = wg.x * 64u;\n  let t = lid.y * 16u + lid.x;\n"
         "  var acc: array<array<f32, 4>, 4>;\n"
         "  for (var k0 = 0u; k0 < K; k0 = k0 + 16u) {\n" +
         tileLoad("ta", "a", "m0", "M", "aoff", "sam", "sak", a_deep_fast) +
         tileLoad("tb", "b", "n0", "N", "boff", "sbn", "sbk", b_deep_fast) +
         "    workgroupBarrier();\n"
         "    for (var kk = 0u; kk < 16u; kk = kk + 1u) {\n"
         "      var av: array<f32, 4>;\n      var bv: array<f32, 4>;\n"
         "      for (var i = 0u; i < 4u; i = i + 1u) { av[i] = ta[kk][lid.y + 16u * i]; bv[i] = tb[kk][lid.x + 16u * i]; }\n"
         "      for (var i = 0u; i < 4u; i = i + 1u) {\n"
         "        for (var j = 0u; j < 4u; j = j + 1u) { acc[i][j] = fma(av[i], bv[j], acc[i][j]); }\n"
         "      }\n"
         "    }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  let accumulate = uw(11u) != 0u;\n"
         "  for (var i = 0u; i < 4u; i = i + 1u) {\n"
         "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
         "      let gm = m0 + lid.y + 16u * i;\n      let gn = n0 + lid.x + 16u * j;\n"
         "      if (gm < M && gn < N) {\n"
         "        let o = (wg.z * M + gm) * N + gn;\n"
         "        var v = acc[i][j];\n"
         "        if (accumulate) { v = v + c[o]; }\n"
         "        c[o] = v;\n"
         "      }\n"
         "    }\n"
         "  }\n"
         "}\n";
}

}  // namespace

RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted,
                   const RawTensor& initial) {
  const kernels::ContractionAxes axes = kernels::contractionAxes(a, b, contracted);
  requireF32(a, "contract");
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
    u.u(static_cast<uint64_t>(m)).u(static_cast<uint64_t>(n)).u(static_cast<uint64_t>(k));
    u.i(ma.t.offset()).i(ma.z.stride).i(ma.rows.stride).i(ma.cols.stride);
    u.i(mb.t.offset()).i(mb.z.stride).i(mb.rows.stride).i(mb.cols.stride);
    u.u(accumulate ? 1 : 0);
    const uint32_t buffers[3] = {bufferOf(ma.t, "contract"), bufferOf(mb.t, "contract"), bufferOf(out, "contract")};
    const int64_t gx = (n + 63) / 64, gy = (m + 63) / 64;
    if (gx > Gpu::kMaxGroups || gy > Gpu::kMaxGroups || z > Gpu::kMaxGroups)
      unsupported("a product of " + std::to_string(z) + " matrices of " + std::to_string(m) + " x " + std::to_string(n));
    const uint32_t pipeline = Gpu::get().pipeline(gemmSource(ma.cols.stride == 1, mb.cols.stride == 1));
    Gpu::get().dispatch(pipeline, buffers, u.words, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy),
                        static_cast<uint32_t>(z));
  }
  return kernels::inResultOrder(ctx, out, a, contracted, axes.b_free);
}

}  // namespace fucina::backend::webgpu
