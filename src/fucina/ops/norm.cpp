// Normalizations along a named axis. Each normalizes rows of a copy laid out with the axis last
// and has a fused VJP; the affine/weighted forms are composed from it and pointwise ops.
#include <algorithm>
#include <cmath>
#include <string>

#include "fucina/backend/cpu/softmax.h"
#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

enum class Kind { layer, rms, l2 };

// Per row: y = (x - shift) * inv, with shift/inv from the row's statistics. Saves y and inv.
// VJP (with m the row length and <.> a row mean):
//   layer: gx = inv * (g - <g> - y * <g y>)
//   rms:   gx = inv * (g - y * <g y>)
//   l2:    gx = inv * (g - y * sum(g y))   when the norm exceeds eps, else inv * g
Tensor normalize(ExecContext& ctx, const char* name, const Tensor& x, Tag axis, double eps, Kind kind) {
  if (!ops::allF32({&x}))
    return ops::viaF32(ctx, name, {&x}, [&](std::span<const Tensor> f) { return normalize(ctx, name, f[0], axis, eps, kind); });
  if (!(eps >= 0) || !std::isfinite(eps))
    fail(ErrorCode::InvalidArgument, std::string(name) + ": eps must be finite and >= 0");
  const RawTensor& a = x.value();
  const RawTensor in = kernels::axisLast(ctx, a, axis);
  const int64_t m = in.extent(axis);
  if (m == 0) fail(ErrorCode::InvalidArgument, std::string(name) + ": the axis '" + std::string(axis.name()) + "' is empty");
  const int64_t rows = in.numel() / m;
  RawTensor y = RawTensor::empty(ctx, in.tags(), in.shape());
  Scratch<float> inv(ctx.account(), static_cast<size_t>(rows));
  Scratch<uint8_t> clamped(ctx.account(), static_cast<size_t>(rows), 0);  // l2 only: norm <= eps
  const float* px = in.f32();
  float* py = y.f32();
  const bool simd = kernels::vec::enabled();
  // Row r's 1/norm from its sum of squared deviations, kept in inv (and, for l2, whether eps won).
  auto scaleOf = [&](int64_t r, double sq) {
    double scale;
    if (kind == Kind::l2) {
      const double norm = std::sqrt(sq);
      clamped[static_cast<size_t>(r)] = norm <= eps;
      scale = 1.0 / std::max(norm, eps);
    } else {
      scale = 1.0 / std::sqrt(sq / static_cast<double>(m) + eps);
    }
    inv[static_cast<size_t>(r)] = static_cast<float>(scale);
    return scale;
  };
  ctx.parallelFor(rows, std::max<int64_t>(1, 8192 / m), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = px + r * m;
      if (simd) {  // the same steps in f32 lanes (the mean rounded to f32 once)
        const float mean = kind == Kind::layer ? static_cast<float>(kernels::vec::sumRow(xr, m) / static_cast<double>(m)) : 0.0f;
        const double scale = scaleOf(r, kernels::vec::sumSquaredDeviation(xr, m, mean));
        kernels::vec::shiftScaleRow(xr, m, mean, static_cast<float>(scale), py + r * m);
        continue;
      }
      double mean = 0, sq = 0;
      if (kind == Kind::layer) {
        for (int64_t i = 0; i < m; ++i) mean += xr[i];
        mean /= static_cast<double>(m);
      }
      for (int64_t i = 0; i < m; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
      const double scale = scaleOf(r, sq);
      for (int64_t i = 0; i < m; ++i) py[r * m + i] = static_cast<float>((xr[i] - mean) * scale);
    }
  });
  return ops::finishOp(ctx, name, y.permuted(a.tags()), {&x}, [&] {
    return [y, inv = std::move(inv), clamped = std::move(clamped), axis, m, rows, kind](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor gl = kernels::axisLast(c, gy, axis);
      RawTensor gx = RawTensor::empty(c, y.tags(), y.shape());
      const float* pg = gl.f32();
      const float* py = y.f32();
      float* out = gx.f32();
      const bool simd = kernels::vec::enabled();
      c.parallelFor(rows, std::max<int64_t>(1, 8192 / m), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const float* gr = pg + r * m;
          const float* yr = py + r * m;
          double sg = 0, sgy = 0;
          if (simd) {
            kernels::vec::sumAndDot(gr, yr, m, &sg, &sgy);
          } else {
            for (int64_t i = 0; i < m; ++i) {
              sg += gr[i];
              sgy += static_cast<double>(gr[i]) * yr[i];
            }
          }
          const double mg = kind == Kind::layer ? sg / static_cast<double>(m) : 0.0;
          double k = kind == Kind::l2 ? sgy : sgy / static_cast<double>(m);
          if (kind == Kind::l2 && clamped[static_cast<size_t>(r)]) k = 0;
          const float s = inv[static_cast<size_t>(r)];
          if (simd) {
            kernels::vec::normGradRow(gr, yr, m, s, static_cast<float>(mg), static_cast<float>(k), out + r * m);
            continue;
          }
          for (int64_t i = 0; i < m; ++i)
            out[r * m + i] = static_cast<float>(s * (gr[i] - mg - yr[i] * k));
        }
      });
      g[0] = std::move(gx);
    };
  }, static_cast<size_t>(a.numel()) * 8);
}

void requireAxisVector(const char* name, const Tensor& v, Tag axis, int64_t extent, const char* what) {
  if (v.rank() != 1 || !(v.tags()[0] == axis) || v.shape()[0] != extent)
    fail(ErrorCode::ShapeMismatch, std::string(name) + ": " + what + " must be indexed by '" +
                                       std::string(axis.name()) + "' alone with extent " + std::to_string(extent) +
                                       ", got " + v.value().describe());
}

}  // namespace

Tensor Tensor::layerNorm(ExecContext& ctx, Tag axis, double eps) const {
  return normalize(ctx, "layerNorm", *this, axis, eps, Kind::layer);
}

Tensor Tensor::layerNorm(ExecContext& ctx, Tag axis, const Tensor& weight, const Tensor& bias, double eps) const {
  const int64_t m = extent(axis);
  requireAxisVector("layerNorm", weight, axis, m, "weight");
  requireAxisVector("layerNorm", bias, axis, m, "bias");
  if (ops::composeViaF32({this, &weight, &bias}))
    return ops::viaF32(ctx, "layerNorm", {this, &weight, &bias},
                       [&](std::span<const Tensor> f) { return f[0].layerNorm(ctx, axis, f[1], f[2], eps); });
  return layerNorm(ctx, axis, eps).mul(ctx, weight).add(ctx, bias);
}

Tensor Tensor::rmsNorm(ExecContext& ctx, Tag axis, double eps) const {
  return normalize(ctx, "rmsNorm", *this, axis, eps, Kind::rms);
}

Tensor Tensor::rmsNormMul(ExecContext& ctx, Tag axis, const Tensor& weight, double eps) const {
  requireAxisVector("rmsNormMul", weight, axis, extent(axis), "weight");
  if (ops::composeViaF32({this, &weight}))
    return ops::viaF32(ctx, "rmsNormMul", {this, &weight},
                       [&](std::span<const Tensor> f) { return f[0].rmsNormMul(ctx, axis, f[1], eps); });
  return rmsNorm(ctx, axis, eps).mul(ctx, weight);
}

Tensor Tensor::l2Normalize(ExecContext& ctx, Tag axis, double eps) const {
  return normalize(ctx, "l2Normalize", *this, axis, eps, Kind::l2);
}

Tensor Tensor::standardizeAxis(ExecContext& ctx, Tag axis, double eps) const {
  return normalize(ctx, "standardizeAxis", *this, axis, eps, Kind::layer);
}

Tensor Tensor::rmsNormMulAdd(ExecContext& ctx, Tag axis, const Tensor& weight, const Tensor& bias, double eps) const {
  const int64_t m = extent(axis);
  requireAxisVector("rmsNormMulAdd", weight, axis, m, "weight");
  requireAxisVector("rmsNormMulAdd", bias, axis, m, "bias");
  if (ops::composeViaF32({this, &weight, &bias}))
    return ops::viaF32(ctx, "rmsNormMulAdd", {this, &weight, &bias},
                       [&](std::span<const Tensor> f) { return f[0].rmsNormMulAdd(ctx, axis, f[1], f[2], eps); });
  return rmsNorm(ctx, axis, eps).mul(ctx, weight).add(ctx, bias);
}

// Composed: channel_axis splits into {group, channel-in-group}, which merge with every axis not
// in options.batch into one axis of statistics; layerNorm's fused row kernel normalizes it, and
// the inverse reshape restores x's axes and order.
Tensor Tensor::groupNorm(ExecContext& ctx, int64_t groups, Tag channel_axis, const GroupNormOptions& options) const {
  const int64_t c = extent(channel_axis);
  if (groups <= 0 || c % groups != 0)
    fail(ErrorCode::InvalidArgument, "groupNorm: " + std::to_string(c) + " channels along '" +
                                         std::string(channel_axis.name()) + "' do not split into " +
                                         std::to_string(groups) + " groups");
  for (const Tag& b : options.batch) {
    if (b == channel_axis)
      fail(ErrorCode::InvalidArgument, "groupNorm: the channel axis '" + std::string(b.name()) + "' cannot be a batch axis");
    extent(b);  // ShapeMismatch naming the axes when absent
  }
  static const Tag kGroup("groupNorm.group"), kInGroup("groupNorm.channel"), kStats("groupNorm.stats");
  Tags stats{kInGroup};
  Tags order;  // batch axes (x's order), the group, then the statistics' axes
  for (const Tag& t : tags())
    if (hasTag(options.batch, t)) order.push_back(t);
  order.push_back(kGroup);
  for (const Tag& t : tags())
    if (!hasTag(options.batch, t) && !(t == channel_axis)) stats.push_back(t);
  order.push_back(kInGroup);
  for (size_t i = 1; i < stats.size(); ++i) order.push_back(stats[i]);
  Extents stats_shape;
  for (const Tag& t : stats) stats_shape.push_back(t == kInGroup ? c / groups : extent(t));
  const Tensor rows = split(ctx, channel_axis, {kGroup, kInGroup}, {groups, c / groups})
                          .permuteTo(ctx, order)
                          .merge(ctx, stats, kStats);
  return rows.layerNorm(ctx, kStats, options.eps)
      .split(ctx, kStats, stats, stats_shape)
      .merge(ctx, {kGroup, kInGroup}, channel_axis)
      .permuteTo(ctx, tags());
}

Tensor Tensor::groupNorm(ExecContext& ctx, int64_t groups, Tag channel_axis, const Tensor& weight, const Tensor& bias,
                         const GroupNormOptions& options) const {
  const int64_t c = extent(channel_axis);
  requireAxisVector("groupNorm", weight, channel_axis, c, "weight");
  requireAxisVector("groupNorm", bias, channel_axis, c, "bias");
  if (ops::composeViaF32({this, &weight, &bias}))
    return ops::viaF32(ctx, "groupNorm", {this, &weight, &bias}, [&](std::span<const Tensor> f) {
      return f[0].groupNorm(ctx, groups, channel_axis, f[1], f[2], options);
    });
  return groupNorm(ctx, groups, channel_axis, options).mul(ctx, weight).add(ctx, bias);
}

// torch >= 1.12's formula: each operand normalized by max(|.|, eps) first, then their dot.
Tensor Tensor::cosineSimilarity(ExecContext& ctx, const Tensor& y, Tag axis, double eps) const {
  extent(axis);
  y.extent(axis);  // ShapeMismatch naming the axes when either lacks it
  if (ops::composeViaF32({this, &y}))
    return ops::viaF32(ctx, "cosineSimilarity", {this, &y},
                       [&](std::span<const Tensor> f) { return f[0].cosineSimilarity(ctx, f[1], axis, eps); });
  return l2Normalize(ctx, axis, eps).mul(ctx, y.l2Normalize(ctx, axis, eps)).sum(ctx, axis);
}

}  // namespace fucina
