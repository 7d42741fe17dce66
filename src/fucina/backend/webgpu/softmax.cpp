// Softmax rows (the last axis of contiguous f32): one workgroup per row, its 256 invocations
// striding over the row and combining their partial maxima and sums in a tree (f32: the cpu
// sums in f64). A row of only -inf takes 0 as its maximum, as the cpu's.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Workgroup memory and a tree over it: `reduce(v, max)` leaves the combination of every
// invocation's v in red[0] and returns it (every invocation must call it: it has barriers).
std::string rowPrelude() {
  return "var<workgroup> red: array<f32, 256>;\n"
         "fn reduce(l: u32, v: f32, take_max: bool) -> f32 {\n"
         "  red[l] = v;\n"
         "  workgroupBarrier();\n"
         "  for (var w = 128u; w > 0u; w = w >> 1u) {\n"
         "    if (l < w) { red[l] = select(red[l] + red[l + w], max(red[l], red[l + w]), take_max); }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  let r = red[0];\n"
         "  workgroupBarrier();\n"
         "  return r;\n"
         "}\n"
         "@compute @workgroup_size(256) fn main(@builtin(local_invocation_index) l: u32, "
         "@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) ng: vec3u) {\n"
         "  let row = wg.x + wg.y * ng.x;\n"
         "  if (row >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n"
         "  let base = row * n;\n";
}

std::string forwardSource(bool log) {
  return prelude(2) + readBinding(0, "x") + writeBinding(1, "y") + rowPrelude() +
         "  var m = from_bits(0xff800000u);\n"
         "  for (var i = l; i < n; i = i + 256u) { m = max(m, x[base + i]); }\n"
         "  m = reduce(l, m, true);\n"
         "  if (!is_finite(m)) { m = 0.0; }\n"
         "  var s = 0.0;\n"
         "  for (var i = l; i < n; i = i + 256u) { s = s + exp(x[base + i] - m); }\n"
         "  s = reduce(l, s, false);\n" +
         (log ? "  let ls = log(s);\n  for (var i = l; i < n; i = i + 256u) { y[base + i] = x[base + i] - m - ls; }\n"
              : "  for (var i = l; i < n; i = i + 256u) { y[base + i] = exp(x[base + i] - m) / s; }\n") +
         "}\n";
}

// softmax: gx = y·(gy - Σ gy·y); log-softmax: gx = gy - exp(y)·Σ gy.
std::string vjpSource(bool log) {
  return prelude(3) + readBinding(0, "y") + readBinding(1, "gy") + writeBinding(2, "gx") + rowPrelude() +
         "  var s = 0.0;\n" +
         (log ? "  for (var i = l; i < n; i = i + 256u) { s = s + gy[base + i]; }\n"
              : "  for (var i = l; i < n; i = i + 256u) { s = s + gy[base + i] * y[base + i]; }\n") +
         "  s = reduce(l, s, false);\n" +
         (log ? "  for (var i = l; i < n; i = i + 256u) { gx[base + i] = gy[base + i] - exp(y[base + i]) * s; }\n"
              : "  for (var i = l; i < n; i = i + 256u) { gx[base + i] = y[base + i] * (gy[base + i] - s); }\n") +
         "}\n";
}

void requireRows(const RawTensor& t, const char* what) {
  requireF32(t, what);
  if (!t.isContiguous()) fail(ErrorCode::InvalidArgument, std::string(what) + ": rows must be contiguous, got " + t.describe());
}

void dispatchRows(const std::string& source, std::span<const uint32_t> buffers, const RowLayout& l) {
  if (l.rows == 0 || l.n == 0) return;
  Uniforms u;
  u.u(static_cast<uint64_t>(l.rows)).u(static_cast<uint64_t>(l.n));
  const int64_t x = std::min<int64_t>(l.rows, Gpu::kMaxGroups), y = (l.rows + x - 1) / x;
  Gpu::get().dispatch(Gpu::get().pipeline(source), buffers, u.words, static_cast<uint32_t>(x), static_cast<uint32_t>(y));
}

}  // namespace

RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log) {
  requireRows(x, "softmax");
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  if (y.numel() == 0) return y;
  const uint32_t buffers[2] = {bufferOf(x, "softmax"), bufferOf(y, "softmax")};
  dispatchRows(forwardSource(log), buffers, rowLayout(x));
  return y;
}

RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log) {
  requireRows(y, "softmax VJP");
  requireRows(gy, "softmax VJP");
  RawTensor gx = RawTensor::empty(ctx, y.tags(), y.shape());
  if (gx.numel() == 0) return gx;
  const uint32_t buffers[3] = {bufferOf(y, "softmax VJP"), bufferOf(gy, "softmax VJP"), bufferOf(gx, "softmax VJP")};
  dispatchRows(vjpSource(log), buffers, rowLayout(y));
  return gx;
}

}  // namespace fucina::backend::webgpu
