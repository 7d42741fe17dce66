// Rotary embedding and the rmsNorm·weight rows fused before it, one row after another.
#include <vector>

#include "fucina/backend/reference/row_kernels.h"
#include "fucina/backend/rope_rows.h"

namespace fucina::backend::reference {

namespace {

using rope::Geometry;
using rope::geometryOf;

void rotate(const float* x, float* y, const float* cos, const float* sin, const Geometry& g, bool halves, float sign) {
  const int64_t half = g.D / 2;
  for (int64_t r = 0; r < g.rows; ++r)
    rope::rotateRow(x + r * g.D, y + r * g.D, cos + (r % g.T) * half, sin + (r % g.T) * half, g.D, halves, sign);
}

}  // namespace

RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin,
                   Kernels::RopePairs pairs, bool inverse) {
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  rotate(x.f32(), y.f32(), cos.f32(), sin.f32(), geometryOf(x), pairs == Kernels::RopePairs::halves,
         inverse ? -1.0f : 1.0f);
  return y;
}

Kernels::RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base,
                               int64_t offset) {
  Kernels::RopeTables t{RawTensor::empty(ctx, {position, dim}, {T, D / 2}),
                        RawTensor::empty(ctx, {position, dim}, {T, D / 2})};
  rope::tables(t.cos.f32(), t.sin.f32(), T, D, base, offset);
  return t;
}

Kernels::RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const RawTensor& cos,
                                     const RawTensor& sin, double eps) {
  const Geometry g = geometryOf(x);
  Kernels::RmsRopeRows out{RawTensor::empty(ctx, x.tags(), x.shape()), RawTensor::empty(ctx, x.tags(), x.shape()),
                           RawTensor::empty(ctx, Tags(x.tags().begin(), x.tags().end() - 1),
                                            Extents(x.shape().begin(), x.shape().end() - 1))};
  for (int64_t r = 0, o = 0; r < g.rows; ++r, o += g.D)
    out.inv.f32()[r] = rope::rmsNormMulRow(x.f32() + o, w.f32(), out.n.f32() + o, out.y.f32() + o, g.D, eps);
  rotate(out.y.f32(), out.y.f32(), cos.f32(), sin.f32(), g, /*halves=*/true, 1.0f);
  return out;
}

Kernels::RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const Kernels::RmsRopeRows& saved, const RawTensor& w,
                                         const RawTensor& cos, const RawTensor& sin, const RawTensor& gy, bool need_x,
                                         bool need_w) {
  const Geometry g = geometryOf(saved.n);
  RawTensor gu = RawTensor::empty(ctx, gy.tags(), gy.shape());
  rotate(gy.f32(), gu.f32(), cos.f32(), sin.f32(), g, /*halves=*/true, -1.0f);
  Kernels::RmsRopeGrads out;
  if (need_w) {
    std::vector<double> acc(static_cast<size_t>(g.D), 0.0);
    out.w = RawTensor::empty(ctx, w.tags(), w.shape());
    rope::weightGrad(gu.f32(), saved.n.f32(), acc.data(), out.w.f32(), g.rows, g.D);
  }
  if (!need_x) return out;
  out.x = RawTensor::empty(ctx, gy.tags(), gy.shape());
  for (int64_t r = 0, o = 0; r < g.rows; ++r, o += g.D)
    rope::rmsNormMulRowVjp(gu.f32() + o, saved.n.f32() + o, w.f32(), saved.inv.f32()[r], out.x.f32() + o, g.D);
  return out;
}

}  // namespace fucina::backend::reference
