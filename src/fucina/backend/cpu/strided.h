// Strided N-d iteration shared by every elementwise kernel: dimensions that are contiguous for
// all operands are fused, then the innermost run is handed to a flat loop.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "fucina/exec/context.h"

namespace fucina::kernels {

template <size_t K>
struct StridedPlan {
  std::vector<int64_t> shape;                   // fused extents, outermost first (never empty)
  std::array<std::vector<int64_t>, K> strides;  // per operand, same length as shape

  int64_t inner() const { return shape.back(); }
  int64_t outer() const {
    int64_t n = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
    return n;
  }
};

// Drops size-1 axes and fuses neighbours that are contiguous for every operand.
template <size_t K>
StridedPlan<K> planStrided(const std::vector<int64_t>& shape,
                           const std::array<const std::vector<int64_t>*, K>& strides) {
  StridedPlan<K> plan;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool fuse = !plan.shape.empty();
    for (size_t k = 0; k < K && fuse; ++k)
      fuse = plan.strides[k].back() == (*strides[k])[d] * shape[d];
    if (fuse) {
      plan.shape.back() *= shape[d];
      for (size_t k = 0; k < K; ++k) plan.strides[k].back() = (*strides[k])[d];
    } else {
      plan.shape.push_back(shape[d]);
      for (size_t k = 0; k < K; ++k) plan.strides[k].push_back((*strides[k])[d]);
    }
  }
  if (plan.shape.empty()) {
    plan.shape.push_back(1);
    for (size_t k = 0; k < K; ++k) plan.strides[k].push_back(0);
  }
  return plan;
}

// Calls run(offsets, n, inner_strides) for outer rows [begin, end): offsets are element offsets
// of each operand's first element in that row, n the row length.
template <size_t K, class Run>
void forEachRow(const StridedPlan<K>& plan, int64_t begin, int64_t end, Run&& run) {
  const size_t outer_dims = plan.shape.size() - 1;
  std::array<int64_t, K> inner_strides;
  for (size_t k = 0; k < K; ++k) inner_strides[k] = plan.strides[k].back();
  std::vector<int64_t> index(outer_dims, 0);
  // Decompose begin into a multi-index.
  int64_t rest = begin;
  for (size_t d = outer_dims; d-- > 0;) {
    index[d] = rest % plan.shape[d];
    rest /= plan.shape[d];
  }
  std::array<int64_t, K> offsets{};
  for (size_t k = 0; k < K; ++k)
    for (size_t d = 0; d < outer_dims; ++d) offsets[k] += index[d] * plan.strides[k][d];
  for (int64_t row = begin; row < end; ++row) {
    run(offsets, plan.inner(), inner_strides);
    for (size_t d = outer_dims; d-- > 0;) {  // odometer increment
      for (size_t k = 0; k < K; ++k) offsets[k] += plan.strides[k][d];
      if (++index[d] < plan.shape[d]) break;
      for (size_t k = 0; k < K; ++k) offsets[k] -= plan.strides[k][d] * plan.shape[d];
      index[d] = 0;
    }
  }
}

// forEachRow over work items that each cover a part of a row: item w is part w % pieces of row
// w / pieces (the parts split the row evenly). A contiguous tensor fuses into one row, so this is
// what lets its elements spread over threads.
template <size_t K, class Run>
void forEachRowPiece(const StridedPlan<K>& plan, int64_t pieces, int64_t begin, int64_t end, Run&& run) {
  if (begin >= end) return;
  const int64_t n = plan.inner();
  const int64_t first = begin / pieces;
  int64_t row = first;
  forEachRow(plan, first, (end + pieces - 1) / pieces, [&](const auto& off, int64_t, const auto& st) {
    const int64_t p0 = std::max<int64_t>(0, begin - row * pieces);
    const int64_t p1 = std::min(pieces, end - row * pieces);
    const int64_t i0 = n * p0 / pieces, i1 = n * p1 / pieces;
    auto at = off;
    for (size_t k = 0; k < K; ++k) at[k] += i0 * st[k];
    run(at, i1 - i0, st);
    ++row;
  });
}

// forEachRowPiece over all of a plan's rows, cut into work items (rows, or parts of rows longer
// than `grain` elements), spread over ctx's pool when one is given and there are at least two
// grains of work (about `grain` elements per task). Any cut gives the same values.
template <size_t K, class Run>
void forEachRowParallel(const ExecContext* ctx, const StridedPlan<K>& plan, int64_t grain, Run&& run) {
  const int64_t pieces = std::max<int64_t>(1, plan.inner() / grain);
  const int64_t items = plan.outer() * pieces;
  auto range = [&](int64_t begin, int64_t end) { forEachRowPiece(plan, pieces, begin, end, run); };
  if (!ctx) return range(0, items);
  ctx->parallelFor(items, std::max<int64_t>(1, grain / std::max<int64_t>(1, plan.inner() / pieces)), range);
}

}  // namespace fucina::kernels
