// The scans of Kernels (cumprod, the linear recurrence) one row at a time, in f64 accumulators:
// the reference backend runs these rows in order, the cpu backend spreads them over its pool.
// Rows are the last axis of contiguous f32 tensors, n elements each.
#pragma once

#include <cstdint>

namespace fucina::backend::scan {

inline void cumprodRow(const float* x, float* y, int64_t n) {
  double p = 1;
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(p *= x[i]);
}

// gx_i = y_{i-1}·S_i with S_i = g_i + x_{i+1}·S_{i+1} (S past the end is 0, y_{-1} = 1): the sum
// over j >= i of g_j·∏_{k<=j, k!=i} x_k, with no division by x_i, so zeros are exact.
inline void cumprodRowVjp(const float* x, const float* y, const float* g, float* gx, int64_t n) {
  double s = 0;
  for (int64_t i = n; i-- > 0;) {
    s = g[i] + (i + 1 < n ? x[i + 1] * s : 0.0);
    gx[i] = static_cast<float>((i > 0 ? y[i - 1] : 1.0) * s);
  }
}

// h_t = d_t·h_{t-1} + x_t from h_{-1} = h0.
inline void recurrenceRow(const float* x, const float* d, float h0, float* y, int64_t n) {
  double s = h0;
  for (int64_t t = 0; t < n; ++t) y[t] = static_cast<float>(s = d[t] * s + x[t]);
}

// G_t = g_t + d_{t+1}·G_{t+1} (G past the end is 0): gx_t = G_t, gd_t = G_t·h_{t-1}, and the
// return value gh0 = d_0·G_0.
inline float recurrenceRowVjp(const float* d, float h0, const float* y, const float* g, float* gx, float* gd,
                              int64_t n) {
  double s = 0;
  for (int64_t t = n; t-- > 0;) {
    s = g[t] + (t + 1 < n ? d[t + 1] * s : 0.0);
    gx[t] = static_cast<float>(s);
    gd[t] = static_cast<float>(s * (t > 0 ? y[t - 1] : h0));
  }
  return static_cast<float>(n > 0 ? d[0] * s : 0.0);
}

}  // namespace fucina::backend::scan
