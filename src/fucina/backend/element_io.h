// One element of a buffer read as double, or written from double, in any dtype but q8_0: the
// conversions every copy makes (16-bit rounding to nearest even; float to integer truncating
// toward zero and saturating, NaN to 0), shared by the backends so that casts agree everywhere.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "fucina/core/dtype.h"
#include "fucina/core/error.h"

namespace fucina::backend::io {

inline double load(const std::byte* base, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::f32: return reinterpret_cast<const float*>(base)[i];
    case DType::f16: return f16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::bf16: return bf16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::f64: return reinterpret_cast<const double*>(base)[i];
    case DType::i32: return reinterpret_cast<const int32_t*>(base)[i];
    case DType::i64: return static_cast<double>(reinterpret_cast<const int64_t*>(base)[i]);
    case DType::u8: return reinterpret_cast<const uint8_t*>(base)[i];
    case DType::q8_0: break;
  }
  // copyConvert and copyToF32 dequantize q8_0 before reaching here.
  fail(ErrorCode::DTypeMismatch, "q8_0 tensors have no element-wise representation");
}

// Float -> integer casts truncate toward zero and saturate; NaN becomes 0 (defined, unlike C++).
template <class I>
I saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

inline void store(std::byte* base, DType dtype, int64_t i, double v) {
  switch (dtype) {
    case DType::f32: reinterpret_cast<float*>(base)[i] = static_cast<float>(v); return;
    case DType::f16: reinterpret_cast<uint16_t*>(base)[i] = f32ToF16(static_cast<float>(v)); return;
    case DType::bf16: reinterpret_cast<uint16_t*>(base)[i] = f32ToBf16(static_cast<float>(v)); return;
    case DType::f64: reinterpret_cast<double*>(base)[i] = v; return;
    case DType::i32: reinterpret_cast<int32_t*>(base)[i] = saturate<int32_t>(v); return;
    case DType::i64: reinterpret_cast<int64_t*>(base)[i] = saturate<int64_t>(v); return;
    case DType::u8: reinterpret_cast<uint8_t*>(base)[i] = saturate<uint8_t>(v); return;
    case DType::q8_0: break;
  }
  fail(ErrorCode::DTypeMismatch, "q8_0 tensors have no element-wise representation");
}

}  // namespace fucina::backend::io
