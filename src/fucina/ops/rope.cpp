// Rotary position embedding (RoPE) and its VJP, the inverse rotation. Both sources of angles
// (computed here, or given as cos/sin tables) become [T, D/2] tables that feed one kernel, which
// rotates pairs of the dim axis over a copy laid out as {batch..., position, dim}.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

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
  int64_t rows = 0;   // product of the batch axes
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
  l.rows = l.T * l.D == 0 ? 0 : a.numel() / (l.T * l.D);
  return l;
}

// y = each pair of every D-row of x rotated by sign·angle, the angle of row r's position
// (r % T) and pair i read from cos/sin at [r % T, i]. x and y may alias.
void rotatePairs(ExecContext& ctx, const float* x, float* y, const float* cos, const float* sin,
                 int64_t rows, int64_t T, int64_t D, RopeOptions::Mode mode, float sign) {
  const int64_t half = D / 2;
  const bool split = mode == RopeOptions::Mode::half;
  const int64_t step = split ? 1 : 2;       // pair i starts at i·step
  const int64_t partner = split ? half : 1;  // and its second element is `partner` further on
  ctx.parallelFor(rows * T, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, D)),
                  [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * D;
      float* yr = y + r * D;
      const float* c = cos + (r % T) * half;
      const float* s = sin + (r % T) * half;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = i * step, b = a + partner;
        const float x0 = xr[a], x1 = xr[b], ci = c[i], si = sign * s[i];
        yr[a] = x0 * ci - x1 * si;
        yr[b] = x0 * si + x1 * ci;
      }
    }
  });
}

Tensor ropeOp(ExecContext& ctx, const Tensor& x, const RopeLayout& l, const RopeOptions& o,
              RawTensor cos, RawTensor sin) {
  const RawTensor in = x.value().permuted(l.order).contiguous(ctx);
  RawTensor y = RawTensor::empty(ctx, in.tags(), in.shape());
  rotatePairs(ctx, in.f32(), y.f32(), cos.f32(), sin.f32(), l.rows, l.T, l.D, o.mode, 1.0f);
  return ops::finishOp(ctx, "rope", y.permuted(x.value().tags()), {&x}, [&] {
    // The rotation is orthogonal: its VJP rotates gy back by -angle.
    return [l, mode = o.mode, cos, sin](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor gl = gy.permuted(l.order).contiguous(c);
      RawTensor gx = RawTensor::empty(c, gl.tags(), gl.shape());
      rotatePairs(c, gl.f32(), gx.f32(), cos.f32(), sin.f32(), l.rows, l.T, l.D, mode, -1.0f);
      g[0] = std::move(gx);  // layout order; the engine restores the operand's axis order
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
  const int64_t half = l.D / 2;
  RawTensor cos = RawTensor::empty(ctx, {options.position, options.dim}, {l.T, half});
  RawTensor sin = RawTensor::empty(ctx, {options.position, options.dim}, {l.T, half});
  float* pc = cos.f32();
  float* ps = sin.f32();
  // No positions, no table: a dim of 2^40 with no positions looped 2^39 times (ops_fuzz).
  for (int64_t i = 0; l.T > 0 && i < half; ++i) {
    // Angles in f64, so that large positions keep their phase.
    const double theta = std::pow(options.base, -2.0 * static_cast<double>(i) / static_cast<double>(l.D));
    for (int64_t t = 0; t < l.T; ++t) {
      const double angle = (static_cast<double>(options.offset) + static_cast<double>(t)) * theta;  // no int64 wrap
      pc[t * half + i] = static_cast<float>(std::cos(angle));
      ps[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  return ropeOp(ctx, *this, l, options, std::move(cos), std::move(sin));
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
  const int64_t rows = l.rows * l.T, D = l.D;
  RawTensor n = RawTensor::empty(ctx, in.tags(), in.shape());
  RawTensor y = RawTensor::empty(ctx, in.tags(), in.shape());
  Scratch<float> inv(ctx.account(), static_cast<size_t>(rows));
  ctx.parallelFor(rows, std::max<int64_t>(1, 8192 / D), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = in.f32() + r * D;
      double sq = 0;
      for (int64_t i = 0; i < D; ++i) sq += static_cast<double>(xr[i]) * xr[i];
      const auto s = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(D) + options.eps));
      inv[static_cast<size_t>(r)] = s;
      for (int64_t i = 0; i < D; ++i) {
        n.f32()[r * D + i] = xr[i] * s;
        y.f32()[r * D + i] = xr[i] * s * w.f32()[i];
      }
    }
  });
  rotatePairs(ctx, y.f32(), y.f32(), ct.f32(), st.f32(), l.rows, l.T, D, RopeOptions::Mode::half, 1.0f);
  return ops::finishOp(ctx, op, y.permuted(value().tags()), {this, &weight, &cos, &sin}, [&] {
    return [l, n, inv = std::move(inv), w, ct, st, rows, D](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor gl = gy.permuted(l.order).contiguous(c);
      RawTensor gu = RawTensor::empty(c, gl.tags(), gl.shape());
      rotatePairs(c, gl.f32(), gu.f32(), ct.f32(), st.f32(), l.rows, l.T, D, RopeOptions::Mode::half, -1.0f);
      const float* pu = gu.f32();
      const float* pn = n.f32();
      if (needs[1]) {
        std::vector<double> acc(static_cast<size_t>(D), 0.0);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < D; ++i) acc[static_cast<size_t>(i)] += static_cast<double>(pu[r * D + i]) * pn[r * D + i];
        RawTensor gw = RawTensor::empty(c, w.tags(), w.shape());
        for (int64_t i = 0; i < D; ++i) gw.f32()[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
        g[1] = std::move(gw);
      }
      if (!needs[0]) return;
      RawTensor gx = RawTensor::empty(c, gl.tags(), gl.shape());
      c.parallelFor(rows, std::max<int64_t>(1, 8192 / D), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const float* ur = pu + r * D;
          const float* nr = pn + r * D;
          double k = 0;
          for (int64_t i = 0; i < D; ++i) k += static_cast<double>(ur[i]) * w.f32()[i] * nr[i];
          const auto kf = static_cast<float>(k / static_cast<double>(D));
          const float s = inv[static_cast<size_t>(r)];
          for (int64_t i = 0; i < D; ++i) gx.f32()[r * D + i] = s * (ur[i] * w.f32()[i] - nr[i] * kf);
        }
      });
      g[0] = std::move(gx);  // layout order; the engine restores the operand's axis order
    };
  }, static_cast<size_t>(numel()) * 12);
}

}  // namespace fucina
