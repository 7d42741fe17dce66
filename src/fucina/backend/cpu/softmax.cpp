#include "fucina/backend/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fucina/exec/context.h"
#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/backend/kernels.h"
#include "fucina/backend/softmax_rows.h"

namespace fucina::kernels {

using internal::RawTensor;

void softmaxRows(ExecContext& ctx, const float* x, float* y, int64_t rows, int64_t n, bool log) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n));
  const bool simd = vec::enabled();
  ctx.parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (simd) {
        vec::softmaxRow(x + r * n, y + r * n, n, log);
        continue;
      }
      const float* xr = x + r * n;
      float* yr = y + r * n;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < n; ++i) m = std::max(m, xr[i]);
      if (!std::isfinite(m)) m = 0;  // all -inf (or empty): avoid inf - inf
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(xr[i] - m));
      if (log) {
        const float lse = static_cast<float>(std::log(sum));
        for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] - m - lse;
      } else {
        const double inv = 1.0 / sum;
        for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<float>(std::exp(static_cast<double>(xr[i] - m)) * inv);
      }
    }
  });
}

RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log) {
  const backend::RowLayout l = backend::rowLayout(x);
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  softmaxRows(ctx, x.f32(), y.f32(), l.rows, l.n, log);
  return y;
}

RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log) {
  const backend::RowLayout l = backend::rowLayout(y);
  const int64_t n = l.n;
  RawTensor gx = RawTensor::empty(ctx, y.tags(), y.shape());
  const float* pg = gy.f32();
  const float* py = y.f32();
  float* out = gx.f32();
  ctx.parallelFor(l.rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) backend::softmax::softmaxRowVjp(pg + r * n, py + r * n, out + r * n, n, log);
  });
  return gx;
}

}  // namespace fucina::kernels
