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

}  // namespace fucina::ops
