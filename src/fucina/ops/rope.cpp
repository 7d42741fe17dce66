// Rotary position embedding (RoPE) and its VJP, the inverse rotation. Both sources of angles
// (computed by the backend, or given as cos/sin tables) become [T, D/2] tables that feed the
// backend's rope rows, which rotate pairs of the dim axis over a copy laid out as
// {batch..., position, dim}.
#include <cmath>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// The layout the kernel runs over, and the geometry of x in it.
struct RopeLayout {
  Tags order;         // x's other axes in x's order, then position, dim
  int64_t T = 0, D = 0;
};

RopeLayout ropeLayout(const Tensor& x, const RopeOptions& o) {
  const RawTensor& a = x.value();
  if (o.position == o.dim)
    fail(ErrorCode::InvalidArgument, "rope: position and dim must be different axes, both are '" +
                                         std::string(o.dim.name()) + "'");
  if (!hasTag(a.tags(), o.position) || !hasTag(a.tags(), o.dim))
    fail(ErrorCode::ShapeMismatch, "rope: x needs the axes '" + std::string(o.position.name()) +
                                       "' (position) and '" + std::string(o.dim.name()) +
                                       "' (dim), got " + a.describe());
  RopeLayout l;
  l.T = a.extent(o.position);
  l.D = a.extent(o.dim);
  if (l.D % 2 != 0)
    fail(ErrorCode::InvalidArgument, "rope: the '" + std::string(o.dim.name()) +
                                         "' extent must be even (it is rotated in pairs), got " +
                                         std::to_string(l.D));
  if (o.offset < 0)
    fail(ErrorCode::InvalidArgument, "rope: offset must be >= 0, got " + std::to_string(o.offset));
  for (Tag t : a.tags())
    if (!(t == o.position) && !(t == o.dim)) l.order.push_back(t);
  l.order.push_back(o.position);
  l.order.push_back(o.dim);
  return l;
}

backend::Kernels::RopePairs pairsOf(RopeOptions::Mode mode) {
  return mode == RopeOptions::Mode::half ? backend::Kernels::RopePairs::halves : backend::Kernels::RopePairs::adjacent;
}

Tensor ropeOp(ExecContext& ctx, const Tensor& x, const RopeLayout& l, const RopeOptions& o,
              RawTensor cos, RawTensor sin) {
  const RawTensor in = x.value().permuted(l.order).contiguous(ctx);
  RawTensor y = backend::kernelsOf(ctx).ropeRows(ctx, in, cos, sin, pairsOf(o.mode), /*inverse=*/false);
  return ops::finishOp(ctx, "rope", y.permuted(x.value().tags()), {&x}, [&] {
    // The rotation is orthogonal: its VJP rotates gy back by -angle.
    return [l, mode = o.mode, cos, sin](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      // layout order; the engine restores the operand's axis order
      g[0] = backend::kernelsOf(c).ropeRows(c, gy.permuted(l.order).contiguous(c), cos, sin, pairsOf(mode),
                                            /*inverse=*/true);
    };
  }, static_cast<size_t>(x.numel()) * 6);
}

// Rows offset .. offset+T-1 of a {position, dim: D/2} table, contiguous as [T, D/2].
RawTensor tableRows(ExecContext& ctx, const Tensor& table, const char* which, const RopeLayout& l,
                    const RopeOptions& o) {
  if (table.requiresGrad() && isGradEnabled())
    fail(ErrorCode::UnsupportedGradient,
         std::string("rope: the ") + which +
             " table takes no gradient; pass a constant (detach it or build it under noGrad)");
  const RawTensor& t = table.value();
  const int64_t rows = checkedAdd(o.offset, l.T, "rope: offset + positions");
  const std::string want = "{" + std::string(o.position.name()) + ">=" +
                           std::to_string(rows) + ", " + std::string(o.dim.name()) +
                           "=" + std::to_string(l.D / 2) + "}";
  if (t.rank() != 2 || !hasTag(t.tags(), o.position) || !hasTag(t.tags(), o.dim) ||
      t.extent(o.dim) != l.D / 2 || t.extent(o.position) < rows)
    fail(ErrorCode::ShapeMismatch, std::string("rope: the ") + which + " table must be " + want +
                                       " (one angle per pair of '" + std::string(o.dim.name()) +
                                       "', rows from offset " + std::to_string(o.offset) +
                                       "), got " + t.describe());
  return t.narrowed(o.position, o.offset, l.T).permuted({o.position, o.dim}).contiguous(ctx);
}

}  // namespace

Tensor Tensor::rope(ExecContext& ctx, const RopeOptions& options) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "rope", {this}, [&](std::span<const Tensor> f) { return f[0].rope(ctx, options); });
  const RopeLayout l = ropeLayout(*this, options);
  if (!(options.base > 0) || !std::isfinite(options.base))
    fail(ErrorCode::InvalidArgument, "rope: base must be positive and finite, got " +
                                         std::to_string(options.base));
  auto tables = backend::kernelsOf(ctx).ropeTables(ctx, options.position, options.dim, l.T, l.D, options.base,
                                                    options.offset);
  return ropeOp(ctx, *this, l, options, std::move(tables.cos), std::move(tables.sin));
}

Tensor Tensor::rope(ExecContext& ctx, const Tensor& cos, const Tensor& sin,
                    const RopeOptions& options) const {
  if (!ops::allF32({this, &cos, &sin}))
    return ops::viaF32(ctx, "rope", {this, &cos, &sin}, [&](std::span<const Tensor> f) { return f[0].rope(ctx, f[1], f[2], options); });
  const RopeLayout l = ropeLayout(*this, options);
  return ropeOp(ctx, *this, l, options, tableRows(ctx, cos, "cos", l, options),
                tableRows(ctx, sin, "sin", l, options));
}

// Per row of D (the layout of rope): n = x·inv, inv = 1/sqrt(mean(x²) + eps); u = n·weight;
// y = rotate(u). VJP: gu = rotate⁻¹(gy); gweight = sum over rows of gu·n; gn = gu·weight;
// gx = inv·(gn - n·mean(gn·n)). Saves n and inv; gweight is summed serially in row order.
Tensor Tensor::rmsNormMulRopeHalfPrepared(ExecContext& ctx, const Tensor& weight, const Tensor& cos, const Tensor& sin,
                                          Tag axis, const RmsNormRopeOptions& options) const {
  static constexpr std::string_view op = "rmsNormMulRopeHalfPrepared";
  if (!ops::allF32({this, &weight, &cos, &sin}))
    return ops::viaF32(ctx, op, {this, &weight, &cos, &sin}, [&](std::span<const Tensor> f) {
      return f[0].rmsNormMulRopeHalfPrepared(ctx, f[1], f[2], f[3], axis, options);
    });
  const RopeOptions ro{.position = options.position, .dim = axis, .offset = options.offset, .mode = RopeOptions::Mode::half};
  const RopeLayout l = ropeLayout(*this, ro);
  if (!(options.eps >= 0) || !std::isfinite(options.eps))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": eps must be finite and >= 0");
  if (weight.rank() != 1 || !(weight.tags()[0] == axis) || weight.shape()[0] != l.D)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": weight must be indexed by " + quoted(axis) +
                                       " alone with extent " + std::to_string(l.D) + ", got " + weight.value().describe());
  if (l.D == 0) fail(ErrorCode::InvalidArgument, std::string(op) + ": the axis " + quoted(axis) + " is empty");
  RawTensor ct = tableRows(ctx, cos, "cos", l, ro), st = tableRows(ctx, sin, "sin", l, ro);
  const RawTensor in = value().permuted(l.order).contiguous(ctx);
  const RawTensor w = weight.value().contiguous(ctx);
  auto saved = backend::kernelsOf(ctx).rmsNormRopeRows(ctx, in, w, ct, st, options.eps);
  const RawTensor y = saved.y;
  saved.y = RawTensor();  // the VJP needs n and inv only
  return ops::finishOp(ctx, op, y.permuted(value().tags()), {this, &weight, &cos, &sin}, [&] {
    return [l, saved = std::move(saved), w, ct, st](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      auto grads = backend::kernelsOf(c).rmsNormRopeRowsVjp(c, saved, w, ct, st, gy.permuted(l.order).contiguous(c),
                                                            needs[0], needs[1]);
      if (needs[1]) g[1] = std::move(grads.w);
      if (needs[0]) g[0] = std::move(grads.x);  // layout order; the engine restores the operand's axis order
    };
  }, static_cast<size_t>(numel()) * 12);
}

}  // namespace fucina
