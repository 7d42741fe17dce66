/// @file
/// Device: where a tensor's storage lives; Backend: which set of kernels computes on the cpu
/// device. Every buffer belongs to one device's MemoryAccount, and ops compute only through the
/// kernel primitives of their context's backend (Note [Backends], src/fucina/backend/kernels.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace fucina {

/// cpu: host memory. webgpu: the buffers of the WebGPU device of the web build (the wasm module
/// talks to it through web/webgpu.mjs; a native build has none: DeviceUnavailable).
enum class Device : uint8_t { cpu, webgpu };

/// The kernels a context computes with: on the cpu device `cpu` (SIMD, threads on the work pool,
/// GEMM and convolution kernels) or `reference` (plain scalar loops on the calling thread: the
/// oracle that the fast kernels are tested against); on the webgpu device `webgpu` (WGSL).
enum class Backend : uint8_t { cpu, reference, webgpu };

/// The device whose buffers a backend computes on.
constexpr Device deviceOf(Backend backend) { return backend == Backend::webgpu ? Device::webgpu : Device::cpu; }

/// "cpu" or "webgpu", as the JS facade spells them.
std::string_view name(Device device);
/// "cpu", "reference" or "webgpu".
std::string_view name(Backend backend);

}  // namespace fucina
