// Rotary embedding one row at a time, and the rows of rmsNorm·weight fused before it: scalar, the
// same on every host backend (the reference runs the rows in order, the cpu backend over its
// pool). A row is one position's D elements of the {batch..., position, dim} layout; c and s are
// that position's D/2 entries of the cos and sin tables.
#pragma once

#include <cmath>
#include <cstdint>

#include "fucina/core/raw_tensor.h"

namespace fucina::backend::rope {

// Rows of D elements: the last axis of x, row r at position r % T (T the extent of the axis
// before the last).
struct Geometry {
  int64_t rows, T, D;
};
inline Geometry geometryOf(const internal::RawTensor& x) {
  const int64_t D = x.shape().back(), T = x.shape()[x.rank() - 2];
  return {D == 0 ? 0 : x.numel() / D, T, D};
}

// y = each pair of x rotated by sign·angle; pair i is (i, i + D/2) for halves, (2i, 2i + 1)
// otherwise. x and y may alias.
inline void rotateRow(const float* x, float* y, const float* c, const float* s, int64_t D, bool halves, float sign) {
  const int64_t half = D / 2;
  const int64_t step = halves ? 1 : 2;       // pair i starts at i·step
  const int64_t partner = halves ? half : 1;  // and its second element is `partner` further on
  for (int64_t i = 0; i < half; ++i) {
    const int64_t a = i * step, b = a + partner;
    const float x0 = x[a], x1 = x[b], ci = c[i], si = sign * s[i];
    y[a] = x0 * ci - x1 * si;
    y[b] = x0 * si + x1 * ci;
  }
}

// The [T, D/2] tables of cos and sin of (offset + t)·base^(-2i/D), in f64 so that large positions
// keep their phase (and with no int64 wrap of offset + t).
inline void tables(float* cos, float* sin, int64_t T, int64_t D, double base, int64_t offset) {
  const int64_t half = D / 2;
  // No positions, no table: a dim of 2^40 with no positions looped 2^39 times (ops_fuzz).
  for (int64_t i = 0; T > 0 && i < half; ++i) {
    const double theta = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(D));
    for (int64_t t = 0; t < T; ++t) {
      const double angle = (static_cast<double>(offset) + static_cast<double>(t)) * theta;
      cos[t * half + i] = static_cast<float>(std::cos(angle));
      sin[t * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

// n = x·inv, u = n·w with inv = 1/sqrt(mean(x²) + eps) rounded to f32; returns inv.
inline float rmsNormMulRow(const float* x, const float* w, float* n, float* u, int64_t D, double eps) {
  double sq = 0;
  for (int64_t i = 0; i < D; ++i) sq += static_cast<double>(x[i]) * x[i];
  const auto s = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(D) + eps));
  for (int64_t i = 0; i < D; ++i) {
    n[i] = x[i] * s;
    u[i] = x[i] * s * w[i];
  }
  return s;
}

// gx = inv·(gu·w - n·<gu·w·n>), the mean in f64.
inline void rmsNormMulRowVjp(const float* gu, const float* n, const float* w, float inv, float* gx, int64_t D) {
  double k = 0;
  for (int64_t i = 0; i < D; ++i) k += static_cast<double>(gu[i]) * w[i] * n[i];
  const auto kf = static_cast<float>(k / static_cast<double>(D));
  for (int64_t i = 0; i < D; ++i) gx[i] = inv * (gu[i] * w[i] - n[i] * kf);
}

// gw = Σ over the rows of gu·n, in f64, in row order (acc: D zeros).
inline void weightGrad(const float* gu, const float* n, double* acc, float* gw, int64_t rows, int64_t D) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < D; ++i) acc[i] += static_cast<double>(gu[r * D + i]) * n[r * D + i];
  for (int64_t i = 0; i < D; ++i) gw[i] = static_cast<float>(acc[i]);
}

}  // namespace fucina::backend::rope
