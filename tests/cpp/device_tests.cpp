// The device seam without a device: a device's buffers as tokens from a BlockSource (Note [Device
// buffers]), device contexts attached to the host's (Note [Device contexts]), the strided layouts
// the webgpu kernels are given (Note [Strided kernels]), and what a build without WebGPU says.
// The webgpu kernels themselves run in tests/js/webgpu.test.mjs (Node, Dawn over SwiftShader).
#include "test_helpers.h"

#include <memory>
#include <set>

#include "fucina/backend/webgpu/gpu.h"
#include "fucina/backend/webgpu/wgsl.h"

using fucina::BlockSource;
using fucina::Device;
using fucina::DType;
using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::MemoryAccount;
using fucina::Storage;
using fucina::Tensor;
using test::RawTensor;
namespace webgpu = fucina::backend::webgpu;

namespace {

// Blocks numbered from 1, as a device's buffers are: tokens, never addresses.
struct CountingBlocks final : BlockSource {
  uintptr_t next = 1;
  std::set<uintptr_t> live;
  void* acquire(size_t) noexcept override {
    live.insert(next);
    return reinterpret_cast<void*>(next++);
  }
  void giveBack(void* block) noexcept override { live.erase(reinterpret_cast<uintptr_t>(block)); }
};

}  // namespace

TEST_CASE("a device account hands out its source's blocks through the size classes and the cache", "[device]") {
  auto blocks = std::make_shared<CountingBlocks>();
  auto account = std::make_shared<MemoryAccount>(Device::webgpu, blocks);
  {
    Storage a(account, 1000, DType::f32), b(account, 10, DType::f32);
    CHECK(account->stats().live_buffers == 2);
    CHECK(account->stats().system_allocations == 2);
    CHECK(blocks->live.size() == 2);
    CHECK(a.block() != b.block());
    // A device buffer is not host memory: reading it so is DeviceMismatch.
    REQUIRE_FUCINA_ERROR((void)a.data(), DeviceMismatch);
  }
  CHECK(account->stats().live_buffers == 0);
  CHECK(account->stats().cached_bytes > 0);
  {
    Storage again(account, 1000, DType::f32);  // from the cache: no new block
    CHECK(account->stats().system_allocations == 2);
    CHECK(account->stats().cache_hits == 1);
  }
  account->trimCache();
  CHECK(blocks->live.empty());  // every block went back to its source
}

TEST_CASE("a context on no device attached is DeviceUnavailable, and a device context needs its blocks", "[device]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  CHECK(&ctx.on(Device::cpu) == &ctx);
  CHECK(ctx.attached(Device::webgpu) == nullptr);
  REQUIRE_FUCINA_ERROR((void)ctx.on(Device::webgpu), DeviceUnavailable);
  REQUIRE_FUCINA_ERROR((void)ExecContext(ExecOptions{.backend = fucina::Backend::webgpu}), InvalidArgument);

  auto device = std::make_unique<ExecContext>(
      ExecOptions{.threads = 1, .backend = fucina::Backend::webgpu, .device_blocks = std::make_shared<CountingBlocks>()});
  ExecContext* d = device.get();
  CHECK(d->device() == Device::webgpu);
  ctx.attach(std::move(device));
  CHECK(&ctx.on(Device::webgpu) == d);
  CHECK(&d->on(Device::cpu) == &ctx);
  CHECK(ctx.attached(Device::webgpu) == d);
}

TEST_CASE("a build without WebGPU says so, and moving to the device needs one", "[device]") {
#ifndef __EMSCRIPTEN__
  CHECK_FALSE(webgpu::Gpu::installed());
  REQUIRE_FUCINA_ERROR((void)webgpu::deviceContext(), DeviceUnavailable);
  ExecContext ctx(ExecOptions{.threads = 1});
  const Tensor t = Tensor::fromSlice(ctx, {"i"}, {3}, {1, 2, 3});
  REQUIRE_FUCINA_ERROR((void)t.to(ctx, Device::webgpu), DeviceUnavailable);
  CHECK(t.to(ctx, Device::cpu).toVector() == std::vector<float>{1, 2, 3});  // the same device: itself
  const Tensor v = Tensor::variableFromSlice(ctx, {"i"}, {3}, {1, 2, 3});
  REQUIRE_FUCINA_ERROR((void)v.to(ctx, Device::webgpu), UnsupportedOnDevice);
#endif
}

TEST_CASE("strided layouts drop unit axes and merge the axes whose strides nest for every operand", "[device]") {
  SECTION("a contiguous tensor and a broadcast row become two axes") {
    const auto l = webgpu::stridedLayout({4, 1, 5, 6}, {{30, 30, 6, 1}, {0, 0, 0, 1}}, {0, 3});
    CHECK(l.n == 120);
    CHECK(l.shape == std::vector<int64_t>{20, 6});
    CHECK(l.strides == std::vector<std::vector<int64_t>>{{6, 1}, {0, 1}});
    CHECK(l.offsets == std::vector<int64_t>{0, 3});
  }
  SECTION("a transposed operand keeps both axes") {
    const auto l = webgpu::stridedLayout({3, 4}, {{4, 1}, {1, 3}}, {0, 0});
    CHECK(l.shape == std::vector<int64_t>{3, 4});
  }
  SECTION("all contiguous: one axis; a scalar: none") {
    CHECK(webgpu::stridedLayout({2, 3, 4}, {{12, 4, 1}, {12, 4, 1}}, {0, 0}).shape == std::vector<int64_t>{24});
    const auto s = webgpu::stridedLayout({}, {{}}, {0});
    CHECK(s.shape.empty());
    CHECK(s.n == 1);
  }
  SECTION("more axes than a kernel takes is UnsupportedOnDevice") {
    fucina::Extents shape(9, 2);
    std::vector<int64_t> transposed(9);
    for (int d = 0; d < 9; ++d) transposed[d] = int64_t{1} << d;  // reversed nesting: nothing merges
    REQUIRE_FUCINA_ERROR((void)webgpu::stridedLayout(shape, {transposed}, {0}), UnsupportedOnDevice);
  }
  SECTION("the uniform words: n, rank, shape, then offset and strides per operand") {
    const auto u = webgpu::stridedLayout({3, 4}, {{4, 1}, {1, 3}}, {5, 7}).uniforms();
    CHECK(u.words[0] == 12);
    CHECK(u.words[1] == 2);
    CHECK(u.words[webgpu::kShapeWord] == 3);
    CHECK(u.words[webgpu::kShapeWord + 1] == 4);
    CHECK(u.words[webgpu::kOperandWord] == 5);
    CHECK(u.words[webgpu::kOperandWord + 1] == 4);
    CHECK(u.words[webgpu::kOperandWord + webgpu::kOperandWords] == 7);
    CHECK(u.words[webgpu::kOperandWord + webgpu::kOperandWords + 2] == 3);
  }
}
