/// @file
/// Device: where a tensor's storage lives; Backend: which set of kernels computes on the cpu
/// device. Every buffer belongs to one device's MemoryAccount, and ops compute only through the
/// kernel primitives of their context's backend (Note [Backends], src/fucina/backend/kernels.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace fucina {

/// Only the cpu device exists in this build; webgpu is the GPU device of the web build.
enum class Device : uint8_t { cpu, webgpu };

/// The kernels of the cpu device: `cpu` (SIMD, threads on the work pool, GEMM and convolution
/// kernels) or `reference` (plain scalar loops on the calling thread: the oracle that the fast
/// kernels are tested against).
enum class Backend : uint8_t { cpu, reference };

/// "cpu" or "webgpu", as the JS facade spells them.
std::string_view name(Device device);
/// "cpu" or "reference".
std::string_view name(Backend backend);

}  // namespace fucina
