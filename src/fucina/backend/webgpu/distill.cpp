// linearDistillExt's rows on the device (Kernels::temperatureSoftmaxRows, distillRows and its VJP):
// one workgroup per row (the class axis last, contiguous f32), as the cpu's rows
// (backend/cpu/cross_entropy_rows.cpp). The logsumexps and the losses are f32 here (the cpu's are
// f64; WGSL has none). The hard labels' count divides on the device when it is a tensor there
// (Kernels::Divisor).
#include <string>
#include <vector>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

using Distill = Kernels::Distill;

// WGSL: `lse_of(x, base, n, l, k)`, the logsumexp of k·x over the row (every invocation calls it:
// it reduces), max subtracted.
std::string lseOf(const std::string& buf) {
  return "fn lse_of(base: u32, n: u32, l: u32, k: f32) -> f32 {\n"
         "  var m = from_bits(0xff800000u);\n"
         "  for (var c = l; c < n; c = c + 256u) { m = max(m, k * " + buf + "[base + c]); }\n"
         "  m = reduce(l, m, true);\n"
         "  var e = 0.0;\n"
         "  for (var c = l; c < n; c = c + 256u) { e = e + exp(k * " + buf + "[base + c] - m); }\n"
         "  e = reduce(l, e, false);\n"
         "  return select(m, m + log(e), is_finite(m));\n"
         "}\n";
}

std::string temperatureSource() {
  return prelude(2) + readBinding(0, "x") + writeBinding(1, "out") + rowKernelHead() + "  let k = uf(2u);\n"
         "  let lse = lse_of(base, n, l, k);\n"
         "  for (var c = l; c < n; c = c + 256u) { out[base + c] = exp(k * x[base + c] - lse); }\n"
         "}\n" + lseOf("x");
}

// Uniform words from 2 on: 1/T, T, α, kd_div, the host's ce_div, labels given, ce_div on the
// device, the ignored label's two words; the VJP's then gy per row.
constexpr const char* kConstants =
    "  let invT = uf(2u);\n  let T = uf(3u);\n  let alpha = uf(4u);\n  let kd_div = uf(5u);\n"
    "  let has_y = uw(7u) == 1u;\n"
    "  let ce_div = select(uf(6u), cdiv[0], uw(8u) == 1u);\n"
    "  var counted = false;\n  var y = 0u;\n"
    "  if (has_y) {\n"
    "    let lo = t[2u * row];\n    let hi = t[2u * row + 1u];\n"
    "    counted = !(lo == uw(9u) && hi == uw(10u));\n"
    "    y = select(min(lo, n - 1u), select(n - 1u, 0u, (hi >> 31u) == 1u), hi != 0u);\n"
    "  }\n"
    "  let lseT = lse_of(base, n, l, invT);\n"
    "  let lse1 = lse_of(base, n, l, 1.0);\n";

std::string bindings() {
  return readBinding(0, "x") + readBinding(1, "p") + readBinding(2, "t", "u32") + readBinding(3, "cdiv");
}

// loss = (1 - α)·T²·Σ_{p > 0} p·(log p - (x/T - lseT))/kd_div + α·(lse1 - x[y])/ce_div.
std::string forwardSource() {
  return prelude(5) + bindings() + writeBinding(4, "loss") + rowKernelHead() + kConstants +
         "  var acc = 0.0;\n"
         "  for (var c = l; c < n; c = c + 256u) {\n"
         "    let pc = p[base + c];\n"
         "    if (pc > 0.0) { acc = acc + pc * (log(pc) - (invT * x[base + c] - lseT)); }\n"
         "  }\n"
         "  acc = reduce(l, acc, false);\n"
         "  if (l != 0u) { return; }\n"
         "  let ce = select(0.0, lse1 - x[base + y], counted);\n"
         "  loss[row] = (1.0 - alpha) * T * T * acc / kd_div + select(0.0, alpha * ce / ce_div, has_y);\n"
         "}\n" + lseOf("x");
}

// gx = k·(softmax(x/T) - p) + a·(softmax(x) - onehot(y)), k = (1 - α)·T·fk, a = α·fc.
std::string vjpSource() {
  return prelude(6) + bindings() + readBinding(4, "gy") + writeBinding(5, "gx") + rowKernelHead() + kConstants +
         "  let rows_gy = uw(11u) == 1u;\n"
         "  let fk = select(gy[0] / kd_div, gy[row], rows_gy);\n"
         "  let fc = select(0.0, select(gy[0] / ce_div, gy[row], rows_gy), counted);\n"
         "  let k = (1.0 - alpha) * T * fk;\n"
         "  let a = alpha * fc;\n"
         "  for (var c = l; c < n; c = c + 256u) {\n"
         "    let v = x[base + c];\n"
         "    var g = k * (exp(invT * v - lseT) - p[base + c]);\n"
         "    if (a != 0.0) { g = g + a * (exp(v - lse1) - select(0.0, 1.0, c == y)); }\n"
         "    gx[base + c] = g;\n"
         "  }\n"
         "}\n" + lseOf("x");
}

// The uniform words from 3 on that both kernels read (word 2, 1/T, is dispatchRows' parameter).
std::vector<uint32_t> constants(const Distill& d) {
  Uniforms u;
  u.f(static_cast<float>(d.temperature)).f(static_cast<float>(d.alpha)).f(static_cast<float>(d.kd_div));
  u.f(static_cast<float>(d.ce_div.value)).u(d.labels.valid() ? 1 : 0).u(d.ce_div.tensor.valid() ? 1 : 0);
  const auto ignore = static_cast<uint64_t>(d.ignore);  // its two words, low first
  u.words.push_back(static_cast<uint32_t>(ignore));
  u.words.push_back(static_cast<uint32_t>(ignore >> 32));
  return u.words;
}

// The bound operands of both kernels: x, p, the labels and the device's ce_div (or stand-ins).
struct Operands {
  RawTensor x, p, t, cdiv;
  Operands(ExecContext& ctx, const RawTensor& x_in, const Distill& d, const char* what)
      : x(rowsOf(ctx, x_in, what)),
        p(rowsOf(ctx, d.probs, what)),
        t(d.labels.valid() ? whole(ctx, d.labels) : placeholder(ctx)),
        cdiv(d.ce_div.tensor.valid() ? d.ce_div.tensor : placeholder(ctx)) {
    const RowLayout l = rowLayout(x);
    if (l.rows > 0 && l.n == 0) unsupported(std::string(what) + " of no classes");
  }
};

float inverse(double T) { return static_cast<float>(1.0 / T); }

}  // namespace

RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x_in, float inv_t) {
  const RawTensor x = rowsOf(ctx, x_in, "temperatureSoftmaxRows");
  RawTensor out = RawTensor::empty(ctx, x.tags(), x.shape());
  const uint32_t buffers[2] = {bufferOf(x, "temperatureSoftmaxRows"), bufferOf(out, "temperatureSoftmaxRows")};
  const uint64_t row = 4 * static_cast<uint64_t>(rowLayout(x).n);
  const uint64_t row_bytes[2] = {row, row};
  dispatchRows(temperatureSource(), buffers, rowLayout(x), inv_t, {}, row_bytes);
  return out;
}

RawTensor distillRows(ExecContext& ctx, const RawTensor& x_in, const Distill& d) {
  const Operands o(ctx, x_in, d, "distillRows");
  const RowLayout l = rowLayout(o.x);
  RawTensor loss = RawTensor::empty(ctx, Tags(o.x.tags().begin(), o.x.tags().end() - 1),
                                    Extents(o.x.shape().begin(), o.x.shape().end() - 1));
  if (l.rows == 0) return loss;
  const uint32_t buffers[5] = {bufferOf(o.x, "distillRows"), bufferOf(o.p, "distillRows"), bufferOf(o.t, "distillRows"),
                               bufferOf(o.cdiv, "distillRows"), bufferOf(loss, "distillRows")};
  const uint64_t row = 4 * static_cast<uint64_t>(l.n);
  const uint64_t row_bytes[5] = {row, row, d.labels.valid() ? 8u : 0u, 0, 4};
  dispatchRows(forwardSource(), buffers, l, inverse(d.temperature), constants(d), row_bytes);
  return loss;
}

RawTensor distillRowsVjp(ExecContext& ctx, const RawTensor& x_in, const Distill& d, const RawTensor& gy_in) {
  const Operands o(ctx, x_in, d, "distillRowsVjp");
  const RowLayout l = rowLayout(o.x);
  // A gradient of its own rather than over x: a binding cannot be read and written as two.
  RawTensor gx = RawTensor::empty(ctx, o.x.tags(), o.x.shape());
  if (l.rows == 0) return gx;
  const bool rows_gy = gy_in.rank() > 0;
  const RawTensor gy = whole(ctx, gy_in);
  const uint32_t buffers[6] = {bufferOf(o.x, "distillRowsVjp"),  bufferOf(o.p, "distillRowsVjp"),
                               bufferOf(o.t, "distillRowsVjp"),  bufferOf(o.cdiv, "distillRowsVjp"),
                               bufferOf(gy, "distillRowsVjp"), bufferOf(gx, "distillRowsVjp")};
  const uint64_t row = 4 * static_cast<uint64_t>(l.n);
  const uint64_t row_bytes[6] = {row, row, d.labels.valid() ? 8u : 0u, 0, rows_gy ? 4u : 0u, row};
  std::vector<uint32_t> extra = constants(d);
  extra.push_back(rows_gy ? 1 : 0);
  dispatchRows(vjpSource(), buffers, l, inverse(d.temperature), extra, row_bytes);
  return gx;
}

}  // namespace fucina::backend::webgpu
