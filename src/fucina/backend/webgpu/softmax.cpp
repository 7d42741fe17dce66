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

std::string forwardSource(bool log) {
  return prelude(2) + readBinding(0, "x") + writeBinding(1, "y") + rowKernelHead() +
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
  return prelude(3) + readBinding(0, "y") + readBinding(1, "gy") + writeBinding(2, "gx") + rowKernelHead() +
         "  var s = 0.0;\n" +
         (log ? "  for (var i = l; i < n; i = i + 256u) { s = s + gy[base + i]; }\n"
              : "  for (var i = l; i < n; i = i + 256u) { s = s + gy[base + i] * y[base + i]; }\n") +
         "  s = reduce(l, s, false);\n" +
         (log ? "  for (var i = l; i < n; i = i + 256u) { gx[base + i] = gy[base + i] - exp(y[base + i]) * s; }\n"
              : "  for (var i = l; i < n; i = i + 256u) { gx[base + i] = y[base + i] * (gy[base + i] - s); }\n") +
         "}\n";
}

}  // namespace

RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x_in, bool log) {
  const RawTensor x = rowsOf(ctx, x_in, "softmax");
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  if (y.numel() == 0) return y;
  const uint32_t buffers[2] = {bufferOf(x, "softmax"), bufferOf(y, "softmax")};
  const RowLayout l = rowLayout(x);
  const uint64_t row = 4 * static_cast<uint64_t>(l.n), row_bytes[2] = {row, row};
  dispatchRows(forwardSource(log), buffers, l, 0, {}, row_bytes);
  return y;
}

RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y_in, const RawTensor& gy_in, bool log) {
  const RawTensor y = rowsOf(ctx, y_in, "softmax VJP"), gy = rowsOf(ctx, gy_in, "softmax VJP");
  RawTensor gx = RawTensor::empty(ctx, y.tags(), y.shape());
  if (gx.numel() == 0) return gx;
  const uint32_t buffers[3] = {bufferOf(y, "softmax VJP"), bufferOf(gy, "softmax VJP"), bufferOf(gx, "softmax VJP")};
  const RowLayout l = rowLayout(y);
  const uint64_t row = 4 * static_cast<uint64_t>(l.n), row_bytes[3] = {row, row, row};
  dispatchRows(vjpSource(log), buffers, l, 0, {}, row_bytes);
  return gx;
}

}  // namespace fucina::backend::webgpu
