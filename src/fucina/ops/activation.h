// Scalar activations and their derivatives shared by the unary ops and the gated units, so each
// formula is written once.
#pragma once

#include <cmath>

namespace fucina::ops::act {

// The logistic function, split by sign so exp never overflows.
inline float logistic(float a) {
  if (a >= 0) return 1.0f / (1.0f + std::exp(-a));
  const float e = std::exp(a);
  return e / (1.0f + e);
}

// silu (swish): x·σ(x); d/dx = σ(x)·(1 + x·(1 − σ(x))).
inline float silu(float a) { return a * logistic(a); }
inline float siluGrad(float a) {
  const float s = logistic(a);
  return s * (1.0f + a * (1.0f - s));
}

inline constexpr float kInvSqrt2 = 0.7071067811865476f;
inline constexpr float kInvSqrt2Pi = 0.3989422804014327f;  // 1/sqrt(2 pi)

// Exact gelu: x·Φ(x) = 0.5·x·(1 + erf(x/√2)); d/dx = Φ(x) + x·φ(x).
inline float geluErf(float a) { return 0.5f * a * (1.0f + std::erf(a * kInvSqrt2)); }
inline float geluErfGrad(float a) {
  const float cdf = 0.5f * (1.0f + std::erf(a * kInvSqrt2));
  return cdf + a * kInvSqrt2Pi * std::exp(-0.5f * a * a);
}

}  // namespace fucina::ops::act
