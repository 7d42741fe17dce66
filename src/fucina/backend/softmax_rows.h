// The softmax VJP one row at a time, sums in f64: the reference backend runs the rows in order,
// the cpu backend spreads them over its pool. Rows of n elements, contiguous.
#pragma once

#include <cmath>
#include <cstdint>

namespace fucina::backend::softmax {

// softmax: gx = y·(g - Σ g·y); log-softmax (y the log-probabilities): gx = g - exp(y)·Σ g.
inline void softmaxRowVjp(const float* g, const float* y, float* gx, int64_t n, bool log) {
  double s = 0;
  if (log) {
    for (int64_t i = 0; i < n; ++i) s += g[i];
    for (int64_t i = 0; i < n; ++i) gx[i] = g[i] - std::exp(y[i]) * static_cast<float>(s);
  } else {
    for (int64_t i = 0; i < n; ++i) s += static_cast<double>(g[i]) * y[i];
    for (int64_t i = 0; i < n; ++i) gx[i] = y[i] * (g[i] - static_cast<float>(s));
  }
}

}  // namespace fucina::backend::softmax
