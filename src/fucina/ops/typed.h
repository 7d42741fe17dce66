// Note [Dtype rules] (docs/design-notes.md, "Dtype rules"): the rule every computing op applies
// to an operand that is not f32.
//   - f16/bf16 that requires gradients: UnsupportedGradient, except in the ops differentiable
//     across dtypes (to, and the right operand of dot/einsum/addDot/matmul);
//   - f16/bf16 constants: converted to f32, the op runs in f32, and the result is cast to the
//     operands' common dtype: f16 when every floating operand is f16 (bf16 likewise), else f32,
//     as PyTorch's CPU half ops (f16 + f32 is f32);
//   - f64: computed in f64 by the ops that have an f64 path (pointwise, unary, reductions, dot),
//     DTypeMismatch elsewhere; integers and q8_0: DTypeMismatch unless the op takes them.
// An op calls `if (!ops::allF32({...})) return ops::viaF32(ctx, name, {...}, body)` first.
#pragma once

#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina::ops {

// True when every operand is f32: the op runs as it is.
bool allF32(std::initializer_list<const Tensor*> operands);

// Applies the rule above to the operands (throwing its errors) and returns the result's dtype.
DType typedResult(std::string_view op, std::initializer_list<const Tensor*> operands);

// Runs body on f32 copies of the operands (f16/bf16 constants; f32 operands are passed as they
// are, gradients and all) and casts its result to typedResult's dtype.
template <class Body>
Tensor viaF32(ExecContext& ctx, std::string_view op, std::initializer_list<const Tensor*> operands,
              Body body) {
  const DType out = typedResult(op, operands);
  std::vector<Tensor> f32;
  f32.reserve(operands.size());
  for (const Tensor* t : operands) f32.push_back(t->dtype() == DType::f32 ? *t : t->to(ctx, DType::f32));
  Tensor r = body(std::span<const Tensor>(f32));
  return out == DType::f32 ? r : r.to(ctx, out);
}

// For an op composed of other ops (mseLoss, the affine norms, conv2d with a bias): true when it
// should convert its operands once, up front, with viaF32 — some operand is 16-bit (or not
// floating, for the error) and none is f64, which its parts compute in double where they can.
// The 16-bit result is then the f32 result rounded once, not after every part.
bool composeViaF32(std::initializer_list<const Tensor*> operands);

// The f64 path (Note [Dtype rules]): true when some operand is f64, after checking that every
// operand is floating (else DTypeMismatch) and that none requires gradients while they are
// enabled (UnsupportedGradient: f64 results carry no gradient). The op then computes in double
// and returns a constant f64 tensor (PyTorch's promotion: f64 with f32/f16 is f64).
bool promotesToF64(std::string_view op, std::initializer_list<const Tensor*> operands);

// The integer path of add, sub, mul and neg: true when some operand is i32/i64/u8, after checking
// that they all have that one dtype (else DTypeMismatch, naming both dtypes).
bool integerOperands(std::string_view op, std::initializer_list<const Tensor*> operands);
bool isInteger(DType d);

// t's value, for ops that read any element type as double (compare, the masks, argmax): q8_0,
// stored in blocks, is DTypeMismatch.
const internal::RawTensor& elementwiseValue(std::string_view op, const Tensor& t);

// For the ops that copy or address single elements (flips, shifts, pads, diagonals, slice
// updates): a q8_0 tensor, whose blocks they would split, is DTypeMismatch.
void refuseQ8(std::string_view op, const internal::RawTensor& a);

}  // namespace fucina::ops
