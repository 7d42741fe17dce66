// Rotary embedding rows and rmsNorm·weight fused before it (backend/rope_rows.h states both). The
// tables are computed on the host, in f64 as on every backend (WGSL has no f64, and a large
// position needs it to keep its phase), and uploaded: T·D/2 values each, small beside the rows.
// A rotation is one invocation per pair; the fused rows one workgroup per row, its sum of
// squares in a tree (f32: the host's is f64).
#include <string>

#include "fucina/backend/rope_rows.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

using rope::Geometry;
using rope::geometryOf;

// y = each pair of x rotated by sign·angle (uniforms: pairs, half, T, halves, sign, D).
std::string rotateSource() {
  return prelude(4) + readBinding(0, "x") + readBinding(1, "cs") + readBinding(2, "sn") + writeBinding(3, "y") +
         kMainSignature + " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n"
         "  let half = uw(1u);\n  let halves = uw(3u) == 1u;\n"
         "  let r = i / half;\n  let p = i % half;\n  let at = (r % uw(2u)) * half + p;\n"
         "  let a = r * uw(5u) + select(2u * p, p, halves);\n  let b = a + select(1u, half, halves);\n"
         "  let c = cs[at];\n  let s = uf(4u) * sn[at];\n"
         "  let x0 = x[a];\n  let x1 = x[b];\n"
         "  y[a] = x0 * c - x1 * s;\n  y[b] = x0 * s + x1 * c;\n}\n";
}

RawTensor rotate(ExecContext& ctx, const RawTensor& x_in, const RawTensor& cos, const RawTensor& sin, bool halves,
                 float sign) {
  const RawTensor x = rowsOf(ctx, x_in, "rope");
  const RawTensor c = rowsOf(ctx, cos, "rope"), s = rowsOf(ctx, sin, "rope");
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  const Geometry g = geometryOf(x);
  const int64_t half = g.D / 2, pairs = g.rows * half;
  if (pairs == 0) return y;  // the ops refuse an odd row length
  Uniforms u;
  u.u(static_cast<uint64_t>(pairs)).u(static_cast<uint64_t>(half)).u(static_cast<uint64_t>(g.T)).u(halves ? 1 : 0);
  u.f(sign).u(static_cast<uint64_t>(g.D));
  const uint32_t buffers[4] = {bufferOf(x, "rope"), bufferOf(c, "rope"), bufferOf(s, "rope"), bufferOf(y, "rope")};
  dispatchLinear(Gpu::get().pipeline(rotateSource()), buffers, u, pairs);
  return y;
}

// inv = 1/sqrt(mean(x²) + eps), n = x·inv, y = rotate(n·w) by halves (uniforms: rows, D, eps, T).
std::string rmsRopeSource() {
  return prelude(7) + readBinding(0, "x") + readBinding(1, "w") + readBinding(2, "cs") + readBinding(3, "sn") +
         writeBinding(4, "y") + writeBinding(5, "nn") + writeBinding(6, "inv") + rowKernelHead() +
         "  var q = 0.0;\n"
         "  for (var i = l; i < n; i = i + 256u) { q = q + x[base + i] * x[base + i]; }\n"
         "  let k = 1.0 / sqrt(reduce(l, q, false) / f32(n) + uf(2u));\n"
         "  if (l == 0u) { inv[row] = k; }\n"
         "  for (var i = l; i < n; i = i + 256u) { nn[base + i] = x[base + i] * k; }\n"
         "  let half = n / 2u;\n  let t = (row % uw(3u)) * half;\n"
         "  for (var p = l; p < half; p = p + 256u) {\n"
         "    let ua = x[base + p] * k * w[p];\n    let ub = x[base + p + half] * k * w[p + half];\n"
         "    let c = cs[t + p];\n    let s = sn[t + p];\n"
         "    y[base + p] = ua * c - ub * s;\n    y[base + p + half] = ua * s + ub * c;\n"
         "  }\n}\n";
}

// gx = inv·(gu·w - n·<gu·w·n>) (uniforms: rows, D).
std::string rmsRopeVjpSource() {
  return prelude(5) + readBinding(0, "gu") + readBinding(1, "nn") + readBinding(2, "w") + readBinding(3, "inv") +
         writeBinding(4, "gx") + rowKernelHead() +
         "  var q = 0.0;\n"
         "  for (var i = l; i < n; i = i + 256u) { q = q + gu[base + i] * w[i] * nn[base + i]; }\n"
         "  let k = reduce(l, q, false) / f32(n);\n"
         "  let v = inv[row];\n"
         "  for (var i = l; i < n; i = i + 256u) { gx[base + i] = v * (gu[base + i] * w[i] - nn[base + i] * k); }\n"
         "}\n";
}

}  // namespace

RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin,
                   Kernels::RopePairs pairs, bool inverse) {
  return rotate(ctx, x, cos, sin, pairs == Kernels::RopePairs::halves, inverse ? -1.0f : 1.0f);
}

Kernels::RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base,
                               int64_t offset) {
  ExecContext& host = ctx.on(Device::cpu);
  Kernels::RopeTables on_host{RawTensor::empty(host, {position, dim}, {T, D / 2}),
                              RawTensor::empty(host, {position, dim}, {T, D / 2})};
  rope::tables(on_host.cos.f32(), on_host.sin.f32(), T, D, base, offset);
  Kernels::RopeTables out{RawTensor::empty(ctx, {position, dim}, {T, D / 2}),
                          RawTensor::empty(ctx, {position, dim}, {T, D / 2})};
  copy(ctx, on_host.cos, out.cos);
  copy(ctx, on_host.sin, out.sin);
  return out;
}

Kernels::RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x_in, const RawTensor& w_in,
                                     const RawTensor& cos, const RawTensor& sin, double eps) {
  const RawTensor x = rowsOf(ctx, x_in, "rmsNorm-rope"), w = rowsOf(ctx, w_in, "rmsNorm-rope");
  const RawTensor c = rowsOf(ctx, cos, "rmsNorm-rope"), s = rowsOf(ctx, sin, "rmsNorm-rope");
  Kernels::RmsRopeRows out{RawTensor::empty(ctx, x.tags(), x.shape()), RawTensor::empty(ctx, x.tags(), x.shape()),
                           RawTensor::empty(ctx, Tags(x.tags().begin(), x.tags().end() - 1),
                                            Extents(x.shape().begin(), x.shape().end() - 1))};
  const Geometry g = geometryOf(x);
  const uint32_t buffers[7] = {bufferOf(x, "rmsNorm-rope"), bufferOf(w, "rmsNorm-rope"), bufferOf(c, "rmsNorm-rope"),
                               bufferOf(s, "rmsNorm-rope"), bufferOf(out.y, "rmsNorm-rope"),
                               bufferOf(out.n, "rmsNorm-rope"), bufferOf(out.inv, "rmsNorm-rope")};
  const uint32_t extra[1] = {static_cast<uint32_t>(g.T)};
  dispatchRows(rmsRopeSource(), buffers, {g.rows, g.D}, static_cast<float>(eps), extra);
  return out;
}

Kernels::RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const Kernels::RmsRopeRows& saved, const RawTensor& w_in,
                                         const RawTensor& cos, const RawTensor& sin, const RawTensor& gy,
                                         bool need_x, bool need_w) {
  const RawTensor gu = rotate(ctx, gy, cos, sin, /*halves=*/true, -1.0f);
  const RawTensor w = rowsOf(ctx, w_in, "rmsNorm-rope VJP");
  Kernels::RmsRopeGrads out;
  if (need_w) {
    const Tags& tags = saved.n.tags();
    const RawTensor* ins[2] = {&gu, &saved.n};
    const RawTensor prod = mapExpr(ctx, tags, saved.n.shape(), ins, {"a", "b"}, "a * b", {});
    out.w = sumAxes(ctx, prod, Tags(tags.begin(), tags.end() - 1));
  }
  if (!need_x) return out;
  out.x = RawTensor::empty(ctx, gu.tags(), gu.shape());
  const uint32_t buffers[5] = {bufferOf(gu, "rmsNorm-rope VJP"), bufferOf(saved.n, "rmsNorm-rope VJP"),
                               bufferOf(w, "rmsNorm-rope VJP"), bufferOf(saved.inv, "rmsNorm-rope VJP"),
                               bufferOf(out.x, "rmsNorm-rope VJP")};
  dispatchRows(rmsRopeVjpSource(), buffers, rowLayout(gu));
  return out;
}

}  // namespace fucina::backend::webgpu
