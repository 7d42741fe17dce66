#include "fucina/backend/cpu/rope.h"

#include <algorithm>
#include <vector>

#include "fucina/backend/rope_rows.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;

namespace {

using backend::rope::Geometry;
using backend::rope::geometryOf;

// y = rotate(x) by sign·angle, row r at position r % T; x and y may alias.
void rotate(ExecContext& ctx, const float* x, float* y, const float* cos, const float* sin, const Geometry& g,
            bool halves, float sign) {
  const int64_t half = g.D / 2;
  ctx.parallelFor(g.rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.D)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      backend::rope::rotateRow(x + r * g.D, y + r * g.D, cos + (r % g.T) * half, sin + (r % g.T) * half, g.D, halves,
                               sign);
  });
}

}  // namespace

RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin,
                   backend::Kernels::RopePairs pairs, bool inverse) {
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  rotate(ctx, x.f32(), y.f32(), cos.f32(), sin.f32(), geometryOf(x), pairs == backend::Kernels::RopePairs::halves,
         inverse ? -1.0f : 1.0f);
  return y;
}

RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base, int64_t offset) {
  RopeTables t{RawTensor::empty(ctx, {position, dim}, {T, D / 2}), RawTensor::empty(ctx, {position, dim}, {T, D / 2})};
  backend::rope::tables(t.cos.f32(), t.sin.f32(), T, D, base, offset);
  return t;
}

RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const RawTensor& cos,
                            const RawTensor& sin, double eps) {
  const Geometry g = geometryOf(x);
  const int64_t D = g.D;
  RmsRopeRows out{RawTensor::empty(ctx, x.tags(), x.shape()), RawTensor::empty(ctx, x.tags(), x.shape()),
                  RawTensor::empty(ctx, Tags(x.tags().begin(), x.tags().end() - 1),
                                   Extents(x.shape().begin(), x.shape().end() - 1))};
  const float* px = x.f32();
  const float* pw = w.f32();
  float *pn = out.n.f32(), *py = out.y.f32(), *inv = out.inv.f32();
  ctx.parallelFor(g.rows, std::max<int64_t>(1, 8192 / D), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      inv[r] = backend::rope::rmsNormMulRow(px + r * D, pw, pn + r * D, py + r * D, D, eps);
  });
  rotate(ctx, py, py, cos.f32(), sin.f32(), g, /*halves=*/true, 1.0f);
  return out;
}

RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& c, const RmsRopeRows& saved, const RawTensor& w, const RawTensor& cos,
                                const RawTensor& sin, const RawTensor& gy, bool need_x, bool need_w) {
  const Geometry g = geometryOf(saved.n);
  const int64_t rows = g.rows, D = g.D;
  RawTensor gu = RawTensor::empty(c, gy.tags(), gy.shape());
  rotate(c, gy.f32(), gu.f32(), cos.f32(), sin.f32(), g, /*halves=*/true, -1.0f);
  const float* pu = gu.f32();
  const float* pn = saved.n.f32();
  const float* pw = w.f32();
  RmsRopeGrads out;
  if (need_w) {
    std::vector<double> acc(static_cast<size_t>(D), 0.0);
    out.w = RawTensor::empty(c, w.tags(), w.shape());
    backend::rope::weightGrad(pu, pn, acc.data(), out.w.f32(), rows, D);
  }
  if (!need_x) return out;
  out.x = RawTensor::empty(c, gy.tags(), gy.shape());
  const float* inv = saved.inv.f32();
  float* gx = out.x.f32();
  c.parallelFor(rows, std::max<int64_t>(1, 8192 / D), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) backend::rope::rmsNormMulRowVjp(pu + r * D, pn + r * D, pw, inv[r], gx + r * D, D);
  });
  return out;
}

}  // namespace fucina::kernels
