// The cpu backend's quantizers: q8_0 blocks on the work pool, the ternary weights in two passes.
#include "fucina/backend/cpu/quantize.h"

#include <algorithm>
#include <cmath>

#include "fucina/backend/q8_blocks.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis) {
  RawTensor out = RawTensor::emptyQ8(ctx, a.tags(), a.shape(), block_axis);  // checks the axis
  if (a.numel() == 0) return out;
  const backend::q8blocks::Plan p = backend::q8blocks::plan(a, out, block_axis);
  ctx.parallelFor(p.blocks(), 1024, [&](int64_t begin, int64_t end) { backend::q8blocks::quantizeBlocks(p, begin, end); });
  return out;
}

RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w) {
  const RawTensor wc = w.contiguous(ctx);
  const float* pw = wc.f32();
  const int64_t n = wc.numel();
  double abs_sum = 0;
  for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(pw[i]);
  const auto s = static_cast<float>(n == 0 ? 0.0 : abs_sum / static_cast<double>(n));
  RawTensor q = RawTensor::empty(ctx, wc.tags(), wc.shape());
  float* pq = q.f32();
  for (int64_t i = 0; i < n; ++i)
    pq[i] = s == 0.0f ? 0.0f : std::nearbyint(std::clamp(pw[i] / s, -1.0f, 1.0f)) * s;
  return q;
}

}  // namespace fucina::kernels
