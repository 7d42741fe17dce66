// Reductions and scans along one axis (Kernels::reduceAlong), and cumprod rows with their VJP,
// as the reference states them. Along an axis: the
// axis is moved last (a contiguous copy where it is not), then each row is one workgroup (max,
// min, prod: partial results of 256 invocations combined in a tree) or one invocation walking it
// in order (cumsum, its reverse, prodOthers). In f32, where the host's prod and cumsum use f64.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

using A = Kernels::AlongAxis;

// The first extremum of each row and its position; NaN wins (the first NaN). Each invocation
// keeps the best of its elements, in order; the tree prefers NaN, then the better value, then
// the lower position, so the result is the sequential scan's.
std::string extremumSource(bool max) {
  return prelude(3) + readBinding(0, "x") + writeBinding(1, "val") + writeBinding(2, "idx") +
         "var<workgroup> bv: array<f32, 256>;\nvar<workgroup> bi: array<u32, 256>;\n"
         "const none = 0xffffffffu;\n"
         // Whether (v at i) takes the place of (w at j), w being held (j != none).
         "fn wins(v: f32, i: u32, w: f32, j: u32) -> bool {\n"
         "  if (is_nan(v) || is_nan(w)) { return is_nan(v) && (!is_nan(w) || i < j); }\n"
         "  return v " + std::string(max ? ">" : "<") + " w || (v == w && i < j);\n"
         "}\n"
         "@compute @workgroup_size(256) fn main(@builtin(local_invocation_index) l: u32, "
         "@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) ng: vec3u) {\n"
         "  let row = wg.x + wg.y * ng.x;\n"
         "  if (row >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n  let base = row * n;\n"
         "  var v = 0.0;\n  var at = none;\n"
         "  for (var i = l; i < n; i = i + 256u) {\n"
         "    if (at == none || wins(x[base + i], i, v, at)) { v = x[base + i]; at = i; }\n"
         "  }\n"
         "  bv[l] = v;\n  bi[l] = at;\n"
         "  workgroupBarrier();\n"
         "  for (var w = 128u; w > 0u; w = w >> 1u) {\n"
         "    if (l < w && bi[l + w] != none && (bi[l] == none || wins(bv[l + w], bi[l + w], bv[l], bi[l]))) {\n"
         "      bv[l] = bv[l + w];\n      bi[l] = bi[l + w];\n"
         "    }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  if (l == 0u) { val[row] = bv[0]; idx[row] = f32(bi[0]); }\n"
         "}\n";
}

std::string prodSource() {
  return prelude(2) + readBinding(0, "x") + writeBinding(1, "out") +
         "var<workgroup> part: array<f32, 256>;\n"
         "@compute @workgroup_size(256) fn main(@builtin(local_invocation_index) l: u32, "
         "@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) ng: vec3u) {\n"
         "  let row = wg.x + wg.y * ng.x;\n"
         "  if (row >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n  let base = row * n;\n"
         "  var p = 1.0;\n"
         "  for (var i = l; i < n; i = i + 256u) { p = p * x[base + i]; }\n"
         "  part[l] = p;\n"
         "  workgroupBarrier();\n"
         "  for (var w = 128u; w > 0u; w = w >> 1u) {\n"
         "    if (l < w) { part[l] = part[l] * part[l + w]; }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  if (l == 0u) { out[row] = part[0]; }\n"
         "}\n";
}

// The head of a scan kernel: one invocation per row of contiguous rows (uniforms: rows, n), `n`
// and `base` (the row's first element) defined; the caller closes main.
const std::string kScanHead = std::string(kMainSignature) + " {\n  " + kLinearIndex +
                              "\n  if (i >= uw(0u)) { return; }\n  let n = uw(1u);\n  let base = i * n;\n";

// Runs a scan kernel over l.rows rows.
void scanRows(const std::string& source, std::span<const uint32_t> buffers, const RowLayout& l) {
  Uniforms u;
  u.u(static_cast<uint64_t>(l.rows)).u(static_cast<uint64_t>(l.n));
  dispatchLinear(Gpu::get().pipeline(source), buffers, u, l.rows);
}

// Scans along a line (uniforms: rows, n).
std::string scanSource(A op) {
  std::string body;
  switch (op) {
    case A::cumsum: body = "  var s = 0.0;\n  for (var i = 0u; i < n; i = i + 1u) { s = s + x[base + i]; y[base + i] = s; }\n"; break;
    case A::cumsumReverse:
      body = "  var s = 0.0;\n  for (var i = n; i > 0u; i = i - 1u) { s = s + x[base + i - 1u]; y[base + i - 1u] = s; }\n";
      break;
    default:  // prodOthers: the product before each element, then times the product after it
      body = "  var p = 1.0;\n  for (var i = 0u; i < n; i = i + 1u) { y[base + i] = p; p = p * x[base + i]; }\n"
             "  p = 1.0;\n  for (var i = n; i > 0u; i = i - 1u) { y[base + i - 1u] = y[base + i - 1u] * p; p = p * x[base + i - 1u]; }\n";
  }
  return prelude(2) + readBinding(0, "x") + writeBinding(1, "y") + kScanHead + body + "}\n";
}

// cumprod rows (contiguous, one invocation per row): y_i = x_0·...·x_i; the VJP from the end:
// S_i = g_i + x_{i+1}·S_{i+1}, gx_i = y_{i-1}·S_i (y_{-1} = 1). Uniforms: rows, n.
std::string cumprodSource(bool vjp) {
  const std::string& head = kScanHead;
  if (!vjp)
    return prelude(2) + readBinding(0, "x") + writeBinding(1, "y") + head +
           "  var p = 1.0;\n  for (var j = 0u; j < n; j = j + 1u) { p = p * x[base + j]; y[base + j] = p; }\n}\n";
  return prelude(4) + readBinding(0, "x") + readBinding(1, "y") + readBinding(2, "g") + writeBinding(3, "gx") + head +
         "  var s = 0.0;\n"
         "  for (var j = n; j > 0u; j = j - 1u) {\n"
         "    let at = base + j - 1u;\n"
         // select evaluates both sides: the indices stay inside the row
         "    s = g[at] + select(0.0, x[min(at + 1u, base + n - 1u)] * s, j < n);\n"
         "    gx[at] = select(1.0, y[max(at, base + 1u) - 1u], j > 1u) * s;\n"
         "  }\n}\n";
}

// Linear recurrence rows (contiguous, one invocation per row; uniforms: rows, n): h_t = d_t·h_{t-1}
// + x_t from h0; the VJP from the end, G_t = g_t + d_{t+1}·G_{t+1}: gx_t = G_t, gd_t = G_t·h_{t-1},
// gh0 = d_0·G_0 (scan_rows.h's, in f32).
std::string recurrenceSource(bool vjp) {
  const std::string& head = kScanHead;
  if (!vjp)
    return prelude(4) + readBinding(0, "x") + readBinding(1, "d") + readBinding(2, "h0") + writeBinding(3, "y") + head +
           "  var h = h0[i];\n  for (var t = 0u; t < n; t = t + 1u) { h = d[base + t] * h + x[base + t]; y[base + t] = h; }\n}\n";
  return prelude(7) + readBinding(0, "d") + readBinding(1, "h0") + readBinding(2, "y") + readBinding(3, "g") +
         writeBinding(4, "gx") + writeBinding(5, "gd") + writeBinding(6, "gh0") + head +
         "  var s = 0.0;\n"
         "  for (var t = n; t > 0u; t = t - 1u) {\n"
         "    let at = base + t - 1u;\n"
         // select evaluates both sides: the indices stay inside the row
         "    s = g[at] + select(0.0, d[min(at + 1u, base + n - 1u)] * s, t < n);\n"
         "    gx[at] = s;\n"
         "    gd[at] = s * select(h0[i], y[max(at, base + 1u) - 1u], t > 1u);\n"
         "  }\n"
         "  gh0[i] = select(0.0, d[base] * s, n > 0u);\n}\n";
}

}  // namespace

RawTensor cumprodRows(ExecContext& ctx, const RawTensor& x_in) {
  const RawTensor x = rowsOf(ctx, x_in, "cumprod");
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  const RowLayout l = rowLayout(x);
  if (y.numel() == 0) return y;
  const uint32_t buffers[2] = {bufferOf(x, "cumprod"), bufferOf(y, "cumprod")};
  scanRows(cumprodSource(false), buffers, l);
  return y;
}

RawTensor cumprodRowsVjp(ExecContext& ctx, const RawTensor& x_in, const RawTensor& y_in, const RawTensor& gy_in) {
  const RawTensor x = rowsOf(ctx, x_in, "cumprod VJP"), y = rowsOf(ctx, y_in, "cumprod VJP"),
                  gy = rowsOf(ctx, gy_in, "cumprod VJP");
  RawTensor gx = RawTensor::empty(ctx, x.tags(), x.shape());
  const RowLayout l = rowLayout(x);
  if (gx.numel() == 0) return gx;
  const uint32_t buffers[4] = {bufferOf(x, "cumprod VJP"), bufferOf(y, "cumprod VJP"), bufferOf(gy, "cumprod VJP"),
                               bufferOf(gx, "cumprod VJP")};
  scanRows(cumprodSource(true), buffers, l);
  return gx;
}

RawTensor linearRecurrenceRows(ExecContext& ctx, const RawTensor& x_in, const RawTensor& d_in, const RawTensor& h0_in) {
  const RawTensor x = rowsOf(ctx, x_in, "linearRecurrence"), d = rowsOf(ctx, d_in, "linearRecurrence"),
                  h0 = rowsOf(ctx, h0_in, "linearRecurrence");
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  const RowLayout l = recurrenceLayout(x, h0);
  if (y.numel() == 0) return y;
  const uint32_t buffers[4] = {bufferOf(x, "linearRecurrence"), bufferOf(d, "linearRecurrence"),
                               bufferOf(h0, "linearRecurrence"), bufferOf(y, "linearRecurrence")};
  scanRows(recurrenceSource(false), buffers, l);
  return y;
}

Kernels::RecurrenceGrads linearRecurrenceRowsVjp(ExecContext& ctx, const RawTensor& d_in, const RawTensor& h0_in,
                                                 const RawTensor& y_in, const RawTensor& gy_in) {
  const char* what = "linearRecurrence VJP";
  const RawTensor d = rowsOf(ctx, d_in, what), h0 = rowsOf(ctx, h0_in, what), y = rowsOf(ctx, y_in, what),
                  gy = rowsOf(ctx, gy_in, what);
  const RowLayout l = recurrenceLayout(y, h0);
  Kernels::RecurrenceGrads g{RawTensor::empty(ctx, y.tags(), y.shape()), RawTensor::empty(ctx, y.tags(), y.shape()),
                             RawTensor::empty(ctx, h0.tags(), h0.shape())};
  if (l.rows == 0) return g;
  if (y.numel() == 0) {  // no steps: gh0 = 0
    fill(ctx, g.h0, 0.0);
    return g;
  }
  const uint32_t buffers[7] = {bufferOf(d, what), bufferOf(h0, what), bufferOf(y, what), bufferOf(gy, what),
                               bufferOf(g.x, what), bufferOf(g.d, what), bufferOf(g.h0, what)};
  scanRows(recurrenceSource(true), buffers, l);
  return g;
}

Kernels::Along reduceAlong(ExecContext& ctx, A op, const RawTensor& a, Tag axis) {
  requireF32(a, "reduceAlong");
  Tags order, tags;
  Extents shape;
  for (size_t i = 0; i < a.rank(); ++i)
    if (a.tags()[i] != axis) tags.push_back(a.tags()[i]), shape.push_back(a.shape()[i]);
  order = tags;
  order.push_back(axis);
  const RawTensor in = whole(ctx, a.permuted(order));
  const int64_t n = a.extent(axis), rows = numelOf(shape);
  const bool keep = op == A::cumsum || op == A::cumsumReverse || op == A::prodOthers;
  Kernels::Along r;
  r.values = keep ? RawTensor::empty(ctx, in.tags(), in.shape()) : RawTensor::empty(ctx, tags, shape);
  if (op == A::max || op == A::min) r.index = RawTensor::empty(ctx, tags, shape);
  if (rows == 0 || n == 0) {  // an extremum of an empty axis is refused by its ops
    if (op == A::prod && rows > 0) fill(ctx, r.values, 1.0);
    if (keep) r.values = r.values.permuted(a.tags());
    return r;
  }
  const RowLayout l{rows, n};
  const uint32_t in_buf = bufferOf(in, "reduceAlong"), out_buf = bufferOf(r.values, "reduceAlong");
  if (op == A::max || op == A::min) {
    const uint32_t buffers[3] = {in_buf, out_buf, bufferOf(r.index, "reduceAlong")};
    dispatchRows(extremumSource(op == A::max), buffers, l);
    return r;
  }
  const uint32_t buffers[2] = {in_buf, out_buf};
  if (op == A::prod) {
    dispatchRows(prodSource(), buffers, l);
    return r;
  }
  scanRows(scanSource(op), buffers, {rows, n});
  r.values = whole(ctx, r.values.permuted(a.tags()));  // back in a's order
  return r;
}

}  // namespace fucina::backend::webgpu
