// The cross-entropy and distillation rows as the plain loops: log-softmax, losses and gradients
// of each row in f64, rounded to f32 only where stored.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fucina/backend/reference/row_kernels.h"

namespace fucina::backend::reference {

namespace {

Tags rowTags(const RawTensor& t) { return Tags(t.tags().begin(), t.tags().end() - 1); }
Extents rowShape(const RawTensor& t) { return Extents(t.shape().begin(), t.shape().end() - 1); }

// logsumexp of scale·x over a row of n, max subtracted.
double logSumExp(const float* x, int64_t n, double scale = 1.0) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, scale * x[i]);
  if (std::isinf(m)) return m;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(scale * x[i] - m);
  return m + std::log(s);
}

double weightOf(const RawTensor& w, int64_t c) { return w.valid() ? static_cast<double>(w.f32()[c]) : 1.0; }

// Upstream factor of row r: gy's rows, or the scalar gy over denom; 0 where the row is ignored.
double factorOf(const RawTensor& gy, double denom, int64_t r, bool ignored) {
  if (ignored) return 0;
  return gy.rank() > 0 ? static_cast<double>(gy.f32()[r]) : static_cast<double>(gy.f32()[0]) / denom;
}

}  // namespace

double labelWeightSum(ExecContext&, const RawTensor& labels, const RawTensor& weights, int64_t ignore) {
  double d = 0;
  if (labels.numel() == 0) return d;
  for (int64_t r = 0; r < labels.numel(); ++r) {
    const int64_t y = labels.data<int64_t>()[r];
    if (y != ignore) d += weightOf(weights, y);
  }
  return d;
}

Kernels::CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x, const Kernels::CrossEntropy& ce,
                                           bool in_place) {
  const RowLayout l = rowLayout(x);
  const int64_t C = l.n;
  const bool soft = ce.target.dtype() != DType::i64;
  const double s = ce.smoothing;
  Kernels::CrossEntropyRows out;
  out.logp = in_place ? x : RawTensor::empty(ctx, x.tags(), x.shape());
  out.lse = RawTensor::empty(ctx, rowTags(x), rowShape(x), DType::f64);
  out.loss = RawTensor::empty(ctx, rowTags(x), rowShape(x), DType::f64);
  std::vector<double> lp(static_cast<size_t>(C));
  for (int64_t r = 0; r < l.rows; ++r) {
    const double lse = logSumExp(x.f32() + r * C, C);
    for (int64_t c = 0; c < C; ++c) lp[c] = x.f32()[r * C + c] - lse;
    double loss = ce.z_loss * lse * lse;
    if (soft) {
      for (int64_t c = 0; c < C; ++c)
        loss -= weightOf(ce.weights, c) * ((1 - s) * ce.target.f32()[r * C + c] + s / C) * lp[c];
    } else {
      const int64_t y = ce.target.data<int64_t>()[r];
      if (y == ce.ignore) {
        loss = 0;
      } else {
        loss -= (1 - s) * weightOf(ce.weights, y) * lp[y];
        for (int64_t c = 0; c < C; ++c) loss -= s / C * weightOf(ce.weights, c) * lp[c];
      }
    }
    for (int64_t c = 0; c < C; ++c) out.logp.f32()[r * C + c] = static_cast<float>(lp[c]);
    out.lse.data<double>()[r] = lse;
    out.loss.data<double>()[r] = loss;
  }
  return out;
}

Kernels::CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& lse,
                                               const Kernels::CrossEntropy& ce, const RawTensor& gy, double denom,
                                               bool need_x, bool need_target, bool in_place) {
  const RowLayout l = rowLayout(lp);
  const int64_t C = l.n;
  const bool soft = ce.target.dtype() != DType::i64;
  const double s = ce.smoothing;
  double wsum = 0;
  for (int64_t c = 0; c < C; ++c) wsum += weightOf(ce.weights, c);
  Kernels::CrossEntropyGrads g;
  if (need_x) g.x = in_place ? lp : RawTensor::empty(ctx, lp.tags(), lp.shape());
  if (need_target) g.target = RawTensor::empty(ctx, lp.tags(), lp.shape());
  std::vector<double> row(static_cast<size_t>(C));
  for (int64_t r = 0; r < l.rows; ++r) {
    const int64_t y = soft ? -1 : ce.target.data<int64_t>()[r];
    const double f = factorOf(gy, denom, r, !soft && y == ce.ignore);
    // The row's log-softmax: saved, or recomputed from the logits lp holds.
    const double lse_r = lse.valid() ? lse.data<double>()[r] : logSumExp(lp.f32() + r * C, C);
    for (int64_t c = 0; c < C; ++c)
      row[c] = lse.valid() ? static_cast<double>(lp.f32()[r * C + c]) : lp.f32()[r * C + c] - lse_r;
    if (need_target)
      for (int64_t c = 0; c < C; ++c)
        g.target.f32()[r * C + c] = static_cast<float>(-f * (1 - s) * weightOf(ce.weights, c) * row[c]);
    if (!need_x) continue;
    if (f == 0) {  // an ignored row (its label need not be a class) or a zero upstream factor
      for (int64_t c = 0; c < C; ++c) g.x.f32()[r * C + c] = 0.0f;
      continue;
    }
    double a = 2 * ce.z_loss * lse_r;
    if (soft) {
      for (int64_t c = 0; c < C; ++c) a += weightOf(ce.weights, c) * ((1 - s) * ce.target.f32()[r * C + c] + s / C);
    } else {
      a += (1 - s) * weightOf(ce.weights, y) + s / C * wsum;
    }
    for (int64_t c = 0; c < C; ++c) {
      const double tc = soft ? (1 - s) * ce.target.f32()[r * C + c] + s / C : s / C + (c == y ? 1 - s : 0.0);
      const double b = soft || c != y ? weightOf(ce.weights, c) * tc
                                      : s / C * weightOf(ce.weights, c) + (1 - s) * weightOf(ce.weights, y);
      g.x.f32()[r * C + c] = static_cast<float>(f * (a * std::exp(row[c]) - b));
    }
  }
  return g;
}

RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x, float inv_t) {
  const RowLayout l = rowLayout(x);
  RawTensor out = RawTensor::empty(ctx, x.tags(), x.shape());
  for (int64_t r = 0; r < l.rows; ++r) {
    const double lse = logSumExp(x.f32() + r * l.n, l.n, inv_t);
    for (int64_t c = 0; c < l.n; ++c)
      out.f32()[r * l.n + c] = static_cast<float>(std::exp(inv_t * static_cast<double>(x.f32()[r * l.n + c]) - lse));
  }
  return out;
}

RawTensor distillRows(ExecContext& ctx, const RawTensor& x, const Kernels::Distill& d) {
  const RowLayout l = rowLayout(x);
  const int64_t V = l.n;
  const double T = d.temperature, ce_div = d.ce_div.host();
  RawTensor loss = RawTensor::empty(ctx, rowTags(x), rowShape(x), DType::f64);
  for (int64_t r = 0; r < l.rows; ++r) {
    const float* s = x.f32() + r * V;
    const float* p = d.probs.f32() + r * V;
    const double lseT = logSumExp(s, V, 1 / T);
    double kd = 0;
    for (int64_t c = 0; c < V; ++c)
      if (p[c] > 0) kd += p[c] * (std::log(static_cast<double>(p[c])) - (s[c] / T - lseT));
    kd *= T * T;
    double ce = 0;
    if (d.labels.valid()) {
      const int64_t y = d.labels.data<int64_t>()[r];
      if (y != d.ignore) ce = logSumExp(s, V) - s[y];
    }
    loss.data<double>()[r] = (1 - d.alpha) * kd / d.kd_div + (d.labels.valid() ? d.alpha * ce / ce_div : 0.0);
  }
  return loss;
}

RawTensor distillRowsVjp(ExecContext&, const RawTensor& x, const Kernels::Distill& d, const RawTensor& gy) {
  const RowLayout l = rowLayout(x);
  const int64_t V = l.n;
  const double T = d.temperature;
  for (int64_t r = 0; r < l.rows; ++r) {
    float* s = x.f32() + r * V;
    const float* p = d.probs.f32() + r * V;
    const int64_t y = d.labels.valid() ? d.labels.data<int64_t>()[r] : d.ignore;
    const double k = (1 - d.alpha) * T * factorOf(gy, d.kd_div, r, false);
    const double a = d.alpha * factorOf(gy, d.ce_div.host(), r, y == d.ignore);
    const double lseT = logSumExp(s, V, 1 / T), lse1 = logSumExp(s, V);
    for (int64_t c = 0; c < V; ++c) {
      const double sv = s[c];
      s[c] = static_cast<float>(k * (std::exp(sv / T - lseT) - p[c]) + a * (std::exp(sv - lse1) - (c == y ? 1 : 0)));
    }
  }
  return x;
}

}  // namespace fucina::backend::reference
