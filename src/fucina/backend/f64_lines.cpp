#include "fucina/backend/f64_lines.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fucina::backend {

namespace {

double sumOf(const double* s, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += s[i];
  return acc;
}

// (Σ|x|^p)^(1/p) of n values, max |x| for p = infinity, in double.
double pNorm(const double* s, int64_t n, double p) {
  double acc = 0;
  if (std::isinf(p)) {
    for (int64_t i = 0; i < n; ++i) acc = std::max(acc, std::fabs(s[i]));
    return acc;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double v = s[i];
    acc += p == 2 ? v * v : p == 1 ? std::fabs(v) : std::pow(std::fabs(v), p);
  }
  return p == 2 ? std::sqrt(acc) : p == 1 ? acc : std::pow(acc, 1 / p);
}

// One output d[0] of the line s[0..n) (n outputs for cumsum).
void line(Kernels::F64Line op, const double* s, int64_t n, double* d, double param) {
  using L = Kernels::F64Line;
  switch (op) {
    case L::sum: *d = sumOf(s, n) * param; return;
    case L::max: case L::min: {  // NaN propagates
      double best = s[0];
      for (int64_t i = 1; i < n && !std::isnan(best); ++i)
        if (std::isnan(s[i]) || (op == L::max ? s[i] > best : s[i] < best)) best = s[i];
      *d = best;
      return;
    }
    case L::variance: {
      const double m = sumOf(s, n) / static_cast<double>(n);
      double sq = 0;
      for (int64_t i = 0; i < n; ++i) sq += (s[i] - m) * (s[i] - m);
      *d = sq / (static_cast<double>(n) - param);
      return;
    }
    case L::logsumexp: {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i) m = std::max(m, s[i]);
      const double shift = std::isfinite(m) ? m : 0.0;
      double e = 0;
      for (int64_t i = 0; i < n; ++i) e += std::exp(s[i] - shift);
      *d = std::log(e) + shift;
      return;
    }
    case L::cumsum: {
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) d[i] = acc += s[i];
      return;
    }
    case L::prod: {
      double p = 1;
      for (int64_t i = 0; i < n; ++i) p *= s[i];
      *d = p;
      return;
    }
    case L::norm: {
      double sq = 0;
      for (int64_t i = 0; i < n; ++i) sq += s[i] * s[i];
      *d = std::sqrt(sq);
      return;
    }
    case L::pNorm: *d = pNorm(s, n, param); return;
  }
}

}  // namespace

// a converted to f64 with `axes` moved last, so that each output's line is a contiguous run of n
// doubles; cumsum keeps a's axes, restored to a's order.
RawTensor reduceF64Lines(ExecContext& ctx, Kernels::F64Line op, const RawTensor& a, const Tags& axes, double param) {
  const bool keep = op == Kernels::F64Line::cumsum;
  Tags order, kept_tags;
  Extents kept_shape;
  int64_t rows = 1, n = 1;
  for (size_t i = 0; i < a.rank(); ++i) {
    if (hasTag(axes, a.tags()[i])) continue;
    order.push_back(a.tags()[i]);
    kept_tags.push_back(a.tags()[i]);
    kept_shape.push_back(a.shape()[i]);
    rows *= a.shape()[i];
  }
  for (Tag t : axes) {
    order.push_back(t);
    n *= a.extent(t);
  }
  const RawTensor in = a.permuted(order).to(ctx, DType::f64);  // a contiguous copy
  RawTensor out = keep ? RawTensor::empty(ctx, in.tags(), in.shape(), DType::f64)
                       : RawTensor::empty(ctx, kept_tags, kept_shape, DType::f64);
  const double* src = in.data<double>();
  double* dst = out.data<double>();
  for (int64_t r = 0; r < rows; ++r) line(op, src + r * n, n, dst + (keep ? r * n : r), param);
  if (keep) out = out.permuted(a.tags()).contiguous(ctx);
  return out;
}

RawTensor pNormVjpLoop(ExecContext& ctx, const RawTensor& x, const RawTensor& norm_t, const RawTensor& gy, double p) {
  const RawTensor in = x.contiguous(ctx);
  RawTensor gx = RawTensor::zeros(ctx, in.tags(), in.shape());
  const int64_t n = in.numel();
  const float* px = in.f32();
  float* o = gx.f32();
  const double norm = norm_t.contiguous(ctx).data<double>()[0];
  const double gv = gy.contiguous(ctx).f32()[0];
  if (norm > 0) {
    if (std::isinf(p)) {
      int64_t ties = 0;
      for (int64_t i = 0; i < n; ++i) ties += std::fabs(px[i]) == norm;
      for (int64_t i = 0; i < n; ++i)
        if (std::fabs(px[i]) == norm) o[i] = static_cast<float>(gv * (px[i] > 0 ? 1 : -1) / double(ties));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const double v = px[i];
        if (v == 0) continue;
        const double r = p == 2 ? v / norm : (v > 0 ? 1 : -1) * std::pow(std::fabs(v) / norm, p - 1);
        o[i] = static_cast<float>(gv * r);
      }
    }
  }
  return gx;
}

}  // namespace fucina::backend
