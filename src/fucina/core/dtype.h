/// @file
/// Element types. f32 computes and differentiates; the others are storable and convertible (§3.8),
/// and computing ops treat them by Note [Dtype rules] (ops/typed.h): 16-bit constants compute in
/// f32, f64 in double where an op has an f64 path, integers only in add/sub/mul/neg and compare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fucina {

enum class DType { f32, f16, bf16, f64, i32, i64, u8, q8_0 /* block-quantized (§10) */ };

std::string_view name(DType dtype);
/// Bytes per element; q8_0 is block-quantized and has no per-element size (returns 0).
size_t elementSize(DType dtype);
bool isFloat(DType dtype);  ///< f32, f16, bf16, f64

/// IEEE half and bfloat16 conversions (round to nearest even; NaN stays NaN).
uint16_t f32ToF16(float value);
float f16ToF32(uint16_t bits);
uint16_t f32ToBf16(float value);
float bf16ToF32(uint16_t bits);

}  // namespace fucina
