// Predicates and masks, intentionally without gradient: isnan, isinf, isfinite, the
// logical ops, any/all and bandMask. Each result is a u8 constant, 1 for true and 0 for false;
// an operand that requires gradients is fine, the result simply carries no graph. Operands of any
// element type but q8_0 are read as double; a nonzero value (NaN included) is true, as in torch.
#include <cstdint>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

namespace fucina {

using internal::RawTensor;

namespace {

using Logic = backend::Kernels::Logic;

Tensor predicate(ExecContext& ctx, const char* op, const Tensor& x, Logic f) {
  const RawTensor& a = ops::elementwiseValue(op, x);
  const RawTensor* in[] = {&a};
  return Tensor::make(ctx, backend::kernelsOf(ctx).logic(ctx, f, a.tags(), a.shape(), in), nullptr);
}

Tensor logical(ExecContext& ctx, const char* op, const Tensor& x, const Tensor& y, Logic f) {
  const RawTensor& a = ops::elementwiseValue(op, x);
  const RawTensor& b = ops::elementwiseValue(op, y);
  const ops::AlignedShape s = ops::alignShapes(op, a, b);
  const RawTensor* in[] = {&a, &b};
  return Tensor::make(ctx, backend::kernelsOf(ctx).logic(ctx, f, s.tags, s.shape, in), nullptr);
}

// any (or, with any = false, all) of the truth values along one axis (dropped), or of every
// element when axis is null (seen as one row). ops::axisLast keeps the other axes in x's order.
Tensor anyOrAll(ExecContext& ctx, const char* op, const Tensor& x, const Tag* axis, bool any) {
  const RawTensor& a = ops::elementwiseValue(op, x);
  const backend::Kernels& k = backend::kernelsOf(ctx);
  const RawTensor* in[] = {&a};
  const RawTensor truth = k.logic(ctx, Logic::truth, a.tags(), a.shape(), in);
  RawTensor rows;
  if (axis) {
    rows = ops::axisLast(ctx, truth, *axis);
  } else {
    const RawTensor flat = truth.contiguous(ctx);
    rows = RawTensor::view(flat.storage(), DType::u8, {"elements"}, {flat.numel()}, {1}, flat.offset());
  }
  return Tensor::make(ctx, k.truthRows(ctx, rows, any), nullptr);
}

}  // namespace

Tensor Tensor::isnan(ExecContext& ctx) const { return predicate(ctx, "isnan", *this, Logic::isnan); }
Tensor Tensor::isinf(ExecContext& ctx) const { return predicate(ctx, "isinf", *this, Logic::isinf); }
Tensor Tensor::isfinite(ExecContext& ctx) const { return predicate(ctx, "isfinite", *this, Logic::isfinite); }
Tensor Tensor::logicalNot(ExecContext& ctx) const { return predicate(ctx, "logicalNot", *this, Logic::logicalNot); }
Tensor Tensor::logicalAnd(ExecContext& ctx, const Tensor& y) const {
  return logical(ctx, "logicalAnd", *this, y, Logic::logicalAnd);
}
Tensor Tensor::logicalOr(ExecContext& ctx, const Tensor& y) const {
  return logical(ctx, "logicalOr", *this, y, Logic::logicalOr);
}
Tensor Tensor::logicalXor(ExecContext& ctx, const Tensor& y) const {
  return logical(ctx, "logicalXor", *this, y, Logic::logicalXor);
}
Tensor Tensor::any(ExecContext& ctx, Tag axis) const { return anyOrAll(ctx, "any", *this, &axis, true); }
Tensor Tensor::all(ExecContext& ctx, Tag axis) const { return anyOrAll(ctx, "all", *this, &axis, false); }
Tensor Tensor::anyAll(ExecContext& ctx) const { return anyOrAll(ctx, "anyAll", *this, nullptr, true); }
Tensor Tensor::allAll(ExecContext& ctx) const { return anyOrAll(ctx, "allAll", *this, nullptr, false); }

Tensor Tensor::bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower, int64_t upper) {
  if (row == col) fail(ErrorCode::InvalidArgument, "bandMask: row and col must be two axes, got '" + std::string(row.name()) + "' twice");
  if (rows < 0 || cols < 0 || lower < -1 || upper < -1)
    fail(ErrorCode::InvalidArgument, "bandMask: rows and cols must be >= 0 and lower, upper >= -1 (unbounded), got rows " +
                                         std::to_string(rows) + ", cols " + std::to_string(cols) + ", lower " +
                                         std::to_string(lower) + ", upper " + std::to_string(upper));
  return Tensor::make(ctx, backend::kernelsOf(ctx).bandMask(ctx, row, col, rows, cols, lower, upper), nullptr);
}

}  // namespace fucina
