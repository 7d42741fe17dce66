// crossEntropyExt (torch's cross_entropy with every option, plus a z-loss) and the chunked linear
// heads built on the same row kernels: linearCrossEntropyExt and linearDistillExt. Each loss is
// computed row by row from a row's log-softmax and logsumexp; each gradient is fused, per row
// f·(a·softmax - b) (f the upstream factor of the row, a and b from the target). The linear heads
// compute the logits options.chunk_rows rows at a time with one GEMM and recompute them in the
// backward pass, so neither the logits nor their gradient exist whole.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/softmax.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/labels.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::Labels;
using ops::NeedsGrad;

namespace {

// Row r's label (Labels hold contiguous i64).
int64_t labelAt(const Labels& l, int64_t r) { return l.values.data<int64_t>()[r]; }

// logsumexp of scale·x over a row of n (max subtracted; the sum in double).
double logSumExp(const float* x, int64_t n, float scale = 1.0f) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, scale * x[i]);
  if (std::isinf(m)) return m;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(scale * x[i] - m);
  return static_cast<double>(m) + std::log(s);
}

// out = log_softmax(x) over a row of n (out may be x); returns the row's logsumexp.
double logSoftmaxRow(const float* x, float* out, int64_t n) {
  const double lse = logSumExp(x, n);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(x[i] - lse);
  return lse;
}

// The cross-entropy row formulas of CrossEntropyExtOptions' comment, for one call's constants.
// lp is a row's log-softmax, lse its logsumexp; the gradient rows are f·(a·exp(lp) - b).
struct CeRows {
  int64_t C = 0;
  double s = 0, z = 0;     // label smoothing, z-loss coefficient
  RawTensor weights;       // class weights (contiguous f32), or invalid
  const float* w = nullptr;
  double wsum = 0;         // sum of the class weights (C without)

  double weight(int64_t c) const { return w ? w[c] : 1.0; }
  double smoothed(float t) const { return (1 - s) * t + s / static_cast<double>(C); }

  double labelLoss(const float* lp, int64_t y, double lse) const {
    double smooth = 0;
    if (s > 0)
      for (int64_t c = 0; c < C; ++c) smooth += weight(c) * lp[c];
    return -(1 - s) * weight(y) * lp[y] - s / static_cast<double>(C) * smooth + z * lse * lse;
  }
  double softLoss(const float* lp, const float* t, double lse) const {
    double acc = 0;
    for (int64_t c = 0; c < C; ++c) acc += weight(c) * smoothed(t[c]) * lp[c];
    return -acc + z * lse * lse;
  }
  // a = (1-s)·w[y] + (s/C)·sum w + 2z·lse; b[c] = (s/C)·w[c] + (1-s)·w[y]·[c == y]. out may be lp.
  void labelGrad(const float* lp, int64_t y, double lse, float f, float* out) const {
    const double sc = s / static_cast<double>(C);
    const auto a = static_cast<float>(f * ((1 - s) * weight(y) + sc * wsum + 2 * z * lse));
    if (w == nullptr) {
      const auto b = static_cast<float>(f * sc);
      for (int64_t c = 0; c < C; ++c) out[c] = a * std::exp(lp[c]) - b;
    } else {
      for (int64_t c = 0; c < C; ++c) out[c] = a * std::exp(lp[c]) - static_cast<float>(f * sc * w[c]);
    }
    out[y] -= static_cast<float>(f * (1 - s) * weight(y));
  }
  // a = sum_k w[k]·t'[k] + 2z·lse; b[c] = w[c]·t'[c].
  void softGrad(const float* lp, const float* t, double lse, float f, float* out) const {
    double a = 2 * z * lse;
    for (int64_t c = 0; c < C; ++c) a += weight(c) * smoothed(t[c]);
    for (int64_t c = 0; c < C; ++c)
      out[c] = static_cast<float>(f * (a * std::exp(lp[c]) - weight(c) * smoothed(t[c])));
  }
  // The soft target's gradient: -f·(1-s)·w[c]·lp[c].
  void targetGrad(const float* lp, float f, float* out) const {
    for (int64_t c = 0; c < C; ++c) out[c] = static_cast<float>(-f * (1 - s) * weight(c) * lp[c]);
  }
};

CeRows ceRows(ExecContext& ctx, std::string_view op, const CrossEntropyExtOptions& o, Tag class_axis, int64_t C) {
  if (!(o.label_smoothing >= 0.0 && o.label_smoothing < 1.0))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": label_smoothing must be in [0, 1), got " +
                                         std::to_string(o.label_smoothing));
  if (!(o.z_loss >= 0.0) || !std::isfinite(o.z_loss))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": z_loss must be finite and >= 0, got " + std::to_string(o.z_loss));
  if (C == 0) fail(ErrorCode::InvalidArgument, std::string(op) + ": the class axis is empty");
  CeRows r;
  r.C = C;
  r.s = o.label_smoothing;
  r.z = o.z_loss;
  r.wsum = static_cast<double>(C);
  if (o.weight == nullptr) return r;
  const Tensor& w = *o.weight;
  if (w.rank() != 1 || !(w.tags()[0] == class_axis) || w.shape()[0] != C)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the class weight must have the single axis " +
                                       quoted(class_axis) + " of extent " + std::to_string(C) + ", got " +
                                       w.value().describe());
  if (w.requiresGrad() && isGradEnabled())
    fail(ErrorCode::UnsupportedGradient, std::string(op) + ": the class weight takes no gradient; detach it");
  if (w.dtype() != DType::f32) ops::typedResult(op, {&w});  // 16-bit converts below; others fail
  r.weights = w.value().to(ctx, DType::f32).contiguous(ctx);
  r.w = r.weights.f32();
  r.wsum = 0;
  for (int64_t c = 0; c < C; ++c) r.wsum += r.w[c];
  return r;
}

// The per-row losses reduced as asked: a scalar (sum; mean divides by denom), or the rows.
RawTensor reduceLoss(ExecContext& ctx, const Scratch<double>& loss, const Tags& tags, const Extents& shape,
                     Reduction r, double denom) {
  if (r == Reduction::none) {
    RawTensor out = RawTensor::empty(ctx, tags, shape);
    float* o = out.f32();
    for (size_t i = 0; i < loss.size(); ++i) o[i] = static_cast<float>(loss[i]);
    return out;
  }
  double total = 0;
  for (double v : loss) total += v;
  return RawTensor::full(ctx, {}, {}, r == Reduction::mean ? total / denom : total);
}

// Each row's upstream factor: gy (a scalar, or the rows for Reduction::none, in tags' order),
// divided by denom for mean; 0 for rows that do not count.
template <class Counted>
std::vector<float> rowFactors(ExecContext& ctx, const RawTensor& gy, const Tags& tags, Reduction r, double denom,
                              int64_t rows, Counted counted) {
  std::vector<float> f(static_cast<size_t>(rows), 0.0f);
  if (r == Reduction::none) {
    const RawTensor g = gy.permuted(tags).contiguous(ctx);
    for (int64_t i = 0; i < rows; ++i)
      if (counted(i)) f[static_cast<size_t>(i)] = g.f32()[i];
    return f;
  }
  const double g = *gy.contiguous(ctx).f32();
  const auto v = static_cast<float>(r == Reduction::mean ? g / denom : g);
  for (int64_t i = 0; i < rows; ++i)
    if (counted(i)) f[static_cast<size_t>(i)] = v;
  return f;
}

// The row axes of logits laid out with the class axis last.
Tags rowTags(const RawTensor& rows_last) { return Tags(rows_last.tags().begin(), rows_last.tags().end() - 1); }
Extents rowShape(const RawTensor& rows_last) { return Extents(rows_last.shape().begin(), rows_last.shape().end() - 1); }

int64_t rowGrain(int64_t C) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)); }

// The mean's denominator with integer labels: the sum of w[y] over the counted rows.
double labelDenominator(const Labels& lab, const CeRows& spec, int64_t ignore) {
  double d = 0;
  for (int64_t r = 0; r < lab.rows(); ++r)
    if (labelAt(lab, r) != ignore) d += spec.weight(labelAt(lab, r));
  return d;
}

// ShapeMismatch unless t has the logits' axes and extents (any order).
void requireLogitsAxes(std::string_view op, const char* what, const RawTensor& t, const RawTensor& logits) {
  bool same = t.rank() == logits.rank();
  for (size_t i = 0; same && i < logits.rank(); ++i)
    same = hasTag(t.tags(), logits.tags()[i]) && t.extent(logits.tags()[i]) == logits.shape()[i];
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": " + what + " " + t.describe() + " must have the logits' axes " +
                                       logits.describe());
}

}  // namespace

Tensor Tensor::crossEntropyExt(ExecContext& ctx, const Tensor& target, Tag class_axis,
                               const CrossEntropyExtOptions& o) const {
  static constexpr std::string_view op = "crossEntropyExt";
  const bool soft = !ops::isInteger(target.dtype());
  if (soft && !ops::allF32({this, &target}))
    return ops::viaF32(ctx, op, {this, &target}, [&](std::span<const Tensor> f) { return f[0].crossEntropyExt(ctx, f[1], class_axis, o); });
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, op, {this}, [&](std::span<const Tensor> f) { return f[0].crossEntropyExt(ctx, target, class_axis, o); });
  const RawTensor in = kernels::axisLast(ctx, value(), class_axis);
  const int64_t C = in.extent(class_axis);
  CeRows spec = ceRows(ctx, op, o, class_axis, C);
  const int64_t rows = in.numel() / C;
  Labels lab;
  RawTensor tgt;  // soft targets laid out as `in`
  if (soft) {
    requireLogitsAxes(op, "soft targets", target.value(), in);
    tgt = target.value().permuted(in.tags()).contiguous(ctx);
  } else {
    lab = ops::readLabels(ctx, op, value(), target, class_axis, o.ignore_index);
  }
  const int64_t ignore = o.ignore_index;
  auto counted = [&lab, soft, ignore](int64_t r) { return soft || labelAt(lab, r) != ignore; };
  RawTensor logp = RawTensor::empty(ctx, in.tags(), in.shape());
  Scratch<double> lse(ctx.account(), static_cast<size_t>(rows));
  const Scratch<double> loss(ctx.account(), static_cast<size_t>(rows));
  ctx.parallelFor(rows, rowGrain(C), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* lp = logp.f32() + r * C;
      lse[static_cast<size_t>(r)] = logSoftmaxRow(in.f32() + r * C, lp, C);
      const double l = lse[static_cast<size_t>(r)];
      loss[static_cast<size_t>(r)] = soft ? spec.softLoss(lp, tgt.f32() + r * C, l)
                                          : (counted(r) ? spec.labelLoss(lp, labelAt(lab, r), l) : 0.0);
    }
  });
  const double denom = soft ? static_cast<double>(rows) : labelDenominator(lab, spec, ignore);
  RawTensor out = reduceLoss(ctx, loss, rowTags(in), rowShape(in), o.reduction, denom);
  return ops::finishOp(ctx, op, std::move(out), {this, &target}, [&] {
    return [logp, lse = std::move(lse), lab = std::move(lab), tgt, spec = std::move(spec), reduction = o.reduction,
            denom, ignore, soft, C, rows](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      auto counted = [&](int64_t r) { return soft || labelAt(lab, r) != ignore; };
      const std::vector<float> f = rowFactors(c, gy, rowTags(logp), reduction, denom, rows, counted);
      RawTensor gx = needs[0] ? RawTensor::empty(c, logp.tags(), logp.shape()) : RawTensor();
      RawTensor gt = needs[1] ? RawTensor::empty(c, logp.tags(), logp.shape()) : RawTensor();
      c.parallelFor(rows, rowGrain(C), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const float* lp = logp.f32() + r * C;
          const float fr = f[static_cast<size_t>(r)];
          const double l = lse[static_cast<size_t>(r)];
          if (gx.valid()) {
            float* o = gx.f32() + r * C;
            if (!counted(r)) std::fill(o, o + C, 0.0f);
            else if (soft) spec.softGrad(lp, tgt.f32() + r * C, l, fr, o);
            else spec.labelGrad(lp, labelAt(lab, r), l, fr, o);
          }
          if (gt.valid()) spec.targetGrad(lp, fr, gt.f32() + r * C);
        }
      });
      if (gx.valid()) g[0] = std::move(gx);  // laid out as logp; the engine restores the axis order
      if (gt.valid()) g[1] = std::move(gt);
    };
  }, static_cast<size_t>(in.numel()) * 6);
}

namespace {

// A linear head's operands laid out for GEMMs: X [R, d] (x's row axes in x's order, then axis)
// and W [V, d]; the logits X·Wᵀ have the row axes then class_axis.
struct LinearHead {
  RawTensor X, W;
  Tags row_tags;
  Extents row_shape;
  Tag class_axis = "class";
  int64_t R = 0, d = 0, V = 0, chunk = 1;

  // A zero-stride stand-in for the logits (row axes, then class_axis), for their shape only.
  RawTensor logitsShape(ExecContext& ctx) const {
    Tags t = row_tags;
    Extents s = row_shape;
    t.push_back(class_axis);
    s.push_back(V);
    return RawTensor::full(ctx, {}, {}, 0.0).broadcastView(t, s);
  }

  // Runs row(r, logits_r) over every row's logits, chunk by chunk (row may overwrite the logits
  // in place with their gradient); then, when gX / gW are given, gX's rows = G·W and gW += Gᵀ·X
  // for the chunk's rewritten rows G.
  template <class Row>
  void forEachChunk(ExecContext& ctx, Row row, float* gX = nullptr, float* gW = nullptr) const {
    if (R == 0) return;
    Scratch<float> buf(ctx.account(), static_cast<size_t>(std::min(chunk, R) * V));
    for (int64_t r0 = 0; r0 < R; r0 += chunk) {
      const int64_t n = std::min(chunk, R - r0);
      const float* x = X.f32() + r0 * d;
      kernels::gemm(ctx, false, true, n, V, d, x, d, W.f32(), d, buf.data(), V, false);
      ctx.parallelFor(n, rowGrain(V), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) row(r0 + i, buf.data() + i * V);
      });
      if (gX) kernels::gemm(ctx, false, false, n, d, V, buf.data(), V, W.f32(), d, gX + r0 * d, d, false);
      if (gW) kernels::gemm(ctx, true, false, V, d, n, buf.data(), V, x, d, gW, d, true);
    }
  }

  // The gradients of X and W (those asked for) from a row function writing each row's logit
  // gradient in place.
  template <class Row>
  void backward(ExecContext& ctx, NeedsGrad needs, Grads g, Row row) const {
    RawTensor gx = needs[0] ? RawTensor::empty(ctx, X.tags(), X.shape()) : RawTensor();
    RawTensor gw = needs[1] ? RawTensor::zeros(ctx, W.tags(), W.shape()) : RawTensor();
    forEachChunk(ctx, row, gx.valid() ? gx.f32() : nullptr, gw.valid() ? gw.f32() : nullptr);
    if (gx.valid()) g[0] = std::move(gx);
    if (gw.valid()) g[1] = std::move(gw);
  }
};

LinearHead linearHead(ExecContext& ctx, std::string_view op, const Tensor& x, const Tensor& weight, Tag axis,
                      Tag class_axis, int64_t chunk) {
  const RawTensor& a = x.value();
  const RawTensor& w = weight.value();
  if (chunk < 1) fail(ErrorCode::InvalidArgument, std::string(op) + ": chunk_rows must be >= 1, got " + std::to_string(chunk));
  if (w.rank() != 2 || !hasTag(w.tags(), axis) || !hasTag(w.tags(), class_axis) || axis == class_axis)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the weight must have exactly the axes " + quoted(class_axis) +
                                       " and " + quoted(axis) + ", got " + w.describe());
  if (!hasTag(a.tags(), axis) || hasTag(a.tags(), class_axis) || a.extent(axis) != w.extent(axis))
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the input " + a.describe() + " must have " + quoted(axis) +
                                       " (extent " + std::to_string(w.extent(axis)) + ") and not " +
                                       quoted(class_axis));
  LinearHead h;
  h.class_axis = class_axis;
  for (size_t i = 0; i < a.rank(); ++i)
    if (!(a.tags()[i] == axis)) h.row_tags.push_back(a.tags()[i]), h.row_shape.push_back(a.shape()[i]);
  Tags order = h.row_tags;
  order.push_back(axis);
  h.X = a.permuted(order).contiguous(ctx);
  h.W = w.permuted({class_axis, axis}).contiguous(ctx);
  h.d = w.extent(axis);
  h.V = w.extent(class_axis);
  h.R = h.d == 0 ? numelOf(h.row_shape) : a.numel() / h.d;
  h.chunk = chunk;
  return h;
}

}  // namespace

Tensor Tensor::linearCrossEntropyExt(ExecContext& ctx, const Tensor& weight, const Tensor& labels, Tag axis,
                                     Tag class_axis, const CrossEntropyExtOptions& o) const {
  static constexpr std::string_view op = "linearCrossEntropyExt";
  if (!ops::allF32({this, &weight}))
    return ops::viaF32(ctx, op, {this, &weight}, [&](std::span<const Tensor> f) {
      return f[0].linearCrossEntropyExt(ctx, f[1], labels, axis, class_axis, o);
    });
  if (!ops::isInteger(labels.dtype()))
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": labels must be i32 or i64 (soft targets are crossEntropyExt's), got " +
                                       std::string(name(labels.dtype())));
  LinearHead h = linearHead(ctx, op, *this, weight, axis, class_axis, o.chunk_rows);
  CeRows spec = ceRows(ctx, op, o, class_axis, h.V);
  Labels lab = ops::readLabels(ctx, op, h.logitsShape(ctx), labels, class_axis, o.ignore_index);
  const int64_t ignore = o.ignore_index;
  const Scratch<double> loss(ctx.account(), static_cast<size_t>(h.R), 0.0);
  h.forEachChunk(ctx, [&](int64_t r, float* row) {
    if (labelAt(lab, r) == ignore) return;
    const double lse = logSoftmaxRow(row, row, h.V);
    loss[static_cast<size_t>(r)] = spec.labelLoss(row, labelAt(lab, r), lse);
  });
  const double denom = labelDenominator(lab, spec, ignore);
  RawTensor out = reduceLoss(ctx, loss, h.row_tags, h.row_shape, o.reduction, denom);
  return ops::finishOp(ctx, op, std::move(out), {this, &weight}, [&] {
    return [h = std::move(h), spec = std::move(spec), lab = std::move(lab), reduction = o.reduction, denom, ignore](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const std::vector<float> f =
          rowFactors(c, gy, h.row_tags, reduction, denom, h.R, [&](int64_t r) { return labelAt(lab, r) != ignore; });
      h.backward(c, needs, g, [&](int64_t r, float* row) {
        if (f[static_cast<size_t>(r)] == 0.0f) return std::fill(row, row + h.V, 0.0f);
        const double lse = logSoftmaxRow(row, row, h.V);
        spec.labelGrad(row, labelAt(lab, r), lse, f[static_cast<size_t>(r)], row);
      });
    };
  }, static_cast<size_t>(6 * h.R * h.V * std::max<int64_t>(1, h.d)));
}

Tensor Tensor::linearDistillExt(ExecContext& ctx, const Tensor& weight, const Tensor& teacher, Tag axis, Tag class_axis,
                                const DistillOptions& o) const {
  static constexpr std::string_view op = "linearDistillExt";
  if (!ops::allF32({this, &weight, &teacher}))
    return ops::viaF32(ctx, op, {this, &weight, &teacher}, [&](std::span<const Tensor> f) {
      return f[0].linearDistillExt(ctx, f[1], f[2], axis, class_axis, o);
    });
  if (!(o.temperature > 0) || !std::isfinite(o.temperature))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": temperature must be finite and > 0, got " + std::to_string(o.temperature));
  if (!(o.alpha >= 0 && o.alpha <= 1))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": alpha must be in [0, 1], got " + std::to_string(o.alpha));
  if (o.alpha > 0 && o.labels == nullptr)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": alpha > 0 mixes in the hard-label loss and needs labels");
  if (teacher.requiresGrad() && isGradEnabled())
    fail(ErrorCode::UnsupportedGradient, std::string(op) + ": the teacher takes no gradient; detach it");
  LinearHead h = linearHead(ctx, op, *this, weight, axis, class_axis, o.chunk_rows);
  if (h.V == 0) fail(ErrorCode::InvalidArgument, std::string(op) + ": the class axis is empty");
  const RawTensor logits = h.logitsShape(ctx);
  const RawTensor& t = teacher.value();
  requireLogitsAxes(op, "the teacher", t, logits);
  const bool hard = o.alpha > 0;
  Labels lab = hard ? ops::readLabels(ctx, op, logits, *o.labels, class_axis, o.ignore_index) : Labels{};
  // The teacher's distribution p at temperature T as [R, V], saved for the backward pass (the
  // teacher is whole already, so chunking it would not lower the peak); log p is log of it.
  const int64_t R = h.R, V = h.V;
  const auto invT = static_cast<float>(1.0 / o.temperature);
  RawTensor tp = t.permuted(logits.tags()).contiguous(ctx);
  if (!o.teacher_probs) {
    if (tp.storage() == t.storage()) tp = tp.clone(ctx);  // softmaxed in place below
    ctx.parallelFor(R, rowGrain(V), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        float* p = tp.f32() + r * V;
        const double lse = logSumExp(p, V, invT);
        for (int64_t c = 0; c < V; ++c) p[c] = static_cast<float>(std::exp(invT * p[c] - lse));
      }
    });
  }
  const double T = o.temperature, alpha = o.alpha;
  const int64_t ignore = o.ignore_index;
  auto counted = [hard, &lab, ignore](int64_t r) { return hard && labelAt(lab, r) != ignore; };
  const Scratch<double> kd(ctx.account(), static_cast<size_t>(R), 0.0), ce(ctx.account(), static_cast<size_t>(R), 0.0);
  h.forEachChunk(ctx, [&](int64_t r, float* row) {
    const float* p = tp.f32() + r * V;
    const double lseT = logSumExp(row, V, invT);
    double acc = 0;
    for (int64_t c = 0; c < V; ++c)
      if (p[c] > 0) acc += p[c] * (std::log(p[c]) - (invT * row[c] - lseT));
    kd[static_cast<size_t>(r)] = T * T * acc;
    if (counted(r)) ce[static_cast<size_t>(r)] = logSumExp(row, V) - row[labelAt(lab, r)];
  });
  int64_t count = 0;
  for (int64_t r = 0; r < R; ++r) count += counted(r);
  const Scratch<double> loss(ctx.account(), static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    const auto i = static_cast<size_t>(r);
    loss[i] = o.reduction == Reduction::mean
                  ? (1 - alpha) * kd[i] / static_cast<double>(R) + (hard ? alpha * ce[i] / static_cast<double>(count) : 0.0)
                  : (1 - alpha) * kd[i] + alpha * ce[i];
  }
  // The mean is already in the per-row terms: reduce by summing.
  RawTensor out = reduceLoss(ctx, loss, h.row_tags, h.row_shape,
                             o.reduction == Reduction::mean ? Reduction::sum : o.reduction, 1.0);
  return ops::finishOp(ctx, op, std::move(out), {this, &weight, &teacher}, [&] {
    return [h = std::move(h), tp, lab = std::move(lab), reduction = o.reduction, T, invT, alpha, hard, ignore, count](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const int64_t R = h.R, V = h.V;
      auto all = [](int64_t) { return true; };
      auto counted = [&](int64_t r) { return hard && labelAt(lab, r) != ignore; };
      // d KD / d s = T·(q - p); d CE / d s = softmax(s) - onehot(y).
      const std::vector<float> fk = rowFactors(c, gy, h.row_tags, reduction, static_cast<double>(R), R, all);
      const std::vector<float> fc = rowFactors(c, gy, h.row_tags, reduction, static_cast<double>(count), R, counted);
      h.backward(c, needs, g, [&](int64_t r, float* row) {
        const auto i = static_cast<size_t>(r);
        const auto k = static_cast<float>((1 - alpha) * T * fk[i]);
        const auto a = static_cast<float>(alpha * fc[i]);
        const float* p = tp.f32() + r * V;
        const auto lseT = static_cast<float>(logSumExp(row, V, invT));
        const auto lse1 = static_cast<float>(counted(r) ? logSumExp(row, V) : 0.0);
        for (int64_t cl = 0; cl < V; ++cl) {
          const float sv = row[cl];
          row[cl] = k * (std::exp(invT * sv - lseT) - p[cl]) + (a != 0.0f ? a * std::exp(sv - lse1) : 0.0f);
        }
        if (counted(r)) row[labelAt(lab, r)] -= a;
      });
    };
  }, static_cast<size_t>(6 * h.R * h.V * std::max<int64_t>(1, h.d)));
}

}  // namespace fucina
