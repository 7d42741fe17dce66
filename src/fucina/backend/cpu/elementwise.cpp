#include "fucina/backend/cpu/elementwise.h"

namespace fucina::kernels {

using internal::RawTensor;

void addInto(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) {
  if (dst.numel() == 0) return;
  const RawTensor view = src.broadcastView(dst.tags(), dst.shape());
  const auto plan = planStrided<2>(dst.shape(), {&view.strides(), &dst.strides()});
  const float* s = view.f32();
  float* d = dst.f32();
  // Split like map: the backward pass sums every fan-out (residual streams, tied weights, the
  // slices of a fused projection) here, and on one thread it left the other idle (W3 perf).
  const bool simd = vec::enabled();
  forEachRowParallel(&ctx, plan, kElementwiseGrain, [&](const auto& off, int64_t n, const auto& st) {
    float* q = d + off[1];
    if (st[1] == 1 && (st[0] == 0 || st[0] == 1)) {
      if (simd) return vec::run(vec::Op::add, n, q, 1, s + off[0], st[0], q);
      for (int64_t i = 0; i < n; ++i) q[i] += s[off[0] + i * st[0]];
    } else {
      for (int64_t i = 0; i < n; ++i) q[i * st[1]] += s[off[0] + i * st[0]];
    }
  });
}

}  // namespace fucina::kernels
