// Block quantization to q8_0 (Note [q8_0 layout], core/q8.h). Not differentiable: the result is
// a constant, as every quantized tensor is.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "fucina/ag/tensor.h"
#include "fucina/core/error.h"
#include "fucina/core/q8.h"

namespace fucina {

using internal::RawTensor;

namespace {

float loadFloat(const std::byte* base, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::f16: return f16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::bf16: return bf16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    default: return reinterpret_cast<const float*>(base)[i];
  }
}

// One block: 32 values, `stride` elements apart, into its 34 bytes.
void quantizeBlock(const std::byte* src, DType dtype, int64_t stride, std::byte* block) {
  float x[q8::kBlock];
  float amax = 0;
  for (int64_t i = 0; i < q8::kBlock; ++i) {
    x[i] = loadFloat(src, dtype, i * stride);
    amax = std::max(amax, std::fabs(x[i]));  // a NaN never wins the comparison
  }
  // d is rounded to f16 before dividing, so that x ≈ d·q holds for the d that is stored; a scale
  // past f16's range saturates at its largest finite value (the q's then clamp) instead of inf.
  const uint16_t bits = f32ToF16(std::min(amax / 127.0f, 65504.0f));
  const float d = f16ToF32(bits);
  std::memcpy(block, &bits, 2);
  auto* q = reinterpret_cast<int8_t*>(block + 2);
  for (int64_t i = 0; i < q8::kBlock; ++i) {
    // d == 0 (an all-zero block, or one below f16's smallest scale): every q is 0.
    const float r = d == 0 ? 0.0f : std::round(x[i] / d);  // ties away from zero
    q[i] = static_cast<int8_t>(std::isnan(r) ? 0.0f : std::clamp(r, -127.0f, 127.0f));
  }
}

}  // namespace

Tensor Tensor::quantize(ExecContext& ctx, DType dtype, Tag block_axis) const {
  const RawTensor& a = value();
  if (dtype != DType::q8_0)
    fail(ErrorCode::InvalidArgument, "quantize to " + std::string(name(dtype)) +
                                         ": the block-quantized dtype is q8_0 (for a float cast use to())");
  if (a.dtype() != DType::f32 && a.dtype() != DType::f16 && a.dtype() != DType::bf16)
    fail(ErrorCode::DTypeMismatch, "quantize reads f32, f16 or bf16, got " + std::string(name(a.dtype())) +
                                       " " + a.describe());
  RawTensor out = RawTensor::emptyQ8(ctx, a.tags(), a.shape(), block_axis);  // checks the axis
  if (a.numel() == 0) return Tensor::fromRaw(ctx, std::move(out));
  // The blocks in storage order: rows over the other axes (tag order), blocks along each row.
  Tags others;
  for (Tag t : a.tags())
    if (t != block_axis) others.push_back(t);
  const std::vector<int64_t> rows = a.offsetsOver(others);
  const int64_t per_row = a.extent(block_axis) / q8::kBlock;
  const int64_t stride = a.strides()[a.axis(block_axis)];
  const size_t es = elementSize(a.dtype());
  const std::byte* src = a.storage()->data() + a.offset() * static_cast<int64_t>(es);
  std::byte* dst = out.storage()->data();
  // Each block depends on its own 32 values only, so any split over threads gives the same bytes.
  ctx.parallelFor(static_cast<int64_t>(rows.size()) * per_row, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t e = rows[static_cast<size_t>(b / per_row)] + b % per_row * q8::kBlock * stride;
      quantizeBlock(src + e * static_cast<int64_t>(es), a.dtype(), stride, dst + b * static_cast<int64_t>(q8::kBlockBytes));
    }
  });
  return Tensor::fromRaw(ctx, std::move(out));
}

}  // namespace fucina
