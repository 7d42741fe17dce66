// Softmax and log-softmax along a named axis, each with its VJP. Both run the backend's softmax
// rows over a copy laid out with the axis last; results keep the input's axis order (as a view).
#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

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
  RawTensor y = backend::kernelsOf(ctx).softmaxRows(ctx, ops::axisLast(ctx, a, axis), log);
  return ops::finishOp(ctx, name, y.permuted(a.tags()), {&x}, [&] {
    // softmax:     gx = y * (gy - sum(gy * y))
    // logSoftmax:  gx = gy - softmax * sum(gy), softmax = exp(y)
    return [y, axis, log](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      // axis-last layout; the engine restores the operand's axis order
      g[0] = backend::kernelsOf(c).softmaxRowsVjp(c, y, ops::axisLast(c, gy, axis), log);
    };
  }, static_cast<size_t>(a.numel()) * 4);
}

}  // namespace

Tensor Tensor::softmax(ExecContext& ctx, Tag axis) const { return softmaxOp(ctx, *this, axis, false); }

Tensor Tensor::logSoftmax(ExecContext& ctx, Tag axis) const { return softmaxOp(ctx, *this, axis, true); }

}  // namespace fucina
