// Reductions over named axes, each with its VJP (a broadcast of the gradient back). Sums compute
// through Kernels::sumAxes, the other reductions along one axis through reduceAlong, the f64 path
// and normAll through reduceF64.
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

using F64Line = backend::Kernels::F64Line;
using AlongAxis = backend::Kernels::AlongAxis;
using backend::ElemOp;
using backend::Form;

// The forward (or a partial) of an elementwise row over (tags, shape), its operands aligned by tag.
template <size_t K>
RawTensor rowMap(ExecContext& ctx, ElemOp op, Form form, const Tags& tags, const Extents& shape,
                 const std::array<const RawTensor*, K>& in, double param = 0) {
  return backend::kernelsOf(ctx).map(ctx, op, form, tags, shape, in, {param});
}
// t times f (f32 multiplication, as the Scale row).
RawTensor scaled(ExecContext& ctx, const RawTensor& t, float f) {
  return rowMap<1>(ctx, ElemOp::Scale, Form::fwd, t.tags(), t.shape(), {&t}, f);
}

// A reduction of a non-f32 x: f64 computes `line` in double (Kernels::reduceF64; no gradient: f64
// never requires one), 16-bit constants run f32op on an f32 copy (Note [Dtype rules]).
template <class F32Op>
Tensor typedReduction(ExecContext& ctx, std::string_view name, const Tensor& x, const Tags& axes, F32Op f32op,
                      F64Line line, double param = 0) {
  if (ops::promotesToF64(name, {&x}))
    return Tensor::make(ctx, backend::kernelsOf(ctx).reduceF64(ctx, line, x.value(), axes, param), nullptr);
  return ops::viaF32(ctx, name, {&x}, [&](std::span<const Tensor> f) { return f32op(f[0]); });
}

// sum over `axes` times `factor` (1 for sum, 1/n for mean). VJP: gy broadcast to x's axes, scaled.
Tensor sumScaled(ExecContext& ctx, std::string_view name, const Tensor& x, const Tags& axes,
                 double factor) {
  if (!ops::allF32({&x}))
    return typedReduction(
        ctx, name, x, axes, [&](const Tensor& f) { return sumScaled(ctx, name, f, axes, factor); }, F64Line::sum,
        factor);
  const RawTensor& a = x.value();
  RawTensor out = backend::kernelsOf(ctx).sumAxes(ctx, a, axes);
  const float f = static_cast<float>(factor);
  if (f != 1.0f) out = scaled(ctx, out, f);
  return ops::finishOp(ctx, name, out, {&x}, [&] {
    return [tags = a.tags(), shape = a.shape(), f](ExecContext& c, const RawTensor& gy, NeedsGrad,
                                                   Grads g) {
      g[0] = rowMap<1>(c, ElemOp::Scale, Form::fwd, tags, shape, {&gy}, f);
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
  extentFor(name, x, axis, false);
  if (!ops::allF32({&x}))
    return typedReduction(
        ctx, name, x, {axis}, [&](const Tensor& f) { return extremum(ctx, name, f, axis, is_max); },
        is_max ? F64Line::max : F64Line::min);
  const RawTensor& a = x.value();
  backend::Kernels::Along r = backend::kernelsOf(ctx).reduceAlong(ctx, is_max ? AlongAxis::max : AlongAxis::min, a, axis);
  return ops::finishOp(ctx, name, r.values, {&x}, [&] {
    // gx is gy at each line's extremum and 0 elsewhere: gy scattered along the axis to the index,
    // both read with the axis at extent 1.
    Extents line = a.shape();
    line[a.axis(axis)] = 1;
    return [index = r.index.to(ctx, DType::i64).broadcastView(a.tags(), line), tags = a.tags(), shape = a.shape(),
            line, axis](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor gx = RawTensor::zeros(c, tags, shape);
      backend::kernelsOf(c).scatterAlong(c, gx, axis, index, gy.broadcastView(tags, line), false);
      g[0] = std::move(gx);
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
        ctx, "variance", *this, {axis}, [&](const Tensor& f) { return f.variance(ctx, axis, correction); },
        F64Line::variance, static_cast<double>(correction));
  const RawTensor& a = value();
  const float inv_n = static_cast<float>(1.0 / static_cast<double>(n));
  const float inv_dof = static_cast<float>(1.0 / static_cast<double>(n - correction));
  const RawTensor mean = scaled(ctx, backend::kernelsOf(ctx).sumAxes(ctx, a, {axis}), inv_n);
  const RawTensor sq = rowMap<2>(ctx, ElemOp::SquaredDiff, Form::fwd, a.tags(), a.shape(), {&a, &mean});
  RawTensor out = scaled(ctx, backend::kernelsOf(ctx).sumAxes(ctx, sq, {axis}), inv_dof);
  return ops::finishOp(ctx, "variance", out, {this}, [&] {
    return [a, mean, inv_dof](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor gs = scaled(c, gy, inv_dof);  // on the reduced axes, before the broadcast
      g[0] = rowMap<4>(c, ElemOp::SquaredDiff, Form::da, a.tags(), a.shape(), {&gs, &a, &mean, &gs});
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
        ctx, "logsumexp", *this, {axis}, [&](const Tensor& f) { return f.logsumexp(ctx, axis); },
        F64Line::logsumexp);
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
    m = backend::kernelsOf(ctx).reduceAlong(ctx, AlongAxis::max, a, axis).values;
  }
  const RawTensor shift = rowMap<1>(ctx, ElemOp::FiniteOrZero, Form::fwd, m.tags(), m.shape(), {&m});
  const RawTensor e = rowMap<2>(ctx, ElemOp::ExpShifted, Form::fwd, a.tags(), a.shape(), {&a, &shift});
  const RawTensor sums = backend::kernelsOf(ctx).sumAxes(ctx, e, {axis});
  RawTensor out = rowMap<2>(ctx, ElemOp::LogAdd, Form::fwd, sums.tags(), sums.shape(), {&sums, &shift});
  return ops::finishOp(ctx, "logsumexp", out, {this}, [&] {
    return [a, out](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = rowMap<4>(c, ElemOp::ExpShifted, Form::da, a.tags(), a.shape(), {&gy, &a, &out, &gy});
    };
  }, static_cast<size_t>(a.numel()));
}

// Inclusive cumulative sum (f64 running sum); VJP: the reverse cumulative sum of g.
Tensor Tensor::cumsum(ExecContext& ctx, Tag axis) const {
  extentFor("cumsum", *this, axis, true);
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "cumsum", *this, {axis}, [&](const Tensor& f) { return f.cumsum(ctx, axis); }, F64Line::cumsum);
  const RawTensor& a = value();
  RawTensor out = backend::kernelsOf(ctx).reduceAlong(ctx, AlongAxis::cumsum, a, axis).values;
  return ops::finishOp(ctx, "cumsum", out, {this}, [&] {
    return [tags = a.tags(), axis](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = backend::kernelsOf(c).reduceAlong(c, AlongAxis::cumsumReverse, gy.permuted(tags), axis).values;
    };
  }, static_cast<size_t>(a.numel()));
}

// Product (f64); VJP: g times the product of the other elements of the line (prefix·suffix).
Tensor Tensor::prod(ExecContext& ctx, Tag axis) const {
  extentFor("prod", *this, axis, true);
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "prod", *this, {axis}, [&](const Tensor& f) { return f.prod(ctx, axis); }, F64Line::prod);
  const RawTensor& a = value();
  RawTensor out = backend::kernelsOf(ctx).reduceAlong(ctx, AlongAxis::prod, a, axis).values;
  return ops::finishOp(ctx, "prod", out, {this}, [&] {
    return [a, axis](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor others = backend::kernelsOf(c).reduceAlong(c, AlongAxis::prodOthers, a, axis).values;
      g[0] = rowMap<2>(c, ElemOp::Mul, Form::fwd, a.tags(), a.shape(), {&gy, &others});
    };
  }, static_cast<size_t>(a.numel()));
}

// 2-norm sqrt(Σ x²) (f64 sum); VJP: g·x/y, 0 where y = 0 (torch's subgradient).
Tensor Tensor::norm(ExecContext& ctx, Tag axis) const {
  extentFor("norm", *this, axis, true);
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "norm", *this, {axis}, [&](const Tensor& f) { return f.norm(ctx, axis); }, F64Line::norm);
  const RawTensor& a = value();
  const RawTensor sq = rowMap<2>(ctx, ElemOp::Mul, Form::fwd, a.tags(), a.shape(), {&a, &a});
  const RawTensor sums = backend::kernelsOf(ctx).sumAxes(ctx, sq, {axis});
  RawTensor out = rowMap<1>(ctx, ElemOp::Sqrt, Form::fwd, sums.tags(), sums.shape(), {&sums});
  return ops::finishOp(ctx, "norm", out, {this}, [&] {
    return [a, out](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor gx = rowMap<2>(c, ElemOp::Mul, Form::fwd, a.tags(), a.shape(), {&gy, &a});
      g[0] = rowMap<2>(c, ElemOp::DivPositive, Form::fwd, a.tags(), a.shape(), {&gx, &out});
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

// VJP: g·sign(x)·(|x|/N)^(p-1) (g·x/N for p = 2), 0 where x = 0 or N = 0; for infinity the
// gradient goes to the elements with |x| = N, split evenly among them (torch's rule).
Tensor Tensor::normAll(ExecContext& ctx, double p) const {
  if (!(p > 0))
    fail(ErrorCode::InvalidArgument, "normAll: p must be > 0 (or infinity), got " + std::to_string(p));
  if (!ops::allF32({this}))
    return typedReduction(
        ctx, "normAll", *this, tags(), [&](const Tensor& f) { return f.normAll(ctx, p); }, F64Line::pNorm, p);
  const RawTensor& a = value();
  const RawTensor norm = backend::kernelsOf(ctx).reduceF64(ctx, F64Line::pNorm, a, a.tags(), p);  // in f64
  return ops::finishOp(ctx, "normAll", norm.to(ctx, DType::f32), {this}, [&] {
    return [a, norm, p](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = backend::kernelsOf(c).pNormVjp(c, a, norm, gy, p);
    };
  }, static_cast<size_t>(a.numel()));
}

}  // namespace fucina
