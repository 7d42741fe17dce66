#include "fucina/core/dtype.h"

#include <cmath>

namespace fucina {
namespace {
// bitCast is missing from Emscripten 3.1.6's libc++; the builtin behind it is not.
template <class To, class From>
To bitCast(const From& from) {
  return __builtin_bit_cast(To, from);
}
}  // namespace

std::string_view name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::q8_0: return "q8_0";
  }
  return "?";
}

size_t elementSize(DType dtype) {
  switch (dtype) {
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::f64: case DType::i64: return 8;
    case DType::u8: return 1;
    case DType::q8_0: return 0;
  }
  return 0;
}

bool isFloat(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f64;
}

uint16_t f32ToF16(float value) {
  const uint32_t x = bitCast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflows to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero: scale into the subnormal grid
    const float magnitude = bitCast<float>(abs);
    // 2^-24 is the smallest half subnormal; nearbyint rounds half to even.
    const auto mant = static_cast<uint32_t>(std::nearbyint(magnitude * 16777216.0f));
    return static_cast<uint16_t>(sign | mant);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t rebased = abs - 0x38000000u;
  const uint32_t lsb = (rebased >> 13) & 1u;
  rebased += 0xfffu + lsb;
  return static_cast<uint16_t>(sign | (rebased >> 13));
}

float f16ToF32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {  // zero or subnormal
    const float magnitude = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return bitCast<float>(bitCast<uint32_t>(magnitude) | sign);
  }
  if (exp == 31) return bitCast<float>(sign | 0x7f800000u | (mant << 13));
  return bitCast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t f32ToBf16(float value) {
  const uint32_t x = bitCast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16);
}

float bf16ToF32(uint16_t bits) { return bitCast<float>(static_cast<uint32_t>(bits) << 16); }

}  // namespace fucina
