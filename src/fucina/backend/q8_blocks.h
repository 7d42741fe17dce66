// The q8_0 quantizer behind Kernels::quantizeQ8 (Note [q8_0 layout], core/q8.h), shared by the
// backends: each block depends on its own 32 values only, so any split of the blocks over
// threads gives the same bytes, and both backends write the same bytes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "fucina/core/q8.h"
#include "fucina/core/raw_tensor.h"

namespace fucina::backend::q8blocks {

inline float loadFloat(const std::byte* base, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::f16: return f16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::bf16: return bf16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    default: return reinterpret_cast<const float*>(base)[i];
  }
}

// One block: 32 values, `stride` elements apart, into its 34 bytes.
inline void quantizeBlock(const std::byte* src, DType dtype, int64_t stride, std::byte* block) {
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

// The blocks of a (f32, f16 or bf16, any strides) along block_axis in out's (emptyQ8's) storage
// order: rows over the other axes (tag order), blocks along each row.
struct Plan {
  std::vector<int64_t> rows;  // each row's first element, from a's first
  int64_t per_row = 0, stride = 0;
  DType dtype = DType::f32;
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;
  int64_t blocks() const { return static_cast<int64_t>(rows.size()) * per_row; }
};

inline Plan plan(const internal::RawTensor& a, const internal::RawTensor& out, Tag block_axis) {
  Tags others;
  for (Tag t : a.tags())
    if (t != block_axis) others.push_back(t);
  Plan p;
  p.rows = a.offsetsOver(others);
  p.per_row = a.extent(block_axis) / q8::kBlock;
  p.stride = a.strides()[a.axis(block_axis)];
  p.dtype = a.dtype();
  p.src = a.bytes();
  p.dst = out.storage()->data();
  return p;
}

// Blocks [begin, end) of the plan.
inline void quantizeBlocks(const Plan& p, int64_t begin, int64_t end) {
  const auto es = static_cast<int64_t>(elementSize(p.dtype));
  for (int64_t b = begin; b < end; ++b) {
    const int64_t e = p.rows[static_cast<size_t>(b / p.per_row)] + b % p.per_row * q8::kBlock * p.stride;
    quantizeBlock(p.src + e * es, p.dtype, p.stride, p.dst + b * static_cast<int64_t>(q8::kBlockBytes));
  }
}

}  // namespace fucina::backend::q8blocks
