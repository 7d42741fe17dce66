// Elementwise comparison: a u8 constant of 1 (true) and 0 (false), operands aligned and broadcast
// by tag as in the binary pointwise ops. Never differentiable, so no record even for variables.
#include <cstdint>

#include "fucina/backend/cpu/elementwise.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;

namespace {

// Applies op in T, reading both operands as T (IEEE comparisons in double: NaN is unordered, so
// only ne holds for it).
template <class T>
RawTensor compareAs(ExecContext& ctx, const kernels::AlignedShape& s, const RawTensor& a,
                    const RawTensor& b, CompareOp op) {
  auto run = [&](auto rel) { return kernels::mapTo<uint8_t, T, 2>(ctx, s.tags, s.shape, {&a, &b}, rel); };
  switch (op) {
    case CompareOp::eq: return run([](T x, T y) { return x == y; });
    case CompareOp::ne: return run([](T x, T y) { return x != y; });
    case CompareOp::lt: return run([](T x, T y) { return x < y; });
    case CompareOp::le: return run([](T x, T y) { return x <= y; });
    case CompareOp::gt: return run([](T x, T y) { return x > y; });
    case CompareOp::ge: return run([](T x, T y) { return x >= y; });
  }
  fail(ErrorCode::InvalidArgument, "compare: unknown CompareOp " + std::to_string(static_cast<int>(op)));
}

}  // namespace

Tensor Tensor::compare(ExecContext& ctx, const Tensor& y, CompareOp op) const {
  const RawTensor& a = ops::elementwiseValue("compare", *this);
  const RawTensor& b = ops::elementwiseValue("compare", y);
  const kernels::AlignedShape s = kernels::alignShapes("compare", a, b);
  // i64 beyond 2^53 is not exact in double, so two i64 operands compare as integers.
  if (a.dtype() == DType::i64 && b.dtype() == DType::i64)
    return Tensor::make(ctx, compareAs<int64_t>(ctx, s, a, b, op), nullptr);
  return Tensor::make(ctx, compareAs<double>(ctx, s, a, b, op), nullptr);  // mapTo reads them as double
}

}  // namespace fucina
