// The losses' rows as the plain loops: each row's loss and gradient from its log-probabilities,
// sums in f64.
#include <cmath>

#include "fucina/backend/reference/row_kernels.h"

namespace fucina::backend::reference {

Kernels::IndexFault firstLabelOutside(ExecContext& ctx, const RawTensor& labels, int64_t classes,
                                      std::optional<int64_t> ignore) {
  const RawTensor l = labels.to(ctx, DType::i64);
  for (int64_t i = 0; i < l.numel(); ++i) {
    const int64_t v = l.data<int64_t>()[i];
    if ((v < 0 || v >= classes) && !(ignore && v == *ignore)) return {i, v};
  }
  return {};
}

RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, double smoothing, bool plain) {
  const RowLayout l = rowLayout(lp);
  RawTensor loss = RawTensor::empty(ctx, Tags(lp.tags().begin(), lp.tags().end() - 1),
                                    Extents(lp.shape().begin(), lp.shape().end() - 1), DType::f64);
  for (int64_t r = 0; r < l.rows; ++r) {
    const float* row = lp.f32() + r * l.n;
    const int64_t y = labels.data<int64_t>()[r];
    double mean = 0;
    for (int64_t c = 0; c < l.n; ++c) mean += row[c];
    mean /= static_cast<double>(l.n);
    loss.data<double>()[r] = plain ? -static_cast<double>(row[y]) : -((1 - smoothing) * row[y] + smoothing * mean);
  }
  return loss;
}

RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, const RawTensor& gy,
                           float scale, double smoothing, bool plain) {
  const RowLayout l = rowLayout(lp);
  RawTensor gx = RawTensor::empty(ctx, lp.tags(), lp.shape());
  for (int64_t r = 0; r < l.rows; ++r) {
    const double f = gy.rank() > 0 ? gy.f32()[r] : static_cast<double>(gy.f32()[0]) * scale;
    const int64_t y = labels.data<int64_t>()[r];
    for (int64_t c = 0; c < l.n; ++c) {
      const double target = plain ? (c == y ? 1.0 : 0.0) : (1 - smoothing) * (c == y) + smoothing / l.n;
      const double p = plain ? 0.0 : std::exp(static_cast<double>(lp.f32()[r * l.n + c]));
      gx.f32()[r * l.n + c] = static_cast<float>(f * (p - target));
    }
  }
  return gx;
}

RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, double denom) {
  const RawTensor v = loss.to(ctx, DType::f64);
  double total = 0;
  for (int64_t i = 0; i < v.numel(); ++i) total += v.data<double>()[i];
  return RawTensor::full(ctx, {}, {}, total / denom);
}

}  // namespace fucina::backend::reference
