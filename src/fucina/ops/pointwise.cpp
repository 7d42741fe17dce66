// Pointwise arithmetic: each op is a row of backend/elementwise_table.h (its forward and partials
// side by side there). Binary operands align by tag and broadcast missing axes; each VJP sums its
// gradient back to its operand's own axes.
#include <cmath>
#include <string>

#include "fucina/ops/elementwise_op.h"

namespace fucina {

namespace rows = backend::rows;
using ops::rowOp;

Tensor Tensor::add(ExecContext& ctx, const Tensor& y) const {
  if (ops::integerOperands("add", {this, &y})) return ops::integerOp<rows::Add>(ctx, "add", *this, &y);
  return rowOp<rows::Add>(ctx, "add", *this, y);
}

Tensor Tensor::sub(ExecContext& ctx, const Tensor& y) const {
  if (ops::integerOperands("sub", {this, &y})) return ops::integerOp<rows::Sub>(ctx, "sub", *this, &y);
  return rowOp<rows::Sub>(ctx, "sub", *this, y);
}

Tensor Tensor::mul(ExecContext& ctx, const Tensor& y) const {
  if (ops::integerOperands("mul", {this, &y})) return ops::integerOp<rows::Mul>(ctx, "mul", *this, &y);
  return rowOp<rows::Mul>(ctx, "mul", *this, y);
}

Tensor Tensor::div(ExecContext& ctx, const Tensor& y) const { return rowOp<rows::Div>(ctx, "div", *this, y); }
Tensor Tensor::maximum(ExecContext& ctx, const Tensor& y) const { return rowOp<rows::Maximum>(ctx, "maximum", *this, y); }
Tensor Tensor::minimum(ExecContext& ctx, const Tensor& y) const { return rowOp<rows::Minimum>(ctx, "minimum", *this, y); }
Tensor Tensor::pow(ExecContext& ctx, const Tensor& exponent) const { return rowOp<rows::Pow>(ctx, "pow", *this, exponent); }

Tensor Tensor::scale(ExecContext& ctx, double factor) const { return rowOp<rows::Scale>(ctx, "scale", *this, {factor}); }
Tensor Tensor::addScalar(ExecContext& ctx, double value) const {
  return rowOp<rows::AddScalar>(ctx, "addScalar", *this, {value});
}
Tensor Tensor::subScalar(ExecContext& ctx, double value) const {
  return rowOp<rows::SubScalar>(ctx, "subScalar", *this, {value});
}
Tensor Tensor::divScalar(ExecContext& ctx, double value) const {
  return rowOp<rows::DivScalar>(ctx, "divScalar", *this, {value});
}
Tensor Tensor::powScalar(ExecContext& ctx, double exponent) const {
  return rowOp<rows::PowScalar>(ctx, "powScalar", *this, {exponent});
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

Tensor Tensor::snake(ExecContext& ctx, const Tensor& alpha) const {
  requireAxesAmong("snake", "alpha", alpha, *this);
  return rowOp<rows::Snake>(ctx, "snake", *this, alpha);
}

Tensor Tensor::prelu(ExecContext& ctx, const Tensor& weight) const {
  requireAxesAmong("prelu", "weight", weight, *this);
  return rowOp<rows::Prelu>(ctx, "prelu", *this, weight);
}

}  // namespace fucina
