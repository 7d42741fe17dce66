// Scans along a named axis that keep it: cumprod and linearRecurrence. Each lays its rows out with
// the axis last (ops::axisLast) and scans them with the backend's row kernels (in f64
// accumulators; the VJPs are one reverse scan per row and never divide, so zeros are exact).
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

// y_i = x_0·...·x_i. VJP: gx_i = y_{i-1}·S_i with S_i = g_i + x_{i+1}·S_{i+1} (S past the end is
// 0, y_{-1} = 1): the sum over j >= i of g_j·∏_{k<=j, k!=i} x_k, with no division by x_i.
Tensor Tensor::cumprod(ExecContext& ctx, Tag axis) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "cumprod", {this}, [&](std::span<const Tensor> f) { return f[0].cumprod(ctx, axis); });
  const RawTensor& a = value();
  const RawTensor in = ops::axisLast(ctx, a, axis);
  RawTensor y = backend::kernelsOf(ctx).cumprodRows(ctx, in);
  return ops::finishOp(ctx, "cumprod", y.permuted(a.tags()), {this}, [&] {
    return [in, y, axis](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = backend::kernelsOf(c).cumprodRowsVjp(c, in, y, ops::axisLast(c, gy, axis));
    };
  }, static_cast<size_t>(a.numel()) * 2);
}

Tensor Tensor::linearRecurrence(ExecContext& ctx, const Tensor& decay, Tag time_axis) const {
  Tags tags;
  Extents shape;
  for (size_t i = 0; i < rank(); ++i)
    if (!(this->tags()[i] == time_axis)) {
      tags.push_back(this->tags()[i]);
      shape.push_back(this->shape()[i]);
    }
  extent(time_axis);  // ShapeMismatch naming the axes when absent
  return linearRecurrence(ctx, decay, Tensor::zeros(ctx, tags, shape), time_axis);
}

// h_t = d_t·h_{t-1} + x_t. VJP with G_t = gy_t + d_{t+1}·G_{t+1} (G past the end is 0):
// gx_t = G_t, gd_t = G_t·h_{t-1}, gh0 = d_0·G_0 (h_{-1} = h0).
Tensor Tensor::linearRecurrence(ExecContext& ctx, const Tensor& decay, const Tensor& h0, Tag time_axis) const {
  if (!ops::allF32({this, &decay, &h0}))
    return ops::viaF32(ctx, "linearRecurrence", {this, &decay, &h0}, [&](std::span<const Tensor> f) {
      return f[0].linearRecurrence(ctx, f[1], f[2], time_axis);
    });
  const RawTensor& a = value();
  a.extent(time_axis);  // ShapeMismatch naming the axes when absent
  auto sameAxes = [&](const RawTensor& t, bool without_time) {
    if (t.rank() != a.rank() - (without_time ? 1 : 0)) return false;
    for (size_t i = 0; i < a.rank(); ++i) {
      const Tag tag = a.tags()[i];
      if (without_time && tag == time_axis) continue;
      if (!hasTag(t.tags(), tag) || t.extent(tag) != a.shape()[i]) return false;
    }
    return true;
  };
  if (!sameAxes(decay.value(), false))
    fail(ErrorCode::ShapeMismatch, "linearRecurrence: decay " + decay.value().describe() +
                                       " must have the input's axes and extents " + a.describe());
  if (!sameAxes(h0.value(), true))
    fail(ErrorCode::ShapeMismatch, "linearRecurrence: h0 " + h0.value().describe() + " must have the input's axes " +
                                       a.describe() + " without '" + std::string(time_axis.name()) + "'");
  const RawTensor x = ops::axisLast(ctx, a, time_axis);
  const RawTensor d = ops::axisLast(ctx, decay.value().permuted(a.tags()), time_axis);
  Tags row_tags(x.tags().begin(), x.tags().end() - 1);
  const RawTensor h = h0.value().permuted(row_tags).contiguous(ctx);
  RawTensor y = backend::kernelsOf(ctx).linearRecurrenceRows(ctx, x, d, h);
  return ops::finishOp(ctx, "linearRecurrence", y.permuted(a.tags()), {this, &decay, &h0}, [&] {
    return [d, h, y, time_axis, decay_tags = decay.value().tags(), h0_tags = h0.value().tags()](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      auto grads = backend::kernelsOf(c).linearRecurrenceRowsVjp(c, d, h, y, ops::axisLast(c, gy, time_axis));
      g[0] = std::move(grads.x);
      g[1] = grads.d.permuted(decay_tags);
      g[2] = grads.h0.permuted(h0_tags);
    };
  }, static_cast<size_t>(a.numel()) * 3);
}

}  // namespace fucina
