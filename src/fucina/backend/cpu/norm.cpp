#include "fucina/backend/cpu/norm.h"

#include <algorithm>
#include <cmath>

#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;
using Norm = backend::Kernels::Norm;
using NormRows = backend::Kernels::NormRows;

NormRows normRows(ExecContext& ctx, const RawTensor& x, Norm kind, double eps) {
  const backend::RowLayout l = backend::rowLayout(x);
  const int64_t m = l.n, rows = l.rows;
  const Tags row_tags(x.tags().begin(), x.tags().end() - 1);
  const Extents row_shape(x.shape().begin(), x.shape().end() - 1);
  NormRows out{RawTensor::empty(ctx, x.tags(), x.shape()), RawTensor::empty(ctx, row_tags, row_shape),
               RawTensor::zeros(ctx, row_tags, row_shape, DType::u8)};
  float* inv = out.inv.f32();
  uint8_t* clamped = out.clamped.data<uint8_t>();  // l2 only: norm <= eps
  const float* px = x.f32();
  float* py = out.y.f32();
  const bool simd = vec::enabled();
  // Row r's 1/norm from its sum of squared deviations, kept in inv (and, for l2, whether eps won).
  auto scaleOf = [&](int64_t r, double sq) {
    double scale;
    if (kind == Norm::l2) {
      const double norm = std::sqrt(sq);
      clamped[r] = norm <= eps;
      scale = 1.0 / std::max(norm, eps);
    } else {
      scale = 1.0 / std::sqrt(sq / static_cast<double>(m) + eps);
    }
    inv[r] = static_cast<float>(scale);
    return scale;
  };
  ctx.parallelFor(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, m)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = px + r * m;
      if (simd) {  // the same steps in f32 lanes (the mean rounded to f32 once)
        const float mean = kind == Norm::layer ? static_cast<float>(vec::sumRow(xr, m) / static_cast<double>(m)) : 0.0f;
        const double scale = scaleOf(r, vec::sumSquaredDeviation(xr, m, mean));
        vec::shiftScaleRow(xr, m, mean, static_cast<float>(scale), py + r * m);
        continue;
      }
      double mean = 0, sq = 0;
      if (kind == Norm::layer) {
        for (int64_t i = 0; i < m; ++i) mean += xr[i];
        mean /= static_cast<double>(m);
      }
      for (int64_t i = 0; i < m; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
      const double scale = scaleOf(r, sq);
      for (int64_t i = 0; i < m; ++i) py[r * m + i] = static_cast<float>((xr[i] - mean) * scale);
    }
  });
  return out;
}

RawTensor normRowsVjp(ExecContext& c, Norm kind, const NormRows& saved, const RawTensor& gy) {
  const backend::RowLayout l = backend::rowLayout(saved.y);
  const int64_t m = l.n, rows = l.rows;
  RawTensor gx = RawTensor::empty(c, saved.y.tags(), saved.y.shape());
  const float* pg = gy.f32();
  const float* py = saved.y.f32();
  const float* inv = saved.inv.f32();
  const uint8_t* clamped = saved.clamped.data<uint8_t>();
  float* out = gx.f32();
  const bool simd = vec::enabled();
  c.parallelFor(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, m)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* gr = pg + r * m;
      const float* yr = py + r * m;
      double sg = 0, sgy = 0;
      if (simd) {
        vec::sumAndDot(gr, yr, m, &sg, &sgy);
      } else {
        for (int64_t i = 0; i < m; ++i) {
          sg += gr[i];
          sgy += static_cast<double>(gr[i]) * yr[i];
        }
      }
      const double mg = kind == Norm::layer ? sg / static_cast<double>(m) : 0.0;
      double k = kind == Norm::l2 ? sgy : sgy / static_cast<double>(m);
      if (kind == Norm::l2 && clamped[r]) k = 0;
      const float s = inv[r];
      if (simd) {
        vec::normGradRow(gr, yr, m, s, static_cast<float>(mg), static_cast<float>(k), out + r * m);
        continue;
      }
      for (int64_t i = 0; i < m; ++i) out[r * m + i] = static_cast<float>(s * (gr[i] - mg - yr[i] * k));
    }
  });
  return gx;
}

}  // namespace fucina::kernels
