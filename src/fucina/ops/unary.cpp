// Unary activations and elementary functions: forward and partial side by side.
#include <cmath>

#include "fucina/ops/elementwise_op.h"

namespace fucina {

using namespace ops::reads;
using ops::unaryOp;

Tensor Tensor::neg(ExecContext& ctx) const {
  return unaryOp(ctx, "neg", *this, [](float a) { return -a; },
                 kNone, [](float g, float, float) { return -g; });
}

// abs: the subgradient at 0 is 0 (torch's sign(0) = 0).
Tensor Tensor::abs(ExecContext& ctx) const {
  return unaryOp(ctx, "abs", *this, [](float a) { return std::fabs(a); },
                 kA, [](float g, float a, float) { return a > 0 ? g : a < 0 ? -g : 0.0f; });
}

Tensor Tensor::exp(ExecContext& ctx) const {
  return unaryOp(ctx, "exp", *this, [](float a) { return std::exp(a); },
                 kY, [](float g, float, float y) { return g * y; });
}

Tensor Tensor::log(ExecContext& ctx) const {
  return unaryOp(ctx, "log", *this, [](float a) { return std::log(a); },
                 kA, [](float g, float a, float) { return g / a; });
}

Tensor Tensor::sqrt(ExecContext& ctx) const {
  return unaryOp(ctx, "sqrt", *this, [](float a) { return std::sqrt(a); },
                 kY, [](float g, float, float y) { return g * 0.5f / y; });
}

Tensor Tensor::tanh(ExecContext& ctx) const {
  return unaryOp(ctx, "tanh", *this, [](float a) { return std::tanh(a); },
                 kY, [](float g, float, float y) { return g * (1.0f - y * y); });
}

Tensor Tensor::sigmoid(ExecContext& ctx) const {
  // Split by sign so exp never overflows.
  return unaryOp(ctx, "sigmoid", *this,
                 [](float a) {
                   if (a >= 0) return 1.0f / (1.0f + std::exp(-a));
                   const float e = std::exp(a);
                   return e / (1.0f + e);
                 },
                 kY, [](float g, float, float y) { return g * y * (1.0f - y); });
}

// relu: gradient 0 at 0, as in torch.
Tensor Tensor::relu(ExecContext& ctx) const {
  return unaryOp(ctx, "relu", *this, [](float a) { return a > 0 ? a : 0.0f; },
                 kA, [](float g, float a, float) { return a > 0 ? g : 0.0f; });
}

}  // namespace fucina
