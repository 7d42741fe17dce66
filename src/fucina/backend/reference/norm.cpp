// The normalizations' rows as the plain loops, in f64: statistics, then y = (x - mean)·inv.
#include <algorithm>
#include <cmath>

#include "fucina/backend/reference/row_kernels.h"

namespace fucina::backend::reference {

using Norm = Kernels::Norm;

Kernels::NormRows normRows(ExecContext& ctx, const RawTensor& x, Norm kind, double eps) {
  const RowLayout l = rowLayout(x);
  const int64_t m = l.n;
  const Tags row_tags(x.tags().begin(), x.tags().end() - 1);
  const Extents row_shape(x.shape().begin(), x.shape().end() - 1);
  Kernels::NormRows out{RawTensor::empty(ctx, x.tags(), x.shape()), RawTensor::empty(ctx, row_tags, row_shape),
                        RawTensor::zeros(ctx, row_tags, row_shape, DType::u8)};
  for (int64_t r = 0; r < l.rows; ++r) {
    const float* xr = x.f32() + r * m;
    double mean = 0, sq = 0;
    if (kind == Norm::layer) {
      for (int64_t i = 0; i < m; ++i) mean += xr[i];
      mean /= static_cast<double>(m);
    }
    for (int64_t i = 0; i < m; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
    double inv;
    if (kind == Norm::l2) {
      const double norm = std::sqrt(sq);
      out.clamped.data<uint8_t>()[r] = norm <= eps;
      inv = 1.0 / std::max(norm, eps);
    } else {
      inv = 1.0 / std::sqrt(sq / static_cast<double>(m) + eps);
    }
    out.inv.f32()[r] = static_cast<float>(inv);
    for (int64_t i = 0; i < m; ++i) out.y.f32()[r * m + i] = static_cast<float>((xr[i] - mean) * inv);
  }
  return out;
}

RawTensor normRowsVjp(ExecContext& ctx, Norm kind, const Kernels::NormRows& saved, const RawTensor& gy) {
  const RowLayout l = rowLayout(saved.y);
  const int64_t m = l.n;
  RawTensor gx = RawTensor::empty(ctx, saved.y.tags(), saved.y.shape());
  for (int64_t r = 0; r < l.rows; ++r) {
    const float* g = gy.f32() + r * m;
    const float* y = saved.y.f32() + r * m;
    double sg = 0, sgy = 0;
    for (int64_t i = 0; i < m; ++i) {
      sg += g[i];
      sgy += static_cast<double>(g[i]) * y[i];
    }
    const double mg = kind == Norm::layer ? sg / static_cast<double>(m) : 0.0;
    double k = kind == Norm::l2 ? sgy : sgy / static_cast<double>(m);
    if (kind == Norm::l2 && saved.clamped.data<uint8_t>()[r]) k = 0;
    const double inv = saved.inv.f32()[r];
    for (int64_t i = 0; i < m; ++i) gx.f32()[r * m + i] = static_cast<float>(inv * (g[i] - mg - y[i] * k));
  }
  return gx;
}

}  // namespace fucina::backend::reference
