#include "fucina/kernels/gemm.h"

#include <algorithm>
#include <cstring>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"
#include "fucina/kernels/copy.h"

namespace fucina::kernels {

using internal::RawTensor;

void gemmRef(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
             bool accumulate) {
  if (!accumulate && m * n > 0) std::memset(c, 0, sizeof(float) * static_cast<size_t>(m * n));
  constexpr int64_t kBlock = 256;  // keeps a slab of B in cache while rows of A stream past
  for (int64_t k0 = 0; k0 < k; k0 += kBlock) {
    const int64_t k1 = std::min(k, k0 + kBlock);
    for (int64_t i = 0; i < m; ++i) {
      float* ci = c + i * n;
      const float* ai = a + i * k;
      for (int64_t p = k0; p < k1; ++p) {
        const float av = ai[p];
        const float* bp = b + p * n;
        for (int64_t j = 0; j < n; ++j) ci[j] += av * bp[j];
      }
    }
  }
}

void gemm(ExecContext& ctx, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c, bool accumulate) {
  // Rows per chunk so that each chunk does ~1M multiply-adds.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, n * k));
  ctx.parallelFor(m, grain, [&](int64_t begin, int64_t end) {
    gemmRef(end - begin, n, k, a + begin * k, b, c + begin * n, accumulate);
  });
}

namespace {

// Gathers the extents of `tags` in t, and their product.
int64_t productOf(const RawTensor& t, const Tags& tags, Extents* extents) {
  int64_t p = 1;
  for (Tag tag : tags) {
    const int64_t e = t.extent(tag);
    if (extents) extents->push_back(e);
    p *= e;
  }
  return p;
}

}  // namespace

RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b,
                   const Tags& contracted, const RawTensor& initial) {
  Tags batch, a_free, b_free;
  for (Tag tag : contracted) {
    if (a.extent(tag) != b.extent(tag))
      fail(ErrorCode::ShapeMismatch, "dot over '" + std::string(tag.name()) + "': extent " +
                                         std::to_string(a.extent(tag)) + " in " + a.describe() +
                                         " but " + std::to_string(b.extent(tag)) + " in " +
                                         b.describe());
  }
  for (Tag tag : a.tags()) {
    if (hasTag(contracted, tag)) continue;
    if (hasTag(b.tags(), tag)) {
      if (a.extent(tag) != b.extent(tag))
        fail(ErrorCode::ShapeMismatch, "dot: batch axis '" + std::string(tag.name()) +
                                           "' has extent " + std::to_string(a.extent(tag)) +
                                           " in " + a.describe() + " but " +
                                           std::to_string(b.extent(tag)) + " in " + b.describe());
      batch.push_back(tag);
    } else {
      a_free.push_back(tag);
    }
  }
  for (Tag tag : b.tags())
    if (!hasTag(contracted, tag) && !hasTag(a.tags(), tag)) b_free.push_back(tag);

  Extents batch_shape, m_shape, n_shape;
  const int64_t nb = productOf(a, batch, &batch_shape);
  const int64_t m = productOf(a, a_free, &m_shape);
  const int64_t n = productOf(b, b_free, &n_shape);
  const int64_t k = productOf(a, contracted, nullptr);

  // Lay both operands out as [batch, m, k] and [batch, k, n]; copies only when strided.
  const RawTensor ap = a.permuted(joinTags({batch, a_free, contracted})).contiguous(ctx);
  const RawTensor bp = b.permuted(joinTags({batch, contracted, b_free})).contiguous(ctx);
  Extents gemm_shape = batch_shape;
  gemm_shape.insert(gemm_shape.end(), m_shape.begin(), m_shape.end());
  gemm_shape.insert(gemm_shape.end(), n_shape.begin(), n_shape.end());
  const Tags gemm_tags = joinTags({batch, a_free, b_free});
  RawTensor out = RawTensor::empty(ctx, gemm_tags, gemm_shape, DType::f32);
  const float* pa = ap.f32();
  const float* pb = bp.f32();
  float* pc = out.f32();
  const bool accumulate = initial.valid();
  if (accumulate) copyConvert(initial.broadcastView(gemm_tags, gemm_shape), out);
  for (int64_t i = 0; i < nb; ++i)
    gemm(ctx, m, n, k, pa + i * m * k, pb + i * k * n, pc + i * m * n, accumulate);

  // Result order: a's remaining axes (batch and free, as they stand in a), then b_free.
  Tags order;
  for (Tag tag : a.tags())
    if (!hasTag(contracted, tag)) order.push_back(tag);
  order.insert(order.end(), b_free.begin(), b_free.end());
  if (order == gemm_tags) return out;
  return out.permuted(order).contiguous(ctx);
}

}  // namespace fucina::kernels
