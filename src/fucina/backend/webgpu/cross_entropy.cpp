// crossEntropyExt's rows (Kernels::crossEntropyRows and its VJP) on the device: one workgroup per
// row (the class axis last, contiguous f32) computes its log-softmax, logsumexp and loss, with
// labels (i64, an ignored label's row 0) or soft targets, label smoothing, class weights and the
// z-loss, as the cpu's rows (backend/cpu/cross_entropy_rows.cpp). The logsumexp and the losses
// are f32 here (the cpu's are f64; WGSL has none), which reduceLoss and the VJP take as they are.
// The labels' mean divides by their weight sum, which stays on the device as a tensor
// (labelWeightSum): the scalar's factor gy/denom is divided there before the VJP's rows.
#include <string>
#include <vector>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

using CE = Kernels::CrossEntropy;

// Uniform words from 3 on (after rows, n and the smoothing s): z, weights given, soft targets,
// the ignored label's two words; the VJP's then gy per row, the mean's denominator (f32), and
// which gradients to write.
constexpr const char* kConstants =
    "  let s = uf(2u);\n  let z = uf(3u);\n  let has_w = uw(4u) == 1u;\n  let soft = uw(5u) == 1u;\n"
    "  let C = f32(n);\n";

// The row's label, clamped into [0, n) (a label out of range is reported by readLabels' check),
// and whether it is the ignored one.
constexpr const char* kLabel =
    "  let lo = t[2u * row];\n  let hi = t[2u * row + 1u];\n"
    "  let ignored = !soft && lo == uw(6u) && hi == uw(7u);\n"
    "  var y = 0u;\n"
    "  if (!soft) { y = select(min(lo, n - 1u), select(n - 1u, 0u, (hi >> 31u) == 1u), hi != 0u); }\n"
    "  let wy = select(1.0, w[y], has_w);\n";

std::string forwardSource() {
  return prelude(6) + readBinding(0, "x") + readBinding(1, "t", "u32") + readBinding(2, "w") +
         writeBinding(3, "lp") + writeBinding(4, "lse_out") + writeBinding(5, "loss") + rowKernelHead() + kConstants +
         "  var m = from_bits(0xff800000u);\n"
         "  for (var c = l; c < n; c = c + 256u) { m = max(m, x[base + c]); }\n"
         "  m = reduce(l, m, true);\n"
         "  var e = 0.0;\n"
         "  for (var c = l; c < n; c = c + 256u) { e = e + exp(x[base + c] - m); }\n"
         "  e = reduce(l, e, false);\n"
         "  let lse = select(m, m + log(e), is_finite(m));\n"
         // soft: Σ w·t'·lp, t' = (1 - s)·t + s/C; labels: Σ w·lp (the smoothing's)
         "  var part = 0.0;\n"
         "  for (var c = l; c < n; c = c + 256u) {\n"
         "    let v = x[base + c] - lse;\n    lp[base + c] = v;\n"
         "    let wc = select(1.0, w[c], has_w);\n"
         "    part = part + select(wc * v, wc * ((1.0 - s) * bitcast<f32>(t[base + c]) + s / C) * v, soft);\n"
         "  }\n"
         "  part = reduce(l, part, false);\n"
         "  if (l != 0u) { return; }\n" + kLabel +
         "  lse_out[row] = lse;\n"
         "  if (soft) { loss[row] = -part + z * lse * lse; return; }\n"
         "  let lpy = x[base + y] - lse;\n"
         "  loss[row] = select(-(1.0 - s) * wy * lpy - s / C * part + z * lse * lse, 0.0, ignored);\n"
         "}\n";
}

// gx = f·(a·exp(lp) - b) and gt = -f·(1 - s)·w·lp, f the row's factor (0 for an ignored row).
std::string vjpSource() {
  return prelude(7) + readBinding(0, "lp") + readBinding(1, "lse_in") + readBinding(2, "t", "u32") +
         readBinding(3, "w") + readBinding(4, "gy") + writeBinding(5, "gx") + writeBinding(6, "gt") + rowKernelHead() +
         kConstants + kLabel +
         "  var f = select(gy[0] / uf(9u), gy[row], uw(8u) == 1u);\n"
         "  if (ignored) { f = 0.0; }\n"
         "  let lse = lse_in[row];\n"
         // soft: Σ w·t'; labels: Σ w
         "  var part = 0.0;\n"
         "  for (var c = l; c < n; c = c + 256u) {\n"
         "    let wc = select(1.0, w[c], has_w);\n"
         "    part = part + select(wc, wc * ((1.0 - s) * bitcast<f32>(t[base + c]) + s / C), soft);\n"
         "  }\n"
         "  part = reduce(l, part, false);\n"
         "  let a = select((1.0 - s) * wy + s / C * part, part, soft) + 2.0 * z * lse;\n"
         "  for (var c = l; c < n; c = c + 256u) {\n"
         "    let wc = select(1.0, w[c], has_w);\n"
         "    let v = lp[base + c];\n"
         "    var b = s / C * wc + select(0.0, (1.0 - s) * wy, c == y);\n"
         "    if (soft) { b = wc * ((1.0 - s) * bitcast<f32>(t[base + c]) + s / C); }\n"
         "    if (uw(10u) == 1u) { gx[base + c] = f * (a * exp(v) - b); }\n"
         "    if (uw(11u) == 1u) { gt[base + c] = -f * (1.0 - s) * wc * v; }\n"
         "  }\n"
         "}\n";
}

// Σ w[y] over the labels (i64 words) that are not the ignored one, or their count: one workgroup.
std::string weightSumSource() {
  return prelude(3) + readBinding(0, "t", "u32") + readBinding(1, "w") + writeBinding(2, "out") + rowKernelHead() +
         "  let has_w = uw(3u) == 1u;\n  let C = uw(4u);\n"
         "  var part = 0.0;\n"
         "  for (var r = l; r < n; r = r + 256u) {\n"
         "    let lo = t[2u * r];\n    let hi = t[2u * r + 1u];\n"
         "    if (lo == uw(5u) && hi == uw(6u)) { continue; }\n"
         "    let y = select(min(lo, C - 1u), select(C - 1u, 0u, (hi >> 31u) == 1u), hi != 0u);\n"
         "    part = part + select(1.0, w[y], has_w);\n"
         "  }\n"
         "  part = reduce(l, part, false);\n"
         "  if (l == 0u) { out[0] = part; }\n"
         "}\n";
}

Tags rowTags(const RawTensor& x) { return Tags(x.tags().begin(), x.tags().end() - 1); }
Extents rowShape(const RawTensor& x) { return Extents(x.shape().begin(), x.shape().end() - 1); }

// The uniform words from 3 on that both kernels read.
std::vector<uint32_t> constants(const CE& ce, bool soft) {
  Uniforms u;
  u.f(static_cast<float>(ce.z_loss)).u(ce.weights.valid() ? 1 : 0).u(soft ? 1 : 0);
  const auto ignore = static_cast<uint64_t>(ce.ignore);  // its two words, low first
  u.words.push_back(static_cast<uint32_t>(ignore));
  u.words.push_back(static_cast<uint32_t>(ignore >> 32));
  return u.words;
}

}  // namespace

Kernels::Divisor labelWeightSum(ExecContext& ctx, const RawTensor& labels, const RawTensor& weights, int64_t ignore) {
  if (labels.numel() == 0) return 0.0;
  const RawTensor t = whole(ctx, labels), w = weights.valid() ? whole(ctx, weights) : placeholder(ctx);
  RawTensor out = RawTensor::empty(ctx, {}, {});
  const uint32_t buffers[3] = {bufferOf(t, "labelWeightSum"), bufferOf(w, "labelWeightSum"),
                               bufferOf(out, "labelWeightSum")};
  const auto ign = static_cast<uint64_t>(ignore);
  const uint32_t extra[4] = {weights.valid() ? 1u : 0u, static_cast<uint32_t>(weights.valid() ? weights.numel() : 1),
                             static_cast<uint32_t>(ign), static_cast<uint32_t>(ign >> 32)};
  dispatchRows(weightSumSource(), buffers, RowLayout{1, labels.numel()}, 0, extra);
  return Kernels::Divisor(std::move(out));
}

Kernels::CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x_in, const CE& ce, bool /*in_place*/) {
  // in_place only lets a backend write over x: these rows go to a tensor of their own.
  const RawTensor x = rowsOf(ctx, x_in, "crossEntropyRows");
  const bool soft = ce.target.dtype() != DType::i64;
  Kernels::CrossEntropyRows out{RawTensor::empty(ctx, x.tags(), x.shape()), RawTensor::empty(ctx, rowTags(x), rowShape(x)),
                                RawTensor::empty(ctx, rowTags(x), rowShape(x))};
  const RowLayout l = rowLayout(x);
  if (l.rows == 0) return out;
  if (l.n == 0) unsupported("cross-entropy rows of no classes");
  const RawTensor t = whole(ctx, ce.target), w = ce.weights.valid() ? whole(ctx, ce.weights) : placeholder(ctx);
  const uint32_t buffers[6] = {bufferOf(x, "crossEntropyRows"), bufferOf(t, "crossEntropyRows"),
                               bufferOf(w, "crossEntropyRows"), bufferOf(out.logp, "crossEntropyRows"),
                               bufferOf(out.lse, "crossEntropyRows"), bufferOf(out.loss, "crossEntropyRows")};
  const uint64_t row = 4 * static_cast<uint64_t>(l.n);
  const uint64_t row_bytes[6] = {row, soft ? row : 8, 0, row, 4, 4};
  dispatchRows(forwardSource(), buffers, l, static_cast<float>(ce.smoothing), constants(ce, soft), row_bytes);
  return out;
}

Kernels::CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp_in, const RawTensor& lse,
                                               const CE& ce, const RawTensor& gy_in, const Kernels::Divisor& denom,
                                               bool need_x, bool need_target, bool in_place) {
  if (!lse.valid()) {  // lp_in holds logits (a linear head's chunk): their rows first
    const Kernels::CrossEntropyRows rows = crossEntropyRows(ctx, lp_in, ce, in_place);
    return crossEntropyRowsVjp(ctx, rows.logp, rows.lse, ce, gy_in, denom, need_x, need_target, in_place);
  }
  if (denom.tensor.valid() && gy_in.rank() == 0) {
    const RawTensor* in[2] = {&gy_in, &denom.tensor};
    const RawTensor f = map(ctx, ElemOp::Div, Form::fwd, {}, {}, in, {});
    return crossEntropyRowsVjp(ctx, lp_in, lse, ce, f, 1.0, need_x, need_target, in_place);
  }
  const RawTensor lp = rowsOf(ctx, lp_in, "crossEntropyRowsVjp");
  const bool soft = ce.target.dtype() != DType::i64;
  const bool rows_gy = gy_in.rank() > 0;
  Kernels::CrossEntropyGrads out;
  out.x = need_x ? RawTensor::empty(ctx, lp.tags(), lp.shape()) : placeholder(ctx);
  out.target = need_target ? RawTensor::empty(ctx, lp.tags(), lp.shape()) : placeholder(ctx);
  const RowLayout l = rowLayout(lp);
  if (l.rows > 0 && l.n > 0) {
    const RawTensor t = whole(ctx, ce.target), w = ce.weights.valid() ? whole(ctx, ce.weights) : placeholder(ctx);
    const RawTensor gy = whole(ctx, gy_in), s = whole(ctx, lse);
    const uint32_t buffers[7] = {bufferOf(lp, "crossEntropyRowsVjp"), bufferOf(s, "crossEntropyRowsVjp"),
                                 bufferOf(t, "crossEntropyRowsVjp"), bufferOf(w, "crossEntropyRowsVjp"),
                                 bufferOf(gy, "crossEntropyRowsVjp"), bufferOf(out.x, "crossEntropyRowsVjp"),
                                 bufferOf(out.target, "crossEntropyRowsVjp")};
    const uint64_t row = 4 * static_cast<uint64_t>(l.n);
    const uint64_t row_bytes[7] = {row, 4, soft ? row : 8, 0, rows_gy ? 4u : 0u, need_x ? row : 0, need_target ? row : 0};
    std::vector<uint32_t> extra = constants(ce, soft);
    Uniforms more;
    more.u(rows_gy ? 1 : 0).f(static_cast<float>(denom.value)).u(need_x ? 1 : 0).u(need_target ? 1 : 0);
    extra.insert(extra.end(), more.words.begin(), more.words.end());
    dispatchRows(vjpSource(), buffers, l, static_cast<float>(ce.smoothing), extra, row_bytes);
  }
  if (!need_x) out.x = RawTensor();
  if (!need_target) out.target = RawTensor();
  return out;
}

}  // namespace fucina::backend::webgpu
