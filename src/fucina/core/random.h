// Counter-based randomness: every random value in fucina is a pure function of (seed, index), so
// results are identical on every platform (wasm included), thread count and evaluation order.
#pragma once

#include <cmath>
#include <cstdint>

namespace fucina::random {

// splitmix64's finalizer: a well-mixed 64-bit hash.
inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// The splitmix64 sequence: advances state and returns the next value.
inline uint64_t next(uint64_t& state) { return mix(state += kGolden); }

// The index-th 64-bit value of stream `seed`.
inline uint64_t bits(uint64_t seed, uint64_t index) { return mix(mix(seed) + index * kGolden); }

// Uniform in [0, 1) with 53 random bits.
inline double unit(uint64_t seed, uint64_t index) {
  return static_cast<double>(bits(seed, index) >> 11) * 0x1.0p-53;
}

// Standard normal (Box–Muller over two independent uniforms of the same index).
inline double normal(uint64_t seed, uint64_t index) {
  const double u1 = 1.0 - unit(seed, 2 * index);  // in (0, 1]: log is finite
  const double u2 = unit(seed, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace fucina::random
