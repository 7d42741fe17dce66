// Normalizations along a named axis. Each normalizes rows of a copy laid out with the axis last
// (the backend's norm rows) and has a fused VJP; the affine/weighted forms are composed from it
// and pointwise ops.
#include <cmath>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

using Kind = backend::Kernels::Norm;

// Per row: y = (x - shift) * inv, with shift/inv from the row's statistics (the backend's norm
// rows). Saves y and inv. VJP (with m the row length and <.> a row mean):
//   layer: gx = inv * (g - <g> - y * <g y>)
//   rms:   gx = inv * (g - y * <g y>)
//   l2:    gx = inv * (g - y * sum(g y))   when the norm exceeds eps, else inv * g
Tensor normalize(ExecContext& ctx, const char* name, const Tensor& x, Tag axis, double eps, Kind kind) {
  if (!ops::allF32({&x}))
    return ops::viaF32(ctx, name, {&x}, [&](std::span<const Tensor> f) { return normalize(ctx, name, f[0], axis, eps, kind); });
  if (!(eps >= 0) || !std::isfinite(eps))
    fail(ErrorCode::InvalidArgument, std::string(name) + ": eps must be finite and >= 0");
  const RawTensor& a = x.value();
  if (a.extent(axis) == 0)
    fail(ErrorCode::InvalidArgument, std::string(name) + ": the axis '" + std::string(axis.name()) + "' is empty");
  backend::Kernels::NormRows saved = backend::kernelsOf(ctx).normRows(ctx, ops::axisLast(ctx, a, axis), kind, eps);
  const RawTensor y = saved.y;
  return ops::finishOp(ctx, name, y.permuted(a.tags()), {&x}, [&] {
    return [saved = std::move(saved), axis, kind](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = backend::kernelsOf(c).normRowsVjp(c, kind, saved, ops::axisLast(c, gy, axis));
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
