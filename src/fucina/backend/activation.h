// Scalar activations and their derivatives shared by the unary ops and the gated units, so each
// formula is written once. Templates over float (the differentiable path) and double (the f64
// forward path, Note [Dtype rules]).
#pragma once

#include <cmath>
#include <type_traits>

namespace fucina::backend::act {

// A constant in T: the float literal for float (so the f32 results stay bit-for-bit what they
// were), the double literal for double (rounding the double to float could differ from it).
template <class T>
constexpr T constant(float f, double d) {
  if constexpr (std::is_same_v<T, float>) return f;
  else return static_cast<T>(d);
}

// The logistic function, split by sign so exp never overflows.
template <class T>
T logistic(T a) {
  if (a >= 0) return T(1) / (T(1) + std::exp(-a));
  const T e = std::exp(a);
  return e / (T(1) + e);
}

// silu (swish): x·σ(x); d/dx = σ(x)·(1 + x·(1 − σ(x))).
template <class T>
T silu(T a) { return a * logistic(a); }
inline float siluGrad(float a) {
  const float s = logistic(a);
  return s * (1.0f + a * (1.0f - s));
}

inline constexpr float kInvSqrt2 = 0.7071067811865476f;
inline constexpr float kInvSqrt2Pi = 0.3989422804014327f;  // 1/sqrt(2 pi)

// Exact gelu: x·Φ(x) = 0.5·x·(1 + erf(x/√2)); d/dx = Φ(x) + x·φ(x).
template <class T>
T geluErf(T a) {
  return T(0.5) * a * (T(1) + std::erf(a * constant<T>(kInvSqrt2, 0.7071067811865476)));
}
inline float geluErfGrad(float a) {
  const float cdf = 0.5f * (1.0f + std::erf(a * kInvSqrt2));
  return cdf + a * kInvSqrt2Pi * std::exp(-0.5f * a * a);
}

// gelu, tanh approximation (torch's approximate='tanh'): 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))).
inline constexpr float kSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;
template <class T>
T geluTanh(T a) {
  const T k = constant<T>(kSqrt2OverPi, 0.7978845608028654);
  const T c = constant<T>(kGeluCubic, 0.044715);
  return T(0.5) * a * (T(1) + std::tanh(k * (a + c * a * a * a)));
}
inline float geluTanhGrad(float a) {
  const float t = std::tanh(kSqrt2OverPi * (a + kGeluCubic * a * a * a));
  const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * a * a);
  return 0.5f * (1.0f + t) + 0.5f * a * (1.0f - t * t) * dinner;
}

}  // namespace fucina::backend::act
