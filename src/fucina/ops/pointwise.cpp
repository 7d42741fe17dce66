// Pointwise arithmetic: each op's forward and its VJP side by side. Binary operands align by tag
// and broadcast missing axes; each VJP sums its gradient back to its operand's own axes.
#include <cmath>
#include <string>

#include "fucina/ops/elementwise_op.h"

namespace fucina {

using namespace ops::reads;
using ops::binaryOp;
using ops::unaryOp;
using kernels::VecMap;
using Op = kernels::vec::Op;

Tensor Tensor::add(ExecContext& ctx, const Tensor& y) const {
  if (ops::integerOperands("add", {this, &y}))
    return ops::integerOp(ctx, "add", *this, &y, [](auto a, auto b) { return a + b; });
  return binaryOp(ctx, "add", *this, y, [](auto a, auto b) { return a + b; },
                  kNone, [](float g, float, float, float) { return g; },
                  kNone, [](float g, float, float, float) { return g; },
                  {VecMap{Op::add}, VecMap{Op::copy}, VecMap{Op::copy}});
}

Tensor Tensor::sub(ExecContext& ctx, const Tensor& y) const {
  if (ops::integerOperands("sub", {this, &y}))
    return ops::integerOp(ctx, "sub", *this, &y, [](auto a, auto b) { return a - b; });
  return binaryOp(ctx, "sub", *this, y, [](auto a, auto b) { return a - b; },
                  kNone, [](float g, float, float, float) { return g; },
                  kNone, [](float g, float, float, float) { return -g; },
                  {VecMap{Op::sub}, VecMap{Op::copy}, VecMap{Op::neg}});
}

Tensor Tensor::mul(ExecContext& ctx, const Tensor& y) const {
  if (ops::integerOperands("mul", {this, &y}))
    return ops::integerOp(ctx, "mul", *this, &y, [](auto a, auto b) { return a * b; });
  return binaryOp(ctx, "mul", *this, y, [](auto a, auto b) { return a * b; },
                  kB, [](float g, float, float b, float) { return g * b; },
                  kA, [](float g, float a, float, float) { return g * a; },
                  {VecMap{Op::mul}, VecMap{Op::mul, 0, 2}, VecMap{Op::mul, 0, 1}});
}

Tensor Tensor::div(ExecContext& ctx, const Tensor& y) const {
  return binaryOp(ctx, "div", *this, y, [](auto a, auto b) { return a / b; },
                  kB, [](float g, float, float b, float) { return g / b; },
                  kB | kY, [](float g, float, float b, float y) { return -g * y / b; });
}

// maximum/minimum: on exact ties the gradient is split evenly between the operands.
Tensor Tensor::maximum(ExecContext& ctx, const Tensor& y) const {
  return binaryOp(
      ctx, "maximum", *this, y, [](auto a, auto b) { return a >= b ? a : b; },
      kA | kB, [](float g, float a, float b, float) { return a > b ? g : a == b ? 0.5f * g : 0.0f; },
      kA | kB, [](float g, float a, float b, float) { return b > a ? g : a == b ? 0.5f * g : 0.0f; });
}

Tensor Tensor::minimum(ExecContext& ctx, const Tensor& y) const {
  return binaryOp(
      ctx, "minimum", *this, y, [](auto a, auto b) { return a <= b ? a : b; },
      kA | kB, [](float g, float a, float b, float) { return a < b ? g : a == b ? 0.5f * g : 0.0f; },
      kA | kB, [](float g, float a, float b, float) { return b < a ? g : a == b ? 0.5f * g : 0.0f; });
}

// pow: d/da = b·a^(b-1); d/db = y·ln(a), taken as 0 where a == 0 (torch's convention, so a zero
// base never turns the exponent's gradient into NaN).
Tensor Tensor::pow(ExecContext& ctx, const Tensor& exponent) const {
  return binaryOp(
      ctx, "pow", *this, exponent, [](auto a, auto b) { return std::pow(a, b); },
      kA | kB, [](float g, float a, float b, float) { return b == 0.0f ? 0.0f : g * b * std::pow(a, b - 1.0f); },
      kA | kY, [](float g, float a, float, float y) { return a == 0.0f ? 0.0f : g * y * std::log(a); });
}

Tensor Tensor::scale(ExecContext& ctx, double factor) const {
  const float s = static_cast<float>(factor);
  return unaryOp(ctx, "scale", *this, [factor](auto a) { return a * static_cast<decltype(a)>(factor); },
                 kNone, [s](float g, float, float) { return g * s; });
}

Tensor Tensor::addScalar(ExecContext& ctx, double value) const {
  return unaryOp(ctx, "addScalar", *this, [value](auto a) { return a + static_cast<decltype(a)>(value); },
                 kNone, [](float g, float, float) { return g; });
}

Tensor Tensor::subScalar(ExecContext& ctx, double value) const {
  return unaryOp(ctx, "subScalar", *this, [value](auto a) { return a - static_cast<decltype(a)>(value); },
                 kNone, [](float g, float, float) { return g; });
}

Tensor Tensor::divScalar(ExecContext& ctx, double value) const {
  const float v = static_cast<float>(value);
  return unaryOp(ctx, "divScalar", *this, [value](auto a) { return a / static_cast<decltype(a)>(value); },
                 kNone, [v](float g, float, float) { return g / v; });
}

Tensor Tensor::powScalar(ExecContext& ctx, double exponent) const {
  const float e = static_cast<float>(exponent);
  return unaryOp(ctx, "powScalar", *this, [exponent](auto a) { return std::pow(a, static_cast<decltype(a)>(exponent)); },
                 kA, [e](float g, float a, float) { return e == 0.0f ? 0.0f : g * e * std::pow(a, e - 1.0f); });
}

namespace {

// prelu's weight and snake's alpha are per-channel parameters: their axes must be among x's.
void requireAxesAmong(const char* op, const char* what, const Tensor& p, const Tensor& x) {
  for (const Tag& t : p.tags())
    if (!hasTag(x.tags(), t))
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": the " + what + " " + p.value().describe() +
                                         " has axis '" + std::string(t.name()) + "', which the input " +
                                         x.value().describe() + " lacks");
}

}  // namespace

Tensor Tensor::biasAdd(ExecContext& ctx, Tag axis, std::span<const float> bias) const {
  const int64_t n = extent(axis);
  if (static_cast<int64_t>(bias.size()) != n)
    fail(ErrorCode::ShapeMismatch, "biasAdd: the bias has " + std::to_string(bias.size()) + " values but axis '" +
                                       std::string(axis.name()) + "' of " + value().describe() + " has extent " +
                                       std::to_string(n));
  return add(ctx, Tensor::fromSlice(ctx, {axis}, {n}, bias));
}

// snake: x + sin²(αx)/α. d/dx = 1 + sin(2αx); d/dα = x·sin(2αx)/α − sin²(αx)/α².
Tensor Tensor::snake(ExecContext& ctx, const Tensor& alpha) const {
  requireAxesAmong("snake", "alpha", alpha, *this);
  return binaryOp(ctx, "snake", *this, alpha,
                  [](auto a, auto al) {
                    const auto s = std::sin(al * a);
                    return a + s * s / al;
                  },
                  kA | kB, [](float g, float a, float al, float) { return g * (1.0f + std::sin(2.0f * al * a)); },
                  kA | kB, [](float g, float a, float al, float) {
                    const float s = std::sin(al * a);
                    return g * (a * std::sin(2.0f * al * a) / al - s * s / (al * al));
                  });
}

// prelu: max(0, x) + w·min(0, x); at x = 0 the gradient is w (torch: x > 0 ? 1 : w), and w's is min(0, x).
Tensor Tensor::prelu(ExecContext& ctx, const Tensor& weight) const {
  requireAxesAmong("prelu", "weight", weight, *this);
  return binaryOp(ctx, "prelu", *this, weight, [](auto a, auto w) { return a > 0 ? a : w * a; },
                  kA | kB, [](float g, float a, float w, float) { return a > 0 ? g : g * w; },
                  kA, [](float g, float a, float, float) { return a > 0 ? 0.0f : g * a; });
}

}  // namespace fucina
