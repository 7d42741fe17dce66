// Scans along a named axis that keep it: cumprod and linearRecurrence. Each runs over rows laid
// out with the axis last (kernels::axisLast), in f64 accumulators, one row per parallel item; the
// VJPs are one reverse scan per row and never divide, so zeros in the input are exact.
#include <string>

#include "fucina/kernels/softmax.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// Rows of n elements; fn(row) for each row, in parallel.
template <class Fn>
void forRows(ExecContext& ctx, int64_t rows, int64_t n, Fn&& fn) {
  ctx.parallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) fn(r);
  });
}

}  // namespace

// y_i = x_0·...·x_i. VJP: gx_i = y_{i-1}·S_i with S_i = g_i + x_{i+1}·S_{i+1} (S past the end is
// 0, y_{-1} = 1): the sum over j >= i of g_j·∏_{k<=j, k!=i} x_k, with no division by x_i.
Tensor Tensor::cumprod(ExecContext& ctx, Tag axis) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "cumprod", {this}, [&](std::span<const Tensor> f) { return f[0].cumprod(ctx, axis); });
  const RawTensor& a = value();
  const RawTensor in = kernels::axisLast(ctx, a, axis);
  const int64_t n = in.extent(axis), rows = n == 0 ? 0 : in.numel() / n;
  RawTensor y = RawTensor::empty(ctx, in.tags(), in.shape());
  const float* px = in.f32();
  float* py = y.f32();
  forRows(ctx, rows, n, [&](int64_t r) {
    double p = 1;
    for (int64_t i = 0; i < n; ++i) py[r * n + i] = static_cast<float>(p *= px[r * n + i]);
  });
  return ops::finishOp(ctx, "cumprod", y.permuted(a.tags()), {this}, [&] {
    return [in, y, axis, n, rows](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor gl = kernels::axisLast(c, gy, axis);
      RawTensor gx = RawTensor::empty(c, in.tags(), in.shape());
      const float* pg = gl.f32();
      const float* px = in.f32();
      const float* py = y.f32();
      float* out = gx.f32();
      forRows(c, rows, n, [&](int64_t r) {
        double s = 0;
        for (int64_t i = n; i-- > 0;) {
          s = pg[r * n + i] + (i + 1 < n ? px[r * n + i + 1] * s : 0.0);
          out[r * n + i] = static_cast<float>((i > 0 ? py[r * n + i - 1] : 1.0) * s);
        }
      });
      g[0] = std::move(gx);
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
  const int64_t n = a.extent(time_axis);
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
  const RawTensor x = kernels::axisLast(ctx, a, time_axis);
  const RawTensor d = kernels::axisLast(ctx, decay.value().permuted(a.tags()), time_axis);
  Tags row_tags(x.tags().begin(), x.tags().end() - 1);
  const RawTensor h = h0.value().permuted(row_tags).contiguous(ctx);
  const int64_t rows = h.numel();
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  const float* px = x.f32();
  const float* pd = d.f32();
  const float* ph = h.f32();
  float* py = y.f32();
  forRows(ctx, rows, n, [&](int64_t r) {
    double s = ph[r];
    for (int64_t t = 0; t < n; ++t) py[r * n + t] = static_cast<float>(s = pd[r * n + t] * s + px[r * n + t]);
  });
  return ops::finishOp(ctx, "linearRecurrence", y.permuted(a.tags()), {this, &decay, &h0}, [&] {
    return [d, h, y, time_axis, n, rows, decay_tags = decay.value().tags(), h0_tags = h0.value().tags()](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor gl = kernels::axisLast(c, gy, time_axis);
      RawTensor gx = RawTensor::empty(c, y.tags(), y.shape());
      RawTensor gd = RawTensor::empty(c, y.tags(), y.shape());
      RawTensor gh = RawTensor::empty(c, h.tags(), h.shape());
      const float* pg = gl.f32();
      const float* pd = d.f32();
      const float* ph = h.f32();
      const float* py = y.f32();
      float *ox = gx.f32(), *od = gd.f32(), *oh = gh.f32();
      forRows(c, rows, n, [&](int64_t r) {
        double s = 0;
        for (int64_t t = n; t-- > 0;) {
          s = pg[r * n + t] + (t + 1 < n ? pd[r * n + t + 1] * s : 0.0);
          ox[r * n + t] = static_cast<float>(s);
          od[r * n + t] = static_cast<float>(s * (t > 0 ? py[r * n + t - 1] : ph[r]));
        }
        oh[r] = static_cast<float>(n > 0 ? pd[r * n] * s : 0.0);
      });
      g[0] = std::move(gx);
      g[1] = gd.permuted(decay_tags);
      g[2] = gh.permuted(h0_tags);
    };
  }, static_cast<size_t>(a.numel()) * 3);
}

}  // namespace fucina
