/// @file
/// Note [q8_0 layout]: a q8_0 tensor holds blocks of 32 consecutive elements of its block axis,
/// each 34 bytes: the scale d as an f16, then 32 int8 values q, with x ≈ d·q. The block axis has
/// stride 1 and every other axis a stride that is a multiple of its extent (a multiple of 32), so
/// a RawTensor's element strides and offset keep their usual meaning: element index e (offset +
/// Σ index·stride) is value e % 32 of block e / 32. Views that permute or rename axes, or narrow
/// an axis other than the block axis, are therefore views of q8_0 too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fucina/core/dtype.h"

namespace fucina::q8 {

inline constexpr int64_t kBlock = 32;          ///< elements per block
inline constexpr size_t kBlockBytes = 34;      ///< f16 scale + 32 int8

/// Bytes of a buffer holding n elements (n a multiple of kBlock).
inline size_t bytesFor(int64_t n) { return static_cast<size_t>(n / kBlock) * kBlockBytes; }

/// The block that holds element e, and its scale.
inline const std::byte* blockOf(const std::byte* base, int64_t e) {
  return base + static_cast<size_t>(e / kBlock) * kBlockBytes;
}
inline float scaleOf(const std::byte* block) {
  uint16_t bits;
  std::memcpy(&bits, block, 2);
  return f16ToF32(bits);
}
inline const int8_t* valuesOf(const std::byte* block) {
  return reinterpret_cast<const int8_t*>(block + 2);
}
/// Element e dequantized.
inline float load(const std::byte* base, int64_t e) {
  const std::byte* b = blockOf(base, e);
  return scaleOf(b) * static_cast<float>(valuesOf(b)[e % kBlock]);
}

}  // namespace fucina::q8
