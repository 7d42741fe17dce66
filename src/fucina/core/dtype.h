/// @file
/// Element types. f32 computes and differentiates; the others are storable and convertible
/// (Tensor::to), and computing ops treat them by Note [Dtype rules] (ops/typed.h): 16-bit constants
/// compute in f32, f64 in double where an op has an f64 path, integers only in add/sub/mul/neg and
/// compare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace fucina {

enum class DType { f32, f16, bf16, f64, i32, i64, u8, q8_0 /* block-quantized */ };

std::string_view name(DType dtype);
/// Bytes per element; q8_0 is block-quantized and has no per-element size (returns 0).
size_t elementSize(DType dtype);
bool isFloat(DType dtype);  ///< f32, f16, bf16, f64

/// The dtype that stores elements of C++ type T (float, double, int32_t, int64_t, uint8_t).
template <class T>
constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  else {
    static_assert(std::is_same_v<T, uint8_t>, "no dtype stores this element type");
    return DType::u8;
  }
}

/// IEEE half and bfloat16 conversions (round to nearest even; NaN stays NaN).
uint16_t f32ToF16(float value);
float f16ToF32(uint16_t bits);
uint16_t f32ToBf16(float value);
float bf16ToF32(uint16_t bits);

}  // namespace fucina
