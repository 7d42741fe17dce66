#include "fucina/backend/cpu/loss.h"

#include <algorithm>
#include <cmath>

#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;

namespace {
Tags rowTags(const RawTensor& rows) { return Tags(rows.tags().begin(), rows.tags().end() - 1); }
Extents rowShape(const RawTensor& rows) { return Extents(rows.shape().begin(), rows.shape().end() - 1); }
}  // namespace

backend::Kernels::IndexFault firstLabelOutside(const RawTensor& labels, int64_t classes,
                                               std::optional<int64_t> ignore) {
  const int64_t* l = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i) {
    const int64_t label = l[i];
    if ((label < 0 || label >= classes) && label != ignore) return {i, label};
  }
  return {};
}

RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, double smoothing,
                        bool plain) {
  const backend::RowLayout l = backend::rowLayout(lp);
  const int64_t classes = l.n;
  const double eps = smoothing;
  RawTensor loss = RawTensor::empty(ctx, rowTags(lp), rowShape(lp), DType::f64);
  double* out = loss.data<double>();
  const int64_t* lab = labels.data<int64_t>();
  const float* p = lp.f32();
  if (plain) {
    for (int64_t r = 0; r < l.rows; ++r) out[r] = -p[r * classes + lab[r]];
    return loss;
  }
  for (int64_t r = 0; r < l.rows; ++r) {
    const float* row = p + r * classes;
    double mean_logp = 0;
    if (eps > 0) {
      for (int64_t c = 0; c < classes; ++c) mean_logp += row[c];
      mean_logp /= static_cast<double>(classes);
    }
    out[r] = -((1 - eps) * row[lab[r]] + eps * mean_logp);
  }
  return loss;
}

RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, const RawTensor& gy,
                           float scale, double smoothing, bool plain) {
  const backend::RowLayout l = backend::rowLayout(lp);
  const int64_t classes = l.n, rows = l.rows;
  const int64_t* lab = labels.data<int64_t>();
  // The upstream factor of each row: gy's rows, or the scalar gy times scale for every row.
  const bool per_row = gy.rank() > 0;
  const float g0 = per_row ? 0.0f : *gy.f32() * scale;
  const float* gr = per_row ? gy.f32() : nullptr;
  auto factor = [&](int64_t r) { return per_row ? gr[r] : g0; };
  if (plain) {
    RawTensor gx = RawTensor::zeros(ctx, lp.tags(), lp.shape());
    float* o = gx.f32();
    for (int64_t r = 0; r < rows; ++r) o[r * classes + lab[r]] = -factor(r);
    return gx;
  }
  RawTensor gx = RawTensor::empty(ctx, lp.tags(), lp.shape());
  const float* p = lp.f32();
  float* o = gx.f32();
  const auto smooth = static_cast<float>(smoothing / static_cast<double>(classes));
  const auto keep = static_cast<float>(1 - smoothing);
  const bool simd = vec::enabled();
  ctx.parallelFor(rows, std::max<int64_t>(1, 16384 / classes), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float fr = factor(r);
      if (simd) {
        vec::expShiftScaleRow(p + r * classes, classes, smooth, fr, o + r * classes);
      } else {
        for (int64_t k = 0; k < classes; ++k) o[r * classes + k] = (std::exp(p[r * classes + k]) - smooth) * fr;
      }
      o[r * classes + lab[r]] -= keep * fr;
    }
  });
  return gx;
}

RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, double denom) {
  double total = 0;
  if (loss.dtype() == DType::f64) {
    const double* v = loss.data<double>();
    for (int64_t i = 0; i < loss.numel(); ++i) total += v[i];
  } else {
    const float* v = loss.f32();
    for (int64_t i = 0; i < loss.numel(); ++i) total += v[i];
  }
  return RawTensor::full(ctx, {}, {}, total / denom);
}

}  // namespace fucina::kernels
