// Dropout with an explicit seed: the mask is never stored, it is regenerated from (seed, index).
#include <cmath>

#include "fucina/core/random.h"
#include "fucina/backend/cpu/elementwise.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// Keep-or-drop multiplier of element `index`: 0 with probability p, else 1/(1-p).
struct Mask {
  uint64_t seed;
  double p;
  float keep_scale;
  float operator()(int64_t index) const {
    return random::unit(seed, static_cast<uint64_t>(index)) < p ? 0.0f : keep_scale;
  }
};

// out[i] = in[i] * mask(i) over a contiguous copy of `in` (row-major index order of its axes).
RawTensor applyMask(ExecContext& ctx, const RawTensor& in, const Mask& mask) {
  const RawTensor src = in.contiguous(ctx);
  RawTensor out = RawTensor::empty(ctx, src.tags(), src.shape());
  const float* s = src.f32();
  float* o = out.f32();
  ctx.parallelFor(out.numel(), kernels::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = s[i] * mask(i);
  });
  return out;
}

}  // namespace

Tensor Tensor::dropout(ExecContext& ctx, double p, uint64_t seed) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "dropout", {this}, [&](std::span<const Tensor> f) { return f[0].dropout(ctx, p, seed); });
  if (!(p >= 0.0 && p <= 1.0))
    fail(ErrorCode::InvalidArgument, "dropout: p must be in [0, 1], got " + std::to_string(p));
  const Mask mask{seed, p, p >= 1.0 ? 0.0f : static_cast<float>(1.0 / (1.0 - p))};
  RawTensor out = applyMask(ctx, value(), mask);
  return ops::finishOp(ctx, "dropout", out, {this}, [&] {
    // gy is laid out in this op's output axes, so index i names the same element as in forward.
    return [mask](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) { g[0] = applyMask(c, gy, mask); };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace fucina
