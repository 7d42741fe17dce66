#include "fucina/ops/typed.h"

#include <string>

#include "fucina/ag/control.h"
#include "fucina/core/error.h"

namespace fucina::ops {

bool allF32(std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    if (t->dtype() != DType::f32) return false;
  return true;
}

DType typedResult(std::string_view op, std::initializer_list<const Tensor*> operands) {
  bool any_f32 = false, any_f16 = false, any_bf16 = false;
  for (const Tensor* t : operands) {
    const DType d = t->dtype();
    switch (d) {
      case DType::f32: any_f32 = true; continue;
      case DType::f16: any_f16 = true; break;
      case DType::bf16: any_bf16 = true; break;
      case DType::f64:
        fail(ErrorCode::DTypeMismatch,
             std::string(op) + " has no f64 path (f64 computes in pointwise, unary, reduction and dot "
             "ops); got " + t->value().describe() + " f64, convert with to(ctx, DType::f32)");
      default:
        fail(ErrorCode::DTypeMismatch, std::string(op) + " computes in f32, got a " +
                                           std::string(name(d)) + " tensor " + t->value().describe() +
                                           (d == DType::q8_0 ? "; dequantize" : "; convert") +
                                           " with to(ctx, DType::f32)");
    }
    if (t->requiresGrad() && isGradEnabled())
      fail(ErrorCode::UnsupportedGradient,
           std::string(op) + " of a " + std::string(name(d)) + " tensor " + t->value().describe() +
               " that requires gradients: 16-bit tensors are differentiable only through to() and "
               "as the right operand of dot, einsum, addDot and matmul; cast with to(ctx, "
               "DType::f32) first (the cast is differentiable)");
  }
  if (any_f32 || (any_f16 && any_bf16)) return DType::f32;
  return any_f16 ? DType::f16 : DType::bf16;
}

bool composeViaF32(std::initializer_list<const Tensor*> operands) {
  bool f32 = true;
  for (const Tensor* t : operands) {
    if (t->dtype() == DType::f64) return false;
    f32 = f32 && t->dtype() == DType::f32;
  }
  return !f32;
}

bool isInteger(DType d) { return d == DType::i32 || d == DType::i64 || d == DType::u8; }

const internal::RawTensor& elementwiseValue(std::string_view op, const Tensor& t) {
  const internal::RawTensor& a = t.value();
  if (a.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": q8_0 tensor " + a.describe() +
                                       " is stored in blocks, not elements; dequantize it first");
  return a;
}

void refuseQ8(std::string_view op, const internal::RawTensor& a) {
  if (a.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, std::string(op) + " of q8_0 " + a.describe() +
                                       ": copying single elements would split its blocks; dequantize with to(ctx, DType::f32) first");
}

bool promotesToF64(std::string_view op, std::initializer_list<const Tensor*> operands) {
  bool any = false;
  for (const Tensor* t : operands) any = any || t->dtype() == DType::f64;
  if (!any) return false;
  for (const Tensor* t : operands) {
    if (!isFloat(t->dtype()))
      fail(ErrorCode::DTypeMismatch, std::string(op) + ": cannot combine an f64 tensor with the " +
                                         std::string(name(t->dtype())) + " tensor " +
                                         t->value().describe() + "; convert it with to(ctx, DType::f64)");
    if (t->requiresGrad() && isGradEnabled())
      fail(ErrorCode::UnsupportedGradient,
           std::string(op) + " of an f64 tensor with " + t->value().describe() +
               " that requires gradients: f64 results carry no gradient; convert the f64 operand "
               "with to(ctx, DType::f32), or run under noGrad()");
  }
  return true;
}

bool integerOperands(std::string_view op, std::initializer_list<const Tensor*> operands) {
  const Tensor* first = nullptr;
  for (const Tensor* t : operands)
    if (isInteger(t->dtype())) first = first ? first : t;
  if (!first) return false;
  for (const Tensor* t : operands)
    if (t->dtype() != first->dtype())
      fail(ErrorCode::DTypeMismatch,
           std::string(op) + ": integer arithmetic needs both operands of the same integer dtype, got " +
               std::string(name(first->dtype())) + " " + first->value().describe() + " and " +
               std::string(name(t->dtype())) + " " + t->value().describe() +
               "; convert one with to(ctx, ...) (integers never mix with floats implicitly)");
  return true;
}

}  // namespace fucina::ops
