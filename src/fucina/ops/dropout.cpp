// Dropout with an explicit seed: the mask is never stored; the backend regenerates it from
// (seed, index) in the forward and again in the VJP (Kernels::dropout).
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

Tensor Tensor::dropout(ExecContext& ctx, double p, uint64_t seed) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "dropout", {this}, [&](std::span<const Tensor> f) { return f[0].dropout(ctx, p, seed); });
  if (!(p >= 0.0 && p <= 1.0))
    fail(ErrorCode::InvalidArgument, "dropout: p must be in [0, 1], got " + std::to_string(p));
  // Keep-or-drop multiplier of element i: 0 with probability p, else 1/(1-p).
  const float keep_scale = p >= 1.0 ? 0.0f : static_cast<float>(1.0 / (1.0 - p));
  RawTensor out = backend::kernelsOf(ctx).dropout(ctx, value(), seed, p, keep_scale);
  return ops::finishOp(ctx, "dropout", out, {this}, [&] {
    // gy is laid out in this op's output axes, so index i names the same element as in forward.
    return [seed, p, keep_scale](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = backend::kernelsOf(c).dropout(c, gy, seed, p, keep_scale);
    };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace fucina
