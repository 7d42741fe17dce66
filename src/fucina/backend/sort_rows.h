// One row of Kernels::sortRows and of argExtremumRows: the reference backend runs the rows in
// order, the cpu backend spreads them over its pool.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace fucina::backend::sorting {

// The first k of row (order.size() values) by a strict weak order: NaN above every number; among
// equals, the lower index first. `order` is scratch, one element per value.
inline void sortRow(const float* row, int64_t k, bool largest, std::vector<int64_t>& order, float* values,
                    int64_t* indices) {
  auto before = [&](int64_t i, int64_t j) {
    const float u = row[i], v = row[j];
    const bool un = std::isnan(u), vn = std::isnan(v);
    if (un || vn) return un != vn ? (largest ? un : vn) : i < j;
    if (u != v) return largest ? u > v : u < v;
    return i < j;
  };
  std::iota(order.begin(), order.end(), int64_t{0});
  std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
  for (int64_t j = 0; j < k; ++j) {
    values[j] = row[order[static_cast<size_t>(j)]];
    indices[j] = order[static_cast<size_t>(j)];
  }
}

// The first index of the largest (smallest) of n > 0 values, a NaN counting as the extreme.
inline int64_t argExtremumRow(const double* row, int64_t n, bool largest) {
  int64_t best = 0;
  for (int64_t i = 1; i < n && !std::isnan(row[best]); ++i)
    if (std::isnan(row[i]) || (largest ? row[i] > row[best] : row[i] < row[best])) best = i;
  return best;
}

}  // namespace fucina::backend::sorting
