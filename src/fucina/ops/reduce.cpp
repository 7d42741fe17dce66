// Reductions over named axes, each with its VJP (a broadcast of the gradient back).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fucina/backend/kernels.h"
#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/cpu/reduce.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// The f64 path (Note [Dtype rules]): x converted to f64 with `axes` moved last, so that each
// output's line is a contiguous run of n doubles; line(src, n, dst) writes one output (or, when
// `keep`, n outputs: x's axes are then kept in x's order). No gradient: f64 never requires one.
template <class Line>
Tensor f64Lines(ExecContext& ctx, const Tensor& x, const Tags& axes, bool keep, Line line) {
  const RawTensor& a = x.value();
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
  for (int64_t r = 0; r < rows; ++r) line(src + r * n, n, dst + (keep ? r * n : r));
  if (keep) out = out.permuted(a.tags()).contiguous(ctx);
  return Tensor::make(ctx, std::move(out), nullptr);
}

// A reduction of a non-f32 x: f64 computes `line` in double, 16-bit constants run f32op on an f32
// copy (Note [Dtype rules]).
template <class F32Op, class Line>
Tensor typedReduction(ExecContext& ctx, std::string_view name, const Tensor& x, const Tags& axes,
                      bool keep, F32Op f32op, Line line) {
  if (ops::promotesToF64(name, {&x})) return f64Lines(ctx, x, axes, keep, line);
  return ops::viaF32(ctx, name, {&x}, [&](std::span<const Tensor> f) { return f32op(f[0]); });
}

double sumOf(const double* s, int64_t n) {
  double acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += s[i];
  return acc;
}

// sum over `axes` times `factor` (1 for sum, 1/n for mean). VJP: gy broadcast to x's axes, scaled.
Tensor sumScaled(ExecContext& ctx, std::string_view name, const Tensor& x, const Tags& axes,
                 double factor) {
  if (!ops::allF32({&x}))
    return typedReduction(
        ctx, name, x, axes, false, [&](const Tensor& f) { return sumScaled(ctx, name, f, axes, factor); },
        [factor](const double* s, int64_t n, double* d) { *d = sumOf(s, n) * factor; });
  const RawTensor& a = x.value();
  RawTensor out = backend::kernelsOf(ctx).sumAxes(ctx, a, axes);
  const float f = static_cast<float>(factor);
  if (f != 1.0f) out = kernels::map1(ctx, out, [f](float v) { return v * f; });
  return ops::finishOp(ctx, name, out, {&x}, [&] {
    return [tags = a.tags(), shape = a.shape(), f](ExecContext& c, const RawTensor& gy, NeedsGrad,
                                                   Grads g) {
      g[0] = kernels::map<1>(c, tags, shape, {&gy}, [f](float v) { return v * f; });
    };
  }, static_cast<size_t>(a.numel()));
}

// The extent of axis in x (ShapeMismatch naming the axes when absent); InvalidArgument when the
// axis is empty and `op` is undefined there.
int64_t extentFor(std::string_view op, const Tensor& x, Tag axis, bool empty_ok) {
  const int64_t n = x.value().extent(axis);
  if (n == 0 && !empty_ok)
    fail(ErrorCode::InvalidArgument, std::string(op) + " over the empty axis '" +
                                         std::string(axis.name()) + "' of " + x.value().describe());
  return n;
}

// max/min over axis; the VJP routes each gradient to the first extremum of its line only.
Tensor extremum(ExecContext& ctx, std::string_view name, const Tensor& x, Tag axis, bool is_max) {
  const int64_t n = extentFor(name, x, axis, false);
  if (!ops::allF32({&x}))
    return typedReduction(
        ctx, name, x, {axis}, false, [&](const Tensor& f) { return extremum(ctx, name, f, axis, is_max); },
        [is_max](const double* s, int64_t len, double* d) {  // as extremumAlong: NaN propagates
          double best = s[0];
          for (int64_t i = 1; i < len && !std::isnan(best); ++i)
            if (std::isnan(s[i]) || (is_max ? s[i] > best : s[i] < best)) best = s[i];
          *d = best;
        });
  const RawTensor& a = x.value();
  RawTensor index;
  RawTensor out = kernels::extremumAlong(ctx, a, axis, is_max, &index);
  return ops::finishOp(ctx, name, out, {&x}, [&] {
    return [index, tags = a.tags(), shape = a.shape(), axis, n](ExecContext& c, const RawTensor& gy,
                                                                 NeedsGrad, Grads g) {
      const RawTensor iota = RawTensor::empty(c, {axis}, {n});
      for (int64_t i = 0; i < n; ++i) iota.f32()[i] = static_cast<float>(i);
      g[0] = kernels::map<3>(c, tags, shape, {&gy, &index, &iota},
                             [](float gv, float at, float p) { return p == at ? gv : 0.0f; });
    };
  }, static_cast<size_t>(a.numel()));
}

}  // namespace

Tensor Tensor::sumAll(ExecContext& ctx) const { return sumScaled(ctx, "sumAll", *this, tags(), 1.0); }

Tensor Tensor::meanAll(ExecContext& ctx) const {
  const int64_t n = numel();
  if (n == 0) fail(ErrorCode::InvalidArgument, "meanAll of an empty tensor " + value().describe());
  return sumScaled(ctx, "meanAll", *this, tags(), 1.0 / static_cast<double>(n));
}

Tensor Tensor::sum(ExecContext& ctx, Tag axis) const {
  value().axis(axis);  // ShapeMismatch naming the axes when absent
  return sumScaled(ctx, "sum", *this, {axis}, 1.0);
}

Tensor Tensor::mean(ExecContext& ctx, Tag axis) const {
  const int64_t n = value().extent(axis);
  if (n == 0)
    fail(ErrorCode::InvalidArgument, "mean over the empty axis '" + std::string(axis.name()) +
                                         "' of " + value().describe());
  return sumScaled(ctx, "mean", *this, {axis}, 1.0 / static_cast<double>(n));
}

// Two passes: the mean, then the squared deviations (both accumulated in f64).
// VJP: g·2(x − mean)/(n − correction).
Tensor Tensor::variance(ExecContext& ctx, Tag axis, int64_t correction) const {
  const int64_t n = extentFor("variance", *this, axis, true);
  if (correction < 0 || n - correction <= 0)
    fail(ErrorCode::InvalidArgument,
         "variance over axis '" + std::string(axis.name()) + "' of " + value().describe() +
             " needs more elements than correction = " + std::to_string(correction) +
             " (and correction >= 0)");
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "variance", *this, {axis}, false, [&](const Tensor& f) { return f.variance(ctx, axis, correction); },
        [correction](const double* s, int64_t len, double* d) {
          const double m = sumOf(s, len) / static_cast<double>(len);
          double sq = 0;
          for (int64_t i = 0; i < len; ++i) sq += (s[i] - m) * (s[i] - m);
          *d = sq / static_cast<double>(len - correction);
        });
  const RawTensor& a = value();
  const float inv_n = static_cast<float>(1.0 / static_cast<double>(n));
  const float inv_dof = static_cast<float>(1.0 / static_cast<double>(n - correction));
  RawTensor mean = kernels::map1(ctx, backend::kernelsOf(ctx).sumAxes(ctx, a, {axis}), [inv_n](float v) { return v * inv_n; });
  RawTensor sq = kernels::map<2>(ctx, a.tags(), a.shape(), {&a, &mean},
                                 [](float x, float m) { return (x - m) * (x - m); });
  RawTensor out = kernels::map1(ctx, backend::kernelsOf(ctx).sumAxes(ctx, sq, {axis}), [inv_dof](float v) { return v * inv_dof; });
  return ops::finishOp(ctx, "variance", out, {this}, [&] {
    return [a, mean, inv_dof](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = kernels::map<3>(c, a.tags(), a.shape(), {&gy, &a, &mean},
                             [inv_dof](float gv, float x, float m) { return gv * 2.0f * (x - m) * inv_dof; });
    };
  }, static_cast<size_t>(a.numel()));
}

Tensor Tensor::max(ExecContext& ctx, Tag axis) const { return extremum(ctx, "max", *this, axis, true); }
Tensor Tensor::min(ExecContext& ctx, Tag axis) const { return extremum(ctx, "min", *this, axis, false); }

// y = m + log Σ exp(x − m) with m the line's max (0 where m is not finite, so all −inf lines give
// −inf and +inf lines +inf). VJP: g·exp(x − y), 0 where y = −inf.
Tensor Tensor::logsumexp(ExecContext& ctx, Tag axis) const {
  extentFor("logsumexp", *this, axis, true);
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "logsumexp", *this, {axis}, false, [&](const Tensor& f) { return f.logsumexp(ctx, axis); },
        [](const double* s, int64_t len, double* d) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t i = 0; i < len; ++i) m = std::max(m, s[i]);
          const double shift = std::isfinite(m) ? m : 0.0;
          double e = 0;
          for (int64_t i = 0; i < len; ++i) e += std::exp(s[i] - shift);
          *d = std::log(e) + shift;
        });
  const RawTensor& a = value();
  RawTensor m;
  if (a.numel() == 0) {
    Tags tags;
    Extents shape;
    for (size_t i = 0; i < a.rank(); ++i)
      if (a.tags()[i] != axis) {
        tags.push_back(a.tags()[i]);
        shape.push_back(a.shape()[i]);
      }
    m = RawTensor::full(ctx, tags, shape, -std::numeric_limits<double>::infinity());
  } else {
    m = kernels::extremumAlong(ctx, a, axis, true, nullptr);
  }
  RawTensor shift = kernels::map1(ctx, m, [](float v) { return std::isfinite(v) ? v : 0.0f; });
  RawTensor e = kernels::map<2>(ctx, a.tags(), a.shape(), {&a, &shift},
                                [](float x, float s) { return std::exp(x - s); });
  RawTensor sums = backend::kernelsOf(ctx).sumAxes(ctx, e, {axis});
  RawTensor out = kernels::map<2>(ctx, sums.tags(), sums.shape(), {&sums, &shift},
                                  [](float s, float sh) { return std::log(s) + sh; });
  return ops::finishOp(ctx, "logsumexp", out, {this}, [&] {
    return [a, out](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = kernels::map<3>(c, a.tags(), a.shape(), {&gy, &a, &out}, [](float gv, float x, float y) {
        return y == -std::numeric_limits<float>::infinity() ? 0.0f : gv * std::exp(x - y);
      });
    };
  }, static_cast<size_t>(a.numel()));
}

// Inclusive cumulative sum (f64 running sum); VJP: the reverse cumulative sum of g.
Tensor Tensor::cumsum(ExecContext& ctx, Tag axis) const {
  extentFor("cumsum", *this, axis, true);
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "cumsum", *this, {axis}, true, [&](const Tensor& f) { return f.cumsum(ctx, axis); },
        [](const double* s, int64_t len, double* d) {
          double acc = 0;
          for (int64_t i = 0; i < len; ++i) d[i] = acc += s[i];
        });
  const RawTensor& a = value();
  RawTensor out = kernels::cumsumAlong(ctx, a, axis, false);
  return ops::finishOp(ctx, "cumsum", out, {this}, [&] {
    return [tags = a.tags(), axis](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = kernels::cumsumAlong(c, gy.permuted(tags), axis, true);
    };
  }, static_cast<size_t>(a.numel()));
}

// Product (f64); VJP: g times the product of the other elements of the line (prefix·suffix).
Tensor Tensor::prod(ExecContext& ctx, Tag axis) const {
  extentFor("prod", *this, axis, true);
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "prod", *this, {axis}, false, [&](const Tensor& f) { return f.prod(ctx, axis); },
        [](const double* s, int64_t len, double* d) {
          double p = 1;
          for (int64_t i = 0; i < len; ++i) p *= s[i];
          *d = p;
        });
  const RawTensor& a = value();
  RawTensor out = kernels::prodAlong(ctx, a, axis);
  return ops::finishOp(ctx, "prod", out, {this}, [&] {
    return [a, axis](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor others = kernels::prodOthersAlong(c, a, axis);
      g[0] = kernels::map<2>(c, a.tags(), a.shape(), {&gy, &others},
                             [](float gv, float o) { return gv * o; });
    };
  }, static_cast<size_t>(a.numel()));
}

// 2-norm sqrt(Σ x²) (f64 sum); VJP: g·x/y, 0 where y = 0 (torch's subgradient).
Tensor Tensor::norm(ExecContext& ctx, Tag axis) const {
  extentFor("norm", *this, axis, true);
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "norm", *this, {axis}, false, [&](const Tensor& f) { return f.norm(ctx, axis); },
        [](const double* s, int64_t len, double* d) {
          double sq = 0;
          for (int64_t i = 0; i < len; ++i) sq += s[i] * s[i];
          *d = std::sqrt(sq);
        });
  const RawTensor& a = value();
  RawTensor sq = kernels::map1(ctx, a, [](float x) { return x * x; });
  RawTensor out = kernels::map1(ctx, backend::kernelsOf(ctx).sumAxes(ctx, sq, {axis}), [](float s) { return std::sqrt(s); });
  return ops::finishOp(ctx, "norm", out, {this}, [&] {
    return [a, out](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = kernels::map<3>(c, a.tags(), a.shape(), {&gy, &a, &out},
                             [](float gv, float x, float y) { return y > 0 ? gv * x / y : 0.0f; });
    };
  }, static_cast<size_t>(a.numel()));
}

Tensor Tensor::sumMany(ExecContext& ctx, const Tags& axes) const {
  for (size_t i = 0; i < axes.size(); ++i) {
    extent(axes[i]);  // ShapeMismatch naming the axes when absent
    for (size_t j = 0; j < i; ++j)
      if (axes[j] == axes[i])
        fail(ErrorCode::InvalidArgument, "sumMany: axis '" + std::string(axes[i].name()) + "' is listed twice");
  }
  return sumScaled(ctx, "sumMany", *this, axes, 1.0);
}

namespace {

// (Σ|x|^p)^(1/p) of n values, max |x| for p = infinity, in double.
template <class T>
double pNorm(const T* s, int64_t n, double p) {
  double acc = 0;
  if (std::isinf(p)) {
    for (int64_t i = 0; i < n; ++i) acc = std::max(acc, std::fabs(static_cast<double>(s[i])));
    return acc;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double v = s[i];
    acc += p == 2 ? v * v : p == 1 ? std::fabs(v) : std::pow(std::fabs(v), p);
  }
  return p == 2 ? std::sqrt(acc) : p == 1 ? acc : std::pow(acc, 1 / p);
}

}  // namespace

// VJP: g·sign(x)·(|x|/N)^(p-1) (g·x/N for p = 2), 0 where x = 0 or N = 0; for infinity the
// gradient goes to the elements with |x| = N, split evenly among them (torch's rule).
Tensor Tensor::normAll(ExecContext& ctx, double p) const {
  if (!(p > 0))
    fail(ErrorCode::InvalidArgument, "normAll: p must be > 0 (or infinity), got " + std::to_string(p));
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "normAll", *this, tags(), false, [&](const Tensor& f) { return f.normAll(ctx, p); },
        [p](const double* s, int64_t n, double* d) { *d = pNorm(s, n, p); });
  const RawTensor& a = value();
  const RawTensor in = a.contiguous(ctx);
  const int64_t n = in.numel();
  const double norm = pNorm(in.f32(), n, p);
  RawTensor out = RawTensor::full(ctx, {}, {}, norm);
  return ops::finishOp(ctx, "normAll", out, {this}, [&] {
    return [in, norm, p](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor gx = RawTensor::zeros(c, in.tags(), in.shape());
      const int64_t n = in.numel();
      const float* px = in.f32();
      float* o = gx.f32();
      const double gv = gy.contiguous(c).f32()[0];
      if (norm > 0) {
        if (std::isinf(p)) {
          int64_t ties = 0;
          for (int64_t i = 0; i < n; ++i) ties += std::fabs(px[i]) == norm;
          for (int64_t i = 0; i < n; ++i)
            if (std::fabs(px[i]) == norm) o[i] = static_cast<float>(gv * (px[i] > 0 ? 1 : -1) / double(ties));
        } else {
          for (int64_t i = 0; i < n; ++i) {
            const double x = px[i];
            if (x == 0) continue;
            const double r = p == 2 ? x / norm : (x > 0 ? 1 : -1) * std::pow(std::fabs(x) / norm, p - 1);
            o[i] = static_cast<float>(gv * r);
          }
        }
      }
      g[0] = std::move(gx);
    };
  }, static_cast<size_t>(a.numel()));
}

}  // namespace fucina
