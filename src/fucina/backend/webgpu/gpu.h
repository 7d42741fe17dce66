/// @file
/// The WebGPU device as the webgpu backend sees it: buffers named by ids, pipelines made from WGSL
/// and cached by their source, dispatches, uploads. In the wasm build each call goes to the JS
/// shim web/webgpu.mjs (Module.fucinaGpu), which owns the GPUDevice; a native build has no WebGPU
/// implementation (Dawn and wgpu-native are not packaged), so there every call is
/// DeviceUnavailable. Reads are the shim's alone: they are asynchronous (Note [Device reads]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "fucina/core/storage.h"

namespace fucina {
class ExecContext;
}

namespace fucina::backend::webgpu {

/// The bytes [offset, offset + size) of a buffer that a dispatch binds; size 0 binds it whole
/// (Note [Bound in pieces]). offset is a multiple of 256 (WebGPU's storage offset alignment).
struct Window {
  uint64_t offset = 0, size = 0;
};

/// What the device has done since it was installed (fc.memory().devices.webgpu).
struct GpuCounters {
  uint64_t dispatches = 0, uploaded_bytes = 0, pipelines_made = 0, buffers_made = 0;
  uint64_t windowed_dispatches = 0;  ///< those binding a window of a buffer (Note [Bound in pieces])
};

class Gpu {
 public:
  /// The device the JS shim installed (init({ device: 'webgpu' })); DeviceUnavailable when none,
  /// DeviceLost once it is lost.
  static Gpu& get();
  /// Whether a device is installed and not lost.
  static bool installed();
  /// Called by the bindings once the shim has a device, and when the device is lost: from then
  /// on every use of it is DeviceLost (the cpu device is unaffected).
  static void install();
  static void lose();

  /// A new buffer of `bytes` (storage, copy source and destination), or 0 when the device has no
  /// room or the size is over its limits.
  uint32_t createBuffer(size_t bytes);
  void destroyBuffer(uint32_t buffer) noexcept;
  /// Writes host bytes into a buffer at a byte offset (offset and size multiples of 4).
  void write(uint32_t buffer, size_t offset, const void* data, size_t bytes);
  /// The compute pipeline of a WGSL module (entry point `main`), made once per source text.
  uint32_t pipeline(const std::string& wgsl);
  /// Runs a pipeline over groups (x, y, z) with buffers bound at 0..n-1 (read-only first as the
  /// WGSL declares them), each whole or through its window, and the uniform words at binding n.
  /// UnsupportedOnDevice when a binding is over bindingLimit().
  void dispatch(uint32_t pipeline, std::span<const uint32_t> buffers, std::span<const uint32_t> uniforms,
                uint32_t x, uint32_t y = 1, uint32_t z = 1, std::span<const Window> windows = {});
  /// The most bytes one binding may span: the device's maxStorageBufferBindingSize, lowered by
  /// init's deviceLimits.
  uint64_t bindingLimit();
  /// The size of a buffer this device made.
  uint64_t bytesOf(uint32_t buffer) const;
  /// The shim's fault buffer (Note [Device faults]): words [kind, first position, a, b] that check
  /// kernels set and the shim's next sync() or read reports and clears: kind 1 an index outside
  /// [0, a), kind 2 a value outside [a, b] (f32 bits), kind 3 a mask that sets a elements for a
  /// source of b (maskedScatter), kind 4 multinomial weights that cannot be drawn from (the first
  /// position: their row).
  uint32_t faultBuffer();
  /// The most workgroups along one dimension of a dispatch.
  static constexpr uint32_t kMaxGroups = 65535;
  /// Bytes of uniforms a dispatch may pass (the shim's uniform buffer).
  static constexpr size_t kUniformBytes = 1024;

  GpuCounters counters() const { return counters_; }

 private:
  GpuCounters counters_;
  std::unordered_map<std::string, uint32_t> pipelines_;
  std::unordered_map<uint32_t, uint64_t> sizes_;  // buffer id -> bytes
  uint32_t fault_buffer_ = 0;
  uint64_t binding_limit_ = 0;  // asked of the shim once
};

/// A context computing on the installed device (Backend::webgpu, its buffers from gpuBlocks()), to
/// attach to the host's context (ExecContext::attach). DeviceUnavailable when none is installed.
std::unique_ptr<ExecContext> deviceContext();

/// The device's buffers for a MemoryAccount (Note [Device buffers]): tokens are buffer ids.
std::shared_ptr<BlockSource> gpuBlocks();
/// The buffer id of a block token.
inline uint32_t bufferOf(const void* block) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(block)); }

}  // namespace fucina::backend::webgpu
