#include "fucina/backend/cpu/cross_entropy_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;
using CE = backend::Kernels::CrossEntropy;

namespace {

Tags rowTags(const RawTensor& rows) { return Tags(rows.tags().begin(), rows.tags().end() - 1); }
Extents rowShape(const RawTensor& rows) { return Extents(rows.shape().begin(), rows.shape().end() - 1); }

// Rows per task: about 16K elements, so that short rows are not one task each.
int64_t rowGrain(int64_t C) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, C)); }

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

// The row formulas of Kernels::crossEntropyRows for one call's constants; lp is a row's
// log-softmax, lse its logsumexp, and the gradient rows are f·(a·exp(lp) - b).
struct CeRows {
  int64_t C = 0;
  double s = 0, z = 0;      // label smoothing, z-loss coefficient
  const float* w = nullptr;  // class weights, or null for all 1
  double wsum = 0;           // sum of the class weights (C without)

  explicit CeRows(const CE& ce, int64_t classes) : C(classes), s(ce.smoothing), z(ce.z_loss) {
    wsum = static_cast<double>(C);
    if (!ce.weights.valid()) return;
    w = ce.weights.f32();
    wsum = 0;
    for (int64_t c = 0; c < C; ++c) wsum += w[c];
  }

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
  // a = sum_k w[k]·t'[k] + 2z·lse; b[c] = w[c]·t'[c]. out may be lp.
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

// Each row's upstream factor: gy's rows, or the scalar gy divided by denom; 0 where the row's
// label is `ignore` (labels null: every row counts).
struct RowFactor {
  const float* rows = nullptr;
  float all = 0;
  const int64_t* labels = nullptr;
  int64_t ignore = 0;

  RowFactor(const RawTensor& gy, double denom, const RawTensor& lab, int64_t ign) : ignore(ign) {
    if (gy.rank() > 0) rows = gy.f32();
    else all = static_cast<float>(static_cast<double>(*gy.f32()) / denom);
    if (lab.valid()) labels = lab.data<int64_t>();
  }
  float operator()(int64_t r) const {
    if (labels && labels[r] == ignore) return 0.0f;
    return rows ? rows[r] : all;
  }
};

}  // namespace

double labelWeightSum(const RawTensor& labels, const RawTensor& weights, int64_t ignore) {
  if (labels.numel() == 0) return 0;
  const int64_t* y = labels.data<int64_t>();
  const float* w = weights.valid() ? weights.f32() : nullptr;
  double d = 0;
  for (int64_t r = 0; r < labels.numel(); ++r)
    if (y[r] != ignore) d += w ? w[y[r]] : 1.0;
  return d;
}

backend::Kernels::CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x, const CE& ce,
                                                    bool in_place) {
  const backend::RowLayout l = backend::rowLayout(x);
  const int64_t C = l.n;
  const CeRows spec(ce, C);
  const bool soft = ce.target.dtype() != DType::i64;
  backend::Kernels::CrossEntropyRows out;
  out.logp = in_place ? x : RawTensor::empty(ctx, x.tags(), x.shape());
  out.lse = RawTensor::empty(ctx, rowTags(x), rowShape(x), DType::f64);
  out.loss = RawTensor::empty(ctx, rowTags(x), rowShape(x), DType::f64);
  if (l.rows == 0) return out;
  const float* in = x.f32();
  float* logp = out.logp.f32();
  double* lse = out.lse.data<double>();
  double* loss = out.loss.data<double>();
  const float* t = soft ? ce.target.f32() : nullptr;
  const int64_t* y = soft ? nullptr : ce.target.data<int64_t>();
  const int64_t ignore = ce.ignore;
  ctx.parallelFor(l.rows, rowGrain(C), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* lp = logp + r * C;
      lse[r] = logSoftmaxRow(in + r * C, lp, C);
      loss[r] = soft ? spec.softLoss(lp, t + r * C, lse[r])
                     : (y[r] != ignore ? spec.labelLoss(lp, y[r], lse[r]) : 0.0);
    }
  });
  return out;
}

backend::Kernels::CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& lse,
                                                        const CE& ce, const RawTensor& gy, double denom, bool need_x,
                                                        bool need_target, bool in_place) {
  const backend::RowLayout l = backend::rowLayout(lp);
  const int64_t C = l.n;
  const CeRows spec(ce, C);
  const bool soft = ce.target.dtype() != DType::i64;
  backend::Kernels::CrossEntropyGrads g;
  if (need_x) g.x = in_place ? lp : RawTensor::empty(ctx, lp.tags(), lp.shape());
  if (need_target) g.target = RawTensor::empty(ctx, lp.tags(), lp.shape());
  if (l.rows == 0) return g;
  const RowFactor factor(gy, denom, soft ? RawTensor() : ce.target, ce.ignore);
  const float* p = lp.f32();
  const double* saved = lse.valid() ? lse.data<double>() : nullptr;
  const float* t = soft ? ce.target.f32() : nullptr;
  const int64_t* y = soft ? nullptr : ce.target.data<int64_t>();
  float* gx = need_x ? g.x.f32() : nullptr;
  float* gt = need_target ? g.target.f32() : nullptr;
  ctx.parallelFor(l.rows, rowGrain(C), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float fr = factor(r);
      if (gx) {
        float* o = gx + r * C;
        if (fr == 0.0f) {
          std::fill(o, o + C, 0.0f);
        } else {
          // Without saved logsumexps the row holds logits: its log-softmax goes into o first.
          const float* row = p + r * C;
          const double l = saved ? saved[r] : logSoftmaxRow(row, o, C);
          if (!saved) row = o;
          if (soft) spec.softGrad(row, t + r * C, l, fr, o);
          else spec.labelGrad(row, y[r], l, fr, o);
        }
      }
      if (gt) spec.targetGrad(p + r * C, fr, gt + r * C);
    }
  });
  return g;
}

RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x, float inv_t) {
  const backend::RowLayout l = backend::rowLayout(x);
  RawTensor out = RawTensor::empty(ctx, x.tags(), x.shape());
  if (l.rows == 0) return out;
  const int64_t V = l.n;
  const float* in = x.f32();
  float* o = out.f32();
  ctx.parallelFor(l.rows, rowGrain(V), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = in + r * V;
      const double lse = logSumExp(xr, V, inv_t);
      for (int64_t c = 0; c < V; ++c) o[r * V + c] = static_cast<float>(std::exp(inv_t * xr[c] - lse));
    }
  });
  return out;
}

RawTensor distillRows(ExecContext& ctx, const RawTensor& x, const backend::Kernels::Distill& d) {
  const backend::RowLayout l = backend::rowLayout(x);
  RawTensor loss = RawTensor::empty(ctx, rowTags(x), rowShape(x), DType::f64);
  if (l.rows == 0) return loss;
  const int64_t V = l.n;
  const double T = d.temperature, alpha = d.alpha, ce_div = d.ce_div.host();
  const auto invT = static_cast<float>(1.0 / T);
  const float* s = x.f32();
  const float* tp = d.probs.f32();
  const int64_t* y = d.labels.valid() ? d.labels.data<int64_t>() : nullptr;
  double* out = loss.data<double>();
  ctx.parallelFor(l.rows, rowGrain(V), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* row = s + r * V;
      const float* p = tp + r * V;
      const double lseT = logSumExp(row, V, invT);
      double acc = 0;
      for (int64_t c = 0; c < V; ++c)
        if (p[c] > 0) acc += p[c] * (std::log(p[c]) - (invT * row[c] - lseT));
      const double kd = T * T * acc;
      const bool counted = y && y[r] != d.ignore;
      const double ce = counted ? logSumExp(row, V) - row[y[r]] : 0.0;
      out[r] = (1 - alpha) * kd / d.kd_div + (y ? alpha * ce / ce_div : 0.0);
    }
  });
  return loss;
}

RawTensor distillRowsVjp(ExecContext& ctx, const RawTensor& x, const backend::Kernels::Distill& d,
                         const RawTensor& gy) {
  const backend::RowLayout l = backend::rowLayout(x);
  if (l.rows == 0) return x;
  const int64_t V = l.n;
  const double T = d.temperature, alpha = d.alpha;
  const auto invT = static_cast<float>(1.0 / T);
  const RowFactor fk(gy, d.kd_div, RawTensor(), d.ignore);
  const RowFactor fc(gy, d.ce_div.host(), d.labels, d.ignore);
  const int64_t* y = d.labels.valid() ? d.labels.data<int64_t>() : nullptr;
  float* s = x.f32();
  const float* tp = d.probs.f32();
  // d KD / d s = T·(q - p); d CE / d s = softmax(s) - onehot(y).
  ctx.parallelFor(l.rows, rowGrain(V), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      float* row = s + r * V;
      const float* p = tp + r * V;
      const bool counted = y && y[r] != d.ignore;
      const auto k = static_cast<float>((1 - alpha) * T * fk(r));
      const auto a = static_cast<float>(alpha * (y ? fc(r) : 0.0f));
      const auto lseT = static_cast<float>(logSumExp(row, V, invT));
      const auto lse1 = static_cast<float>(counted ? logSumExp(row, V) : 0.0);
      for (int64_t c = 0; c < V; ++c) {
        const float sv = row[c];
        row[c] = k * (std::exp(invT * sv - lseT) - p[c]) + (a != 0.0f ? a * std::exp(sv - lse1) : 0.0f);
      }
      if (counted) row[y[r]] -= a;
    }
  });
  return x;
}

}  // namespace fucina::kernels
