// Unary activations and elementary functions: forward and partial side by side.
#include <array>
#include <cmath>
#include <string>
#include <string_view>

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

using ops::act::logistic;

// leakyRelu: slope·x for x <= 0; the gradient at 0 is the slope (torch: x > 0 ? 1 : slope).
Tensor Tensor::leakyRelu(ExecContext& ctx, double slope) const {
  const float s = static_cast<float>(slope);
  return unaryOp(ctx, "leakyRelu", *this, [slope](auto a) { return a > 0 ? a : a * static_cast<decltype(a)>(slope); },
                 kA, [s](float g, float a, float) { return a > 0 ? g : g * s; });
}

// gelu, tanh approximation (ops/activation.h).
Tensor Tensor::gelu(ExecContext& ctx) const {
  return unaryOp(ctx, "gelu", *this, [](auto a) { return ops::act::geluTanh(a); },
                 kA, [](float g, float a, float) { return g * ops::act::geluTanhGrad(a); });
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

// floor, ceil, round, sign: piecewise constant, so the gradient is zero (torch's convention).
// round is half to even (std::nearbyint in the default rounding mode), as torch.round. One
// instantiation serves the four (they are seldom hot; each unaryOp instantiation costs ~40 KB of
// wasm), the mode chosen per element.
namespace {

enum class Rounding { floor, ceil, round, sign };

Tensor roundingOp(ExecContext& ctx, const char* name, const Tensor& x, Rounding mode) {
  return unaryOp(ctx, name, x, [mode](auto a) {
                   using T = decltype(a);
                   switch (mode) {
                     case Rounding::floor: return std::floor(a);
                     case Rounding::ceil: return std::ceil(a);
                     case Rounding::round: return std::nearbyint(a);
                     default: return a > 0 ? T(1) : a < 0 ? T(-1) : a;  // sign keeps ±0 and NaN
                   }
                 },
                 kNone, [](float, float, float) { return 0.0f; });
}

}  // namespace

Tensor Tensor::floor(ExecContext& ctx) const { return roundingOp(ctx, "floor", *this, Rounding::floor); }
Tensor Tensor::ceil(ExecContext& ctx) const { return roundingOp(ctx, "ceil", *this, Rounding::ceil); }
Tensor Tensor::round(ExecContext& ctx) const { return roundingOp(ctx, "round", *this, Rounding::round); }
Tensor Tensor::sign(ExecContext& ctx) const { return roundingOp(ctx, "sign", *this, Rounding::sign); }

namespace {

// Lambert's continued fraction for tanh cut after 8 levels, as one ratio x·p(x²)/q(x²). It
// reaches 1 at |x| ~ 6.29 and stays above, so clamping the result to [-1, 1] gives at most 6.9e-6
// from tanh on all reals; clamping x to ±7 first keeps x⁸ far from overflow (NaN passes through).
template <class T>
T fastTanhOf(T a) {
  const T x = a < T(-7) ? T(-7) : a > T(7) ? T(7) : a;
  const T z = x * x;
  const T p = (((z + T(990)) * z + T(135135)) * z + T(4729725)) * z + T(34459425);
  const T q = (((T(45) * z + T(13860)) * z + T(945945)) * z + T(16216200)) * z + T(34459425);
  const T y = x * p / q;
  return y < T(-1) ? T(-1) : y > T(1) ? T(1) : y;
}

Tensor softcap(ExecContext& ctx, const char* name, const Tensor& x, float c) {
  return unaryOp(ctx, name, x, [c](auto a) {
                   using T = decltype(a);
                   return T(c) * std::tanh(a / T(c));
                 },
                 kY, [c](float g, float, float y) {
                   const float t = y / c;
                   return g * (1.0f - t * t);
                 });
}

}  // namespace

Tensor Tensor::fastTanh(ExecContext& ctx) const {
  return unaryOp(ctx, "fastTanh", *this, [](auto a) { return fastTanhOf(a); },
                 kY, [](float g, float, float y) { return g * (1.0f - y * y); });
}

Tensor Tensor::softcap30(ExecContext& ctx) const { return softcap(ctx, "softcap30", *this, 30.0f); }
Tensor Tensor::softcap15(ExecContext& ctx) const { return softcap(ctx, "softcap15", *this, 15.0f); }

namespace {

using UnaryMethod = Tensor (*)(const Tensor&, ExecContext&);
struct NamedUnary {
  std::string_view name;
  UnaryMethod apply;
};
#define FUCINA_NAMED(op) NamedUnary{#op, [](const Tensor& t, ExecContext& c) { return t.op(c); }}
constexpr std::array kNamedUnary = {
    FUCINA_NAMED(neg),      FUCINA_NAMED(abs),       FUCINA_NAMED(exp),       FUCINA_NAMED(log),
    FUCINA_NAMED(sqrt),     FUCINA_NAMED(tanh),      FUCINA_NAMED(sigmoid),   FUCINA_NAMED(relu),
    FUCINA_NAMED(leakyRelu), FUCINA_NAMED(gelu),     FUCINA_NAMED(geluErf),   FUCINA_NAMED(quickGelu),
    FUCINA_NAMED(silu),     FUCINA_NAMED(elu),       FUCINA_NAMED(log1p),     FUCINA_NAMED(rsqrt),
    FUCINA_NAMED(reciprocal), FUCINA_NAMED(sin),     FUCINA_NAMED(cos),       FUCINA_NAMED(floor),
    FUCINA_NAMED(ceil),     FUCINA_NAMED(round),     FUCINA_NAMED(sign),      FUCINA_NAMED(fastTanh),
    FUCINA_NAMED(softcap30), FUCINA_NAMED(softcap15),
};
#undef FUCINA_NAMED

}  // namespace

std::span<const std::string_view> Tensor::unaryNames() {
  static const auto names = [] {
    std::array<std::string_view, kNamedUnary.size()> n{};
    for (size_t i = 0; i < n.size(); ++i) n[i] = kNamedUnary[i].name;
    return n;
  }();
  return names;
}

Tensor Tensor::unary(ExecContext& ctx, std::string_view name) const {
  for (const NamedUnary& u : kNamedUnary)
    if (u.name == name) return u.apply(*this, ctx);
  std::string known;
  for (const NamedUnary& u : kNamedUnary) known += (known.empty() ? "" : ", ") + std::string(u.name);
  fail(ErrorCode::InvalidArgument, "unary: unknown op '" + std::string(name) + "' (use one of " + known + ")");
}

}  // namespace fucina
