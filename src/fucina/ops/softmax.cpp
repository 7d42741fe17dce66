// Softmax and log-softmax along a named axis, each with its VJP. Both run row-wise over a copy
// laid out with the axis last; results keep the input's axis order (as a view).
#include <algorithm>
#include <cmath>

#include "fucina/backend/cpu/softmax.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

Tensor softmaxOp(ExecContext& ctx, const Tensor& x, Tag axis, bool log) {
  const char* name = log ? "logSoftmax" : "softmax";
  if (!ops::allF32({&x}))
    return ops::viaF32(ctx, name, {&x}, [&](std::span<const Tensor> f) { return softmaxOp(ctx, f[0], axis, log); });
  const RawTensor& a = x.value();
  const RawTensor in = kernels::axisLast(ctx, a, axis);
  RawTensor y = RawTensor::empty(ctx, in.tags(), in.shape());
  const int64_t n = in.extent(axis);
  const int64_t rows = n == 0 ? 0 : in.numel() / n;
  kernels::softmaxRows(ctx, in.f32(), y.f32(), rows, n, log);
  return ops::finishOp(ctx, name, y.permuted(a.tags()), {&x}, [&] {
    // softmax:     gx = y * (gy - sum(gy * y))
    // logSoftmax:  gx = gy - softmax * sum(gy), softmax = exp(y)
    return [y, axis, n, rows, log](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor gl = kernels::axisLast(c, gy, axis);
      RawTensor gx = RawTensor::empty(c, y.tags(), y.shape());
      const float* pg = gl.f32();
      const float* py = y.f32();
      float* out = gx.f32();
      c.parallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n)), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const float* gr = pg + r * n;
          const float* yr = py + r * n;
          float* o = out + r * n;
          double s = 0;
          if (log) {
            for (int64_t i = 0; i < n; ++i) s += gr[i];
            for (int64_t i = 0; i < n; ++i) o[i] = gr[i] - std::exp(yr[i]) * static_cast<float>(s);
          } else {
            for (int64_t i = 0; i < n; ++i) s += static_cast<double>(gr[i]) * yr[i];
            for (int64_t i = 0; i < n; ++i) o[i] = yr[i] * (gr[i] - static_cast<float>(s));
          }
        }
      });
      g[0] = std::move(gx);  // axis-last layout; the engine restores the operand's axis order
    };
  }, static_cast<size_t>(a.numel()) * 4);
}

}  // namespace

Tensor Tensor::softmax(ExecContext& ctx, Tag axis) const { return softmaxOp(ctx, *this, axis, false); }

Tensor Tensor::logSoftmax(ExecContext& ctx, Tag axis) const { return softmaxOp(ctx, *this, axis, true); }

}  // namespace fucina
