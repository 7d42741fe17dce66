#include "fucina/backend/webgpu/gpu.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"

#ifdef __EMSCRIPTEN__
#include <emscripten/val.h>
#endif

namespace fucina::backend::webgpu {
namespace {

bool g_installed = false;
bool g_lost = false;

#ifdef __EMSCRIPTEN__
emscripten::val shim() { return emscripten::val::module_property("fucinaGpu"); }
#endif

[[noreturn]] void failUnavailable() {
  if (g_lost)
    fail(ErrorCode::DeviceLost, "the webgpu device was lost: its tensors are gone; the cpu device still computes");
#ifdef __EMSCRIPTEN__
  fail(ErrorCode::DeviceUnavailable, "no WebGPU device: init({ device: 'webgpu' }) makes one where there is an adapter");
#else
  fail(ErrorCode::DeviceUnavailable, "this build has no WebGPU implementation: the webgpu device is the wasm build's");
#endif
}

class GpuBlocks final : public BlockSource {
 public:
  void* acquire(size_t bytes) noexcept override {
    try {
      const uint32_t id = Gpu::get().createBuffer(bytes);
      return reinterpret_cast<void*>(static_cast<uintptr_t>(id));
    } catch (...) {
      return nullptr;
    }
  }
  void giveBack(void* block) noexcept override {
    if (Gpu::installed()) Gpu::get().destroyBuffer(bufferOf(block));
  }
  void requireUsable() const override { Gpu::get(); }  // DeviceLost or DeviceUnavailable
};

}  // namespace

Gpu& Gpu::get() {
  static Gpu gpu;
  if (!g_installed) failUnavailable();
  return gpu;
}

bool Gpu::installed() { return g_installed; }
void Gpu::install() {
  g_installed = true;
  g_lost = false;
  static Gpu& gpu = get();
  gpu = Gpu();  // a new device: nothing of the last one's (pipelines, fault buffer) carries over
}
void Gpu::lose() {
  g_installed = false;
  g_lost = true;
}

#ifdef __EMSCRIPTEN__

uint32_t Gpu::createBuffer(size_t bytes) {
  const uint32_t id = shim().call<uint32_t>("createBuffer", static_cast<double>(bytes));
  if (id != 0) {
    ++counters_.buffers_made;
    sizes_[id] = (std::max<uint64_t>(bytes, 4) + 3) / 4 * 4;  // the shim's rounding
  }
  return id;
}

void Gpu::destroyBuffer(uint32_t buffer) noexcept {
  sizes_.erase(buffer);
  shim().call<void>("destroyBuffer", buffer);
}

uint64_t Gpu::bindingLimit() {
  if (binding_limit_ == 0) binding_limit_ = static_cast<uint64_t>(shim().call<double>("bindingLimit"));
  return binding_limit_;
}

void Gpu::write(uint32_t buffer, size_t offset, const void* data, size_t bytes) {
  if (bytes == 0) return;
  const auto* p = static_cast<const uint8_t*>(data);
  shim().call<void>("write", buffer, static_cast<double>(offset), emscripten::val(emscripten::typed_memory_view(bytes, p)));
  counters_.uploaded_bytes += bytes;
}

uint32_t Gpu::pipeline(const std::string& wgsl) {
  auto it = pipelines_.find(wgsl);
  if (it != pipelines_.end()) return it->second;
  const uint32_t id = shim().call<uint32_t>("pipeline", wgsl);
  ++counters_.pipelines_made;
  pipelines_.emplace(wgsl, id);
  return id;
}

uint32_t Gpu::faultBuffer() {
  if (fault_buffer_ == 0) fault_buffer_ = shim().call<uint32_t>("faultBuffer");
  return fault_buffer_;
}

void Gpu::dispatch(uint32_t pipeline, std::span<const uint32_t> buffers, std::span<const uint32_t> uniforms,
                   uint32_t x, uint32_t y, uint32_t z, std::span<const Window> windows) {
  if (uniforms.size_bytes() > kUniformBytes)
    fail(ErrorCode::InvalidArgument, "a dispatch passes at most " + std::to_string(kUniformBytes) + " bytes of uniforms");
  if (x == 0 || y == 0 || z == 0) return;
  if (x > kMaxGroups || y > kMaxGroups || z > kMaxGroups)
    fail(ErrorCode::InvalidArgument, "a dispatch of " + std::to_string(x) + "x" + std::to_string(y) + "x" +
                                         std::to_string(z) + " workgroups is over WebGPU's 65535 per dimension");
  std::vector<double> bound;  // [offset, size] per buffer, for the shim
  const uint64_t limit = bindingLimit();
  for (size_t j = 0; j < buffers.size(); ++j) {
    const Window w = j < windows.size() ? windows[j] : Window{};
    const uint64_t bytes = w.size != 0 ? w.size : bytesOf(buffers[j]);
    if (bytes > limit)
      fail(ErrorCode::UnsupportedOnDevice,
           "a kernel binds " + std::to_string(bytes) + " bytes of one buffer, over this device's " +
               std::to_string(limit) + " (maxStorageBufferBindingSize): only GEMMs, gathers, rows and elementwise "
               "kernels are bound in pieces (Note [Bound in pieces])");
    if (!windows.empty()) bound.insert(bound.end(), {static_cast<double>(w.offset), static_cast<double>(w.size)});
  }
  using emscripten::typed_memory_view;
  using emscripten::val;
  const val window_list = bound.empty() ? val::undefined() : val(typed_memory_view(bound.size(), bound.data()));
  shim().call<void>("dispatch", pipeline, val(typed_memory_view(buffers.size(), buffers.data())),
                    val(typed_memory_view(uniforms.size(), uniforms.data())), x, y, z, window_list);
  ++counters_.dispatches;
  if (std::any_of(windows.begin(), windows.end(), [](const Window& w) { return w.size != 0; })) ++counters_.windowed_dispatches;
}

#else  // a native build: no WebGPU

uint32_t Gpu::createBuffer(size_t) { failUnavailable(); }
void Gpu::destroyBuffer(uint32_t) noexcept {}
uint64_t Gpu::bindingLimit() { failUnavailable(); }
void Gpu::write(uint32_t, size_t, const void*, size_t) { failUnavailable(); }
uint32_t Gpu::pipeline(const std::string&) { failUnavailable(); }
uint32_t Gpu::faultBuffer() { failUnavailable(); }
void Gpu::dispatch(uint32_t, std::span<const uint32_t>, std::span<const uint32_t>, uint32_t, uint32_t, uint32_t,
                   std::span<const Window>) {
  failUnavailable();
}

#endif

uint64_t Gpu::bytesOf(uint32_t buffer) const {
  const auto it = sizes_.find(buffer);
  return it == sizes_.end() ? 0 : it->second;  // the shim's fault buffer: 16 bytes
}

std::shared_ptr<BlockSource> gpuBlocks() { return std::make_shared<GpuBlocks>(); }

std::unique_ptr<ExecContext> deviceContext() {
  Gpu::get();  // DeviceUnavailable first
  return std::make_unique<ExecContext>(ExecOptions{.threads = 1, .backend = Backend::webgpu, .device_blocks = gpuBlocks()});
}

}  // namespace fucina::backend::webgpu
