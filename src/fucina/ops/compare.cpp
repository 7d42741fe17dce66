// Elementwise comparison: a u8 constant of 1 (true) and 0 (false), operands aligned and broadcast
// by tag as in the binary pointwise ops; IEEE comparisons in double, two i64 operands as
// integers (Kernels::logic). Never differentiable, so no record even for variables.
#include <array>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

namespace fucina {

using internal::RawTensor;

namespace {

backend::Kernels::Logic relation(CompareOp op) {
  using L = backend::Kernels::Logic;
  switch (op) {
    case CompareOp::eq: return L::eq;
    case CompareOp::ne: return L::ne;
    case CompareOp::lt: return L::lt;
    case CompareOp::le: return L::le;
    case CompareOp::gt: return L::gt;
    case CompareOp::ge: return L::ge;
  }
  fail(ErrorCode::InvalidArgument, "compare: unknown CompareOp " + std::to_string(static_cast<int>(op)));
}

}  // namespace

Tensor Tensor::compare(ExecContext& ctx, const Tensor& y, CompareOp op) const {
  const RawTensor& a = ops::elementwiseValue("compare", *this);
  const RawTensor& b = ops::elementwiseValue("compare", y);
  const ops::AlignedShape s = ops::alignShapes("compare", a, b);
  const std::array<const RawTensor*, 2> in{&a, &b};
  return Tensor::make(ctx, backend::kernelsOf(ctx).logic(ctx, relation(op), s.tags, s.shape, in), nullptr);
}

}  // namespace fucina
