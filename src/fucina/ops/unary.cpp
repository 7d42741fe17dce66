// Unary activations and elementary functions: each a row of backend/elementwise_table.h, where its
// forward and partial stand side by side.
#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include "fucina/ops/elementwise_op.h"

namespace fucina {

namespace rows = backend::rows;
using ops::rowOp;

Tensor Tensor::neg(ExecContext& ctx) const {
  if (ops::integerOperands("neg", {this})) return ops::integerOp<rows::Neg>(ctx, "neg", *this, nullptr);
  return rowOp<rows::Neg>(ctx, "neg", *this);
}

Tensor Tensor::abs(ExecContext& ctx) const { return rowOp<rows::Abs>(ctx, "abs", *this); }
Tensor Tensor::exp(ExecContext& ctx) const { return rowOp<rows::Exp>(ctx, "exp", *this); }
Tensor Tensor::log(ExecContext& ctx) const { return rowOp<rows::Log>(ctx, "log", *this); }
Tensor Tensor::sqrt(ExecContext& ctx) const { return rowOp<rows::Sqrt>(ctx, "sqrt", *this); }
Tensor Tensor::tanh(ExecContext& ctx) const { return rowOp<rows::Tanh>(ctx, "tanh", *this); }
Tensor Tensor::sigmoid(ExecContext& ctx) const { return rowOp<rows::Sigmoid>(ctx, "sigmoid", *this); }
Tensor Tensor::relu(ExecContext& ctx) const { return rowOp<rows::Relu>(ctx, "relu", *this); }
Tensor Tensor::leakyRelu(ExecContext& ctx, double slope) const {
  return rowOp<rows::LeakyRelu>(ctx, "leakyRelu", *this, {slope});
}
Tensor Tensor::gelu(ExecContext& ctx) const { return rowOp<rows::Gelu>(ctx, "gelu", *this); }
Tensor Tensor::geluErf(ExecContext& ctx) const { return rowOp<rows::GeluErf>(ctx, "geluErf", *this); }
Tensor Tensor::quickGelu(ExecContext& ctx) const { return rowOp<rows::QuickGelu>(ctx, "quickGelu", *this); }
Tensor Tensor::silu(ExecContext& ctx) const { return rowOp<rows::Silu>(ctx, "silu", *this); }
Tensor Tensor::elu(ExecContext& ctx, double alpha) const { return rowOp<rows::Elu>(ctx, "elu", *this, {alpha}); }
Tensor Tensor::log1p(ExecContext& ctx) const { return rowOp<rows::Log1p>(ctx, "log1p", *this); }
Tensor Tensor::rsqrt(ExecContext& ctx) const { return rowOp<rows::Rsqrt>(ctx, "rsqrt", *this); }
Tensor Tensor::reciprocal(ExecContext& ctx) const { return rowOp<rows::Reciprocal>(ctx, "reciprocal", *this); }
Tensor Tensor::sin(ExecContext& ctx) const { return rowOp<rows::Sin>(ctx, "sin", *this); }
Tensor Tensor::cos(ExecContext& ctx) const { return rowOp<rows::Cos>(ctx, "cos", *this); }

Tensor Tensor::clamp(ExecContext& ctx, double lo, double hi) const {
  if (!(lo <= hi))
    fail(ErrorCode::InvalidArgument, "clamp: lo (" + std::to_string(lo) + ") must be <= hi (" +
                                         std::to_string(hi) + ") for " + value().describe());
  return rowOp<rows::Clamp>(ctx, "clamp", *this, {lo, hi});
}

Tensor Tensor::floor(ExecContext& ctx) const { return rowOp<rows::Rounding>(ctx, "floor", *this, {rows::Rounding::kFloor}); }
Tensor Tensor::ceil(ExecContext& ctx) const { return rowOp<rows::Rounding>(ctx, "ceil", *this, {rows::Rounding::kCeil}); }
Tensor Tensor::round(ExecContext& ctx) const { return rowOp<rows::Rounding>(ctx, "round", *this, {rows::Rounding::kRound}); }
Tensor Tensor::sign(ExecContext& ctx) const { return rowOp<rows::Rounding>(ctx, "sign", *this, {rows::Rounding::kSign}); }
Tensor Tensor::fastTanh(ExecContext& ctx) const { return rowOp<rows::FastTanh>(ctx, "fastTanh", *this); }
Tensor Tensor::softcap30(ExecContext& ctx) const { return rowOp<rows::Softcap>(ctx, "softcap30", *this, {30.0}); }
Tensor Tensor::softcap15(ExecContext& ctx) const { return rowOp<rows::Softcap>(ctx, "softcap15", *this, {15.0}); }

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
