// The reference backend's quantizers: the q8_0 blocks one after another on the calling thread,
// and the ternary weights over w's logical indices.
#include <algorithm>
#include <cmath>

#include "fucina/backend/q8_blocks.h"
#include "fucina/backend/reference/weights.h"

namespace fucina::backend::reference {

RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis) {
  RawTensor out = RawTensor::emptyQ8(ctx, a.tags(), a.shape(), block_axis);  // checks the axis
  if (a.numel() == 0) return out;
  const q8blocks::Plan p = q8blocks::plan(a, out, block_axis);
  q8blocks::quantizeBlocks(p, 0, p.blocks());
  return out;
}

RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w) {
  const std::vector<float> v = w.toVector();  // row-major over w's axes
  double abs_sum = 0;
  for (float x : v) abs_sum += std::fabs(x);
  const auto s = static_cast<float>(v.empty() ? 0.0 : abs_sum / static_cast<double>(v.size()));
  RawTensor q = RawTensor::empty(ctx, w.tags(), w.shape());
  float* pq = q.f32();
  for (size_t i = 0; i < v.size(); ++i)
    pq[i] = s == 0.0f ? 0.0f : std::nearbyint(std::clamp(v[i] / s, -1.0f, 1.0f)) * s;
  return q;
}

}  // namespace fucina::backend::reference
