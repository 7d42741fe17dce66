// Softmax rows as the plain loop: max subtracted, exp and the sum in f64.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fucina/backend/reference/row_kernels.h"
#include "fucina/backend/softmax_rows.h"

namespace fucina::backend::reference {

RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log) {
  const RowLayout l = rowLayout(x);
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  for (int64_t r = 0; r < l.rows; ++r) {
    const float* xr = x.f32() + r * l.n;
    float* yr = y.f32() + r * l.n;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < l.n; ++i) m = std::max(m, xr[i]);
    if (!std::isfinite(m)) m = 0;  // all -inf: no inf - inf
    double sum = 0;
    for (int64_t i = 0; i < l.n; ++i) sum += std::exp(static_cast<double>(xr[i] - m));
    for (int64_t i = 0; i < l.n; ++i) {
      const double e = static_cast<double>(xr[i] - m);
      yr[i] = static_cast<float>(log ? e - std::log(sum) : std::exp(e) / sum);
    }
  }
  return y;
}

RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log) {
  const RowLayout l = rowLayout(y);
  RawTensor gx = RawTensor::empty(ctx, y.tags(), y.shape());
  for (int64_t r = 0, o = 0; r < l.rows; ++r, o += l.n)
    softmax::softmaxRowVjp(gy.f32() + o, y.f32() + o, gx.f32() + o, l.n, log);
  return gx;
}

}  // namespace fucina::backend::reference
