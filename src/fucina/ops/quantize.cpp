// Block quantization to q8_0 (Note [q8_0 layout], core/q8.h). Not differentiable: the result is
// a constant, as every quantized tensor is.
#include <string>

#include "fucina/ag/tensor.h"
#include "fucina/backend/kernels.h"
#include "fucina/core/error.h"

namespace fucina {

using internal::RawTensor;

Tensor Tensor::quantize(ExecContext& ctx, DType dtype, Tag block_axis) const {
  const RawTensor& a = value();
  if (dtype != DType::q8_0)
    fail(ErrorCode::InvalidArgument, "quantize to " + std::string(name(dtype)) +
                                         ": the block-quantized dtype is q8_0 (for a float cast use to())");
  if (a.dtype() != DType::f32 && a.dtype() != DType::f16 && a.dtype() != DType::bf16)
    fail(ErrorCode::DTypeMismatch, "quantize reads f32, f16 or bf16, got " + std::string(name(a.dtype())) +
                                       " " + a.describe());
  return Tensor::fromRaw(ctx, backend::kernelsOf(ctx).quantizeQ8(ctx, a, block_axis));
}

}  // namespace fucina
