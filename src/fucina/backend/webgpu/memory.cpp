// Fills, strided copies between device buffers, and uploads from the host: by 32-bit words, so
// they serve every dtype of 4 or 8 bytes (Note [Strided kernels]).
#include <cstring>
#include <string>
#include <vector>

#include "fucina/backend/element_io.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// The 32-bit words of one element of dtype, or UnsupportedOnDevice for the dtypes narrower
// than a word (a kernel cannot write part of one without atomics) and q8_0.
uint32_t wordsOf(DType dtype, const char* what) {
  const size_t size = dtype == DType::q8_0 ? 0 : elementSize(dtype);
  if (size != 4 && size != 8) unsupported(std::string(what) + " of " + std::string(name(dtype)) + " elements");
  return static_cast<uint32_t>(size / 4);
}

std::string fillSource(uint32_t words) {
  std::string src = prelude(1) + writeBinding(0, "dst", "u32") + kMainSignature + " {\n  " + kLinearIndex +
                    "\n  if (i >= uw(0u)) { return; }\n  let o = strided(i, 0u) * " + std::to_string(words) + "u;\n";
  for (uint32_t j = 0; j < words; ++j)
    src += "  dst[o + " + std::to_string(j) + "u] = uw(" + std::to_string(kParamWord + j) + "u);\n";
  return src + "}\n";
}

std::string copySource(uint32_t words) {
  std::string src = prelude(2) + readBinding(0, "src", "u32") + writeBinding(1, "dst", "u32") + kMainSignature +
                    " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n  let s = strided(i, 0u) * " +
                    std::to_string(words) + "u;\n  let d = strided(i, 1u) * " + std::to_string(words) + "u;\n";
  for (uint32_t j = 0; j < words; ++j)
    src += "  dst[d + " + std::to_string(j) + "u] = src[s + " + std::to_string(j) + "u];\n";
  return src + "}\n";
}

// i32 to i64 (indices and labels widened for the kernels that read i64): sign-extended.
std::string widenSource() {
  return prelude(2) + readBinding(0, "src", "u32") + writeBinding(1, "dst", "u32") + kMainSignature + " {\n  " +
         kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n  let v = src[strided(i, 0u)];\n  let d = strided(i, 1u) * 2u;\n"
         "  dst[d] = v;\n  dst[d + 1u] = select(0u, 0xffffffffu, bitcast<i32>(v) < 0);\n}\n";
}

// Host bytes (contiguous, dst's dtype) into contiguous dst: one write, padded to whole words.
void upload(const RawTensor& src, const RawTensor& dst) {
  if (src.dtype() != dst.dtype() || !src.isContiguous() || !dst.isContiguous())
    unsupported("an upload of " + std::string(name(src.dtype())) + " " + src.describe() + " into " +
                std::string(name(dst.dtype())) + " " + dst.describe() + " (it takes contiguous values of one dtype)");
  const size_t size = dst.dtype() == DType::q8_0 ? 0 : elementSize(dst.dtype());
  if (size == 0) unsupported("an upload of q8_0 blocks");
  const size_t bytes = static_cast<size_t>(src.numel()) * size, at = static_cast<size_t>(dst.offset()) * size;
  if (bytes == 0) return;
  const uint32_t buffer = bufferOf(dst, "upload");
  if (bytes % 4 == 0 && at % 4 == 0) {
    Gpu::get().write(buffer, at, src.bytes(), bytes);
    return;
  }
  if (at != 0) unsupported("an upload into a view that does not start on a 4-byte boundary");
  std::vector<std::byte> padded((bytes + 3) / 4 * 4);  // the block holds the padding (64-byte classes)
  std::memcpy(padded.data(), src.bytes(), bytes);
  Gpu::get().write(buffer, 0, padded.data(), padded.size());
}

}  // namespace

void fill(ExecContext&, const RawTensor& dst, double value) {
  const uint32_t words = wordsOf(dst.dtype(), "fill");
  if (dst.numel() == 0) return;
  uint32_t bits[2] = {0, 0};
  io::store(reinterpret_cast<std::byte*>(bits), dst.dtype(), 0, value);
  Uniforms u = stridedLayout(dst.shape(), {dst.strides()}, {dst.offset()}).uniforms();
  for (uint32_t j = 0; j < words; ++j) u.set(kParamWord + j, bits[j]);
  const uint32_t buffer = bufferOf(dst, "fill");
  dispatchLinear(Gpu::get().pipeline(fillSource(words)), {&buffer, 1}, u, dst.numel());
}

void copy(ExecContext&, const RawTensor& src, const RawTensor& dst) {
  if (src.shape() != dst.shape())
    fail(ErrorCode::ShapeMismatch, "copy from " + src.describe() + " into " + dst.describe());
  if (dst.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "cannot write into q8_0 " + dst.describe() + " element by element");
  if (src.device() == Device::cpu && dst.device() == Device::webgpu) return upload(src, dst);
  const bool widen = src.dtype() == DType::i32 && dst.dtype() == DType::i64;
  if (src.dtype() != dst.dtype() && !widen)
    unsupported("a conversion from " + std::string(name(src.dtype())) + " to " + std::string(name(dst.dtype())));
  const uint32_t words = widen ? 1 : wordsOf(src.dtype(), "a copy");
  const uint32_t buffers[2] = {bufferOf(src, "copy"), bufferOf(dst, "copy")};
  if (src.numel() == 0) return;
  if (buffers[0] == buffers[1]) unsupported("a copy within one buffer");
  const Uniforms u = stridedLayout(src.shape(), {src.strides(), dst.strides()}, {src.offset(), dst.offset()}).uniforms();
  dispatchLinear(Gpu::get().pipeline(widen ? widenSource() : copySource(words)), buffers, u, src.numel());
}

}  // namespace fucina::backend::webgpu
