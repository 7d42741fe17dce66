// Predicates and masks (reference §5.8, "Intentionally no-grad"): isnan, isinf, isfinite, the
// logical ops, any/all and bandMask. Each result is a u8 constant, 1 for true and 0 for false;
// an operand that requires gradients is fine, the result simply carries no graph. Operands of any
// element type but q8_0 are read as double; a nonzero value (NaN included) is true, as in torch.
#include <cmath>
#include <cstdint>
#include <string>

#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/cpu/softmax.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;

namespace {

template <class F>
Tensor predicate(ExecContext& ctx, const char* op, const Tensor& x, F f) {
  const RawTensor& a = ops::elementwiseValue(op, x);
  return Tensor::make(ctx, kernels::mapTo<uint8_t, double, 1>(ctx, a.tags(), a.shape(), {&a}, [f](double v) { return uint8_t(f(v)); }),
                      nullptr);
}

template <class F>
Tensor logical(ExecContext& ctx, const char* op, const Tensor& x, const Tensor& y, F f) {
  const RawTensor& a = ops::elementwiseValue(op, x);
  const RawTensor& b = ops::elementwiseValue(op, y);
  const kernels::AlignedShape s = kernels::alignShapes(op, a, b);
  return Tensor::make(ctx, kernels::mapTo<uint8_t, double, 2>(ctx, s.tags, s.shape, {&a, &b},
                                                              [f](double p, double q) { return uint8_t(f(p != 0, q != 0)); }),
                      nullptr);
}

// any (or, with any = false, all) of the truth values along one axis (dropped), or of every
// element when axis is null. kernels::axisLast keeps the other axes in x's order.
Tensor anyOrAll(ExecContext& ctx, const char* op, const Tensor& x, const Tag* axis, bool any) {
  const RawTensor& a = ops::elementwiseValue(op, x);
  const RawTensor truth = kernels::mapTo<uint8_t, double, 1>(ctx, a.tags(), a.shape(), {&a}, [](double v) { return uint8_t(v != 0); });
  const RawTensor rows = axis ? kernels::axisLast(ctx, truth, *axis) : truth.contiguous(ctx);
  const int64_t n = axis ? rows.extent(*axis) : rows.numel();
  Tags tags;
  Extents shape;
  if (axis)
    for (size_t i = 0; i + 1 < rows.rank(); ++i) tags.push_back(rows.tags()[i]), shape.push_back(rows.shape()[i]);
  RawTensor out = RawTensor::empty(ctx, tags, shape, DType::u8);
  const uint8_t* src = rows.data<uint8_t>();
  uint8_t* dst = out.data<uint8_t>();
  for (int64_t r = 0; r < out.numel(); ++r) {
    bool v = !any;  // the empty any is false, the empty all is true
    for (int64_t i = 0; i < n && v != any; ++i)
      if (bool(src[r * n + i]) == any) v = any;
    dst[r] = v;
  }
  return Tensor::make(ctx, std::move(out), nullptr);
}

}  // namespace

Tensor Tensor::isnan(ExecContext& ctx) const { return predicate(ctx, "isnan", *this, [](double v) { return std::isnan(v); }); }
Tensor Tensor::isinf(ExecContext& ctx) const { return predicate(ctx, "isinf", *this, [](double v) { return std::isinf(v); }); }
Tensor Tensor::isfinite(ExecContext& ctx) const {
  return predicate(ctx, "isfinite", *this, [](double v) { return std::isfinite(v); });
}
Tensor Tensor::logicalNot(ExecContext& ctx) const {
  return predicate(ctx, "logicalNot", *this, [](double v) { return v == 0; });
}
Tensor Tensor::logicalAnd(ExecContext& ctx, const Tensor& y) const {
  return logical(ctx, "logicalAnd", *this, y, [](bool p, bool q) { return p && q; });
}
Tensor Tensor::logicalOr(ExecContext& ctx, const Tensor& y) const {
  return logical(ctx, "logicalOr", *this, y, [](bool p, bool q) { return p || q; });
}
Tensor Tensor::logicalXor(ExecContext& ctx, const Tensor& y) const {
  return logical(ctx, "logicalXor", *this, y, [](bool p, bool q) { return p != q; });
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
  RawTensor out = RawTensor::empty(ctx, {row, col}, {rows, cols}, DType::u8);
  uint8_t* p = out.data<uint8_t>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) p[i * cols + j] = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
  return Tensor::make(ctx, std::move(out), nullptr);
}

}  // namespace fucina
