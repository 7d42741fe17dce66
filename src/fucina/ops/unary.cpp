// Unary activations and elementary functions: forward and partial side by side.
#include <cmath>
#include <string>

#include "fucina/ops/activation.h"
#include "fucina/ops/elementwise_op.h"

namespace fucina {

using namespace ops::reads;
using ops::unaryOp;
using kernels::VecMap;
using Op = kernels::vec::Op;

Tensor Tensor::neg(ExecContext& ctx) const {
  if (ops::integerOperands("neg", {this}))
    return ops::integerOp(ctx, "neg", *this, nullptr, [](auto a) { return decltype(a)(0) - a; });
  return unaryOp(ctx, "neg", *this, [](auto a) { return -a; },
                 kNone, [](float g, float, float) { return -g; },
                 {VecMap{Op::neg}, VecMap{Op::neg}, VecMap{}});
}

// abs: the subgradient at 0 is 0 (torch's sign(0) = 0).
Tensor Tensor::abs(ExecContext& ctx) const {
  return unaryOp(ctx, "abs", *this, [](auto a) { return std::fabs(a); },
                 kA, [](float g, float a, float) { return a > 0 ? g : a < 0 ? -g : 0.0f; });
}

Tensor Tensor::exp(ExecContext& ctx) const {
  return unaryOp(ctx, "exp", *this, [](auto a) { return std::exp(a); },
                 kY, [](float g, float, float y) { return g * y; });
}

Tensor Tensor::log(ExecContext& ctx) const {
  return unaryOp(ctx, "log", *this, [](auto a) { return std::log(a); },
                 kA, [](float g, float a, float) { return g / a; });
}

Tensor Tensor::sqrt(ExecContext& ctx) const {
  return unaryOp(ctx, "sqrt", *this, [](auto a) { return std::sqrt(a); },
                 kY, [](float g, float, float y) { return g * 0.5f / y; });
}

Tensor Tensor::tanh(ExecContext& ctx) const {
  return unaryOp(ctx, "tanh", *this, [](auto a) { return std::tanh(a); },
                 kY, [](float g, float, float y) { return g * (1.0f - y * y); });
}

Tensor Tensor::sigmoid(ExecContext& ctx) const {
  return unaryOp(ctx, "sigmoid", *this,
                 [](auto a) { return ops::act::logistic(a); },
                 kY, [](float g, float, float y) { return g * y * (1.0f - y); });
}

// relu: gradient 0 at 0, as in torch.
Tensor Tensor::relu(ExecContext& ctx) const {
  return unaryOp(ctx, "relu", *this, [](auto a) { return a > 0 ? a : decltype(a)(0); },
                 kA, [](float g, float a, float) { return a > 0 ? g : 0.0f; },
                 {VecMap{Op::relu}, VecMap{Op::reluGrad, 1, 0}, VecMap{}});
}

namespace {
using ops::act::logistic;
constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2/pi), torch's gelu 'tanh'
constexpr float kGeluCubic = 0.044715f;
}  // namespace

// leakyRelu: slope·x for x <= 0; the gradient at 0 is the slope (torch: x > 0 ? 1 : slope).
Tensor Tensor::leakyRelu(ExecContext& ctx, double slope) const {
  const float s = static_cast<float>(slope);
  return unaryOp(ctx, "leakyRelu", *this, [slope](auto a) { return a > 0 ? a : a * static_cast<decltype(a)>(slope); },
                 kA, [s](float g, float a, float) { return a > 0 ? g : g * s; });
}

// gelu, tanh approximation (torch's approximate='tanh'): 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))).
Tensor Tensor::gelu(ExecContext& ctx) const {
  return unaryOp(ctx, "gelu", *this,
                 [](auto a) {
                   using T = decltype(a);
                   const T k = ops::act::constant<T>(kSqrt2OverPi, 0.7978845608028654);
                   const T c = ops::act::constant<T>(kGeluCubic, 0.044715);
                   return T(0.5) * a * (T(1) + std::tanh(k * (a + c * a * a * a)));
                 },
                 kA, [](float g, float a, float) {
                   const float t = std::tanh(kSqrt2OverPi * (a + kGeluCubic * a * a * a));
                   const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * a * a);
                   return g * (0.5f * (1.0f + t) + 0.5f * a * (1.0f - t * t) * dinner);
                 });
}

// geluErf, exact: x·Φ(x) (ops/activation.h).
Tensor Tensor::geluErf(ExecContext& ctx) const {
  return unaryOp(ctx, "geluErf", *this, [](auto a) { return ops::act::geluErf(a); },
                 kA, [](float g, float a, float) { return g * ops::act::geluErfGrad(a); },
                 {VecMap{Op::geluErf}, VecMap{Op::geluErfGrad, 1, 0}, VecMap{}});
}

// quickGelu: x·σ(1.702x).
Tensor Tensor::quickGelu(ExecContext& ctx) const {
  return unaryOp(ctx, "quickGelu", *this, [](auto a) { return a * logistic(ops::act::constant<decltype(a)>(1.702f, 1.702) * a); },
                 kA, [](float g, float a, float) {
                   const float s = logistic(1.702f * a);
                   return g * (s + 1.702f * a * s * (1.0f - s));
                 });
}

// silu (swish): x·σ(x) (ops/activation.h).
Tensor Tensor::silu(ExecContext& ctx) const {
  return unaryOp(ctx, "silu", *this, [](auto a) { return ops::act::silu(a); },
                 kA, [](float g, float a, float) { return g * ops::act::siluGrad(a); });
}

// elu: α·(eˣ − 1) for x <= 0; the gradient at 0 is α (torch: x > 0 ? 1 : α·eˣ).
Tensor Tensor::elu(ExecContext& ctx, double alpha) const {
  const float al = static_cast<float>(alpha);
  return unaryOp(ctx, "elu", *this, [alpha](auto a) { return a > 0 ? a : static_cast<decltype(a)>(alpha) * std::expm1(a); },
                 kA, [al](float g, float a, float) { return a > 0 ? g : g * al * std::exp(a); });
}

Tensor Tensor::log1p(ExecContext& ctx) const {
  return unaryOp(ctx, "log1p", *this, [](auto a) { return std::log1p(a); },
                 kA, [](float g, float a, float) { return g / (1.0f + a); });
}

// rsqrt: x^(-1/2); d/dx = −½·y³.
Tensor Tensor::rsqrt(ExecContext& ctx) const {
  return unaryOp(ctx, "rsqrt", *this, [](auto a) { return decltype(a)(1) / std::sqrt(a); },
                 kY, [](float g, float, float y) { return -0.5f * g * y * y * y; });
}

Tensor Tensor::reciprocal(ExecContext& ctx) const {
  return unaryOp(ctx, "reciprocal", *this, [](auto a) { return decltype(a)(1) / a; },
                 kY, [](float g, float, float y) { return -g * y * y; });
}

Tensor Tensor::sin(ExecContext& ctx) const {
  return unaryOp(ctx, "sin", *this, [](auto a) { return std::sin(a); },
                 kA, [](float g, float a, float) { return g * std::cos(a); });
}

Tensor Tensor::cos(ExecContext& ctx) const {
  return unaryOp(ctx, "cos", *this, [](auto a) { return std::cos(a); },
                 kA, [](float g, float a, float) { return -g * std::sin(a); });
}

// clamp to [lo, hi]: the gradient passes where lo <= x <= hi, boundaries included (as torch).
Tensor Tensor::clamp(ExecContext& ctx, double lo, double hi) const {
  if (!(lo <= hi))
    fail(ErrorCode::InvalidArgument, "clamp: lo (" + std::to_string(lo) + ") must be <= hi (" +
                                         std::to_string(hi) + ") for " + value().describe());
  const float l = static_cast<float>(lo), h = static_cast<float>(hi);
  return unaryOp(ctx, "clamp", *this, [lo, hi](auto a) {
                   using T = decltype(a);
                   return a < T(lo) ? T(lo) : a > T(hi) ? T(hi) : a;
                 },
                 kA, [l, h](float g, float a, float) { return a >= l && a <= h ? g : 0.0f; });
}

}  // namespace fucina
