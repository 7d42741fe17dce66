/// @file
/// Differentiable elementwise ops from a user's scalar functions: the elementwise op machinery
/// (ops/elementwise_op.h) over LambdaMath, computed by the host's maps whatever the backend.
#pragma once

#include "fucina/ag/tensor.h"
#include "fucina/ops/elementwise_op.h"

namespace fucina {

/// y = f(x) per element, with dfdx(x) its derivative: a differentiable op from two scalar functions.
template <class F, class DF>
Tensor elementalUnary(ExecContext& ctx, const Tensor& x, F f, DF dfdx) {
  auto da = [dfdx](float g, float a, float) { return g * dfdx(a); };
  return ops::unaryOp(ctx, "elementalUnary", x,
                      ops::LambdaMath<1, F, decltype(da), decltype(da)>{ops::reads::kA, 0, f, da, da});
}

/// y = f(a, b) per element (operands aligned by tag), with partials dfda(a, b) and dfdb(a, b).
template <class F, class DA, class DB>
Tensor elementalBinary(ExecContext& ctx, const Tensor& a, const Tensor& b, F f, DA dfda, DB dfdb) {
  using namespace ops::reads;
  auto da = [dfda](float g, float x, float y, float) { return g * dfda(x, y); };
  auto db = [dfdb](float g, float x, float y, float) { return g * dfdb(x, y); };
  return ops::binaryOp(ctx, "elementalBinary", a, b,
                       ops::LambdaMath<2, F, decltype(da), decltype(db)>{kA | kB, kA | kB, f, da, db});
}

}  // namespace fucina
