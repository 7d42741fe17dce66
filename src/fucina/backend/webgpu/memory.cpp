// Fills, strided copies between device buffers (converting among f32, i32 and i64), and uploads
// from the host: by 32-bit words, so they serve every dtype of 4 or 8 bytes (Note [Strided kernels]).
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

// The 32-bit words of one element of dtype, or UnsupportedOnDevice for q8_0 and the 16-bit dtypes
// (u8, narrower too, is written byte by byte with atomics: byteSource).
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

// u8 elements are bytes of words that other invocations write too: each is set with an atomic
// clear and an atomic or of its own byte (a fill's value, or the source's byte).
std::string byteSource(bool fill) {
  std::string src = prelude(fill ? 1 : 2) + (fill ? "" : readBinding(0, "src", "u32")) + "@group(0) @binding(" +
                    (fill ? "0" : "1") + ") var<storage, read_write> dst: array<atomic<u32>>;\n" + kMainSignature +
                    " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n";
  src += fill ? "  let b = uw(" + std::to_string(kParamWord) + "u) & 0xffu;\n  let d = strided(i, 0u);\n"
              : "  let s = strided(i, 0u);\n  let b = (src[s / 4u] >> (8u * (s % 4u))) & 0xffu;\n  let d = strided(i, 1u);\n";
  return src + "  let shift = 8u * (d % 4u);\n"
               "  atomicAnd(&dst[d / 4u], ~(0xffu << shift));\n  atomicOr(&dst[d / 4u], b << shift);\n}\n";
}

// Conversions among f32, i32 and i64, and from u8 to them, as the host's (backend/element_io.h):
// float to integer truncates toward zero and saturates, NaN becoming 0; i64 to i32 saturates. An i64 is two words,
// low first; read as a float it is hi·2^32 + lo.
bool converts(DType from, DType to) {
  const auto word = [](DType t) { return t == DType::f32 || t == DType::i32 || t == DType::i64; };
  return from != to && (word(from) || from == DType::u8) && word(to);
}

std::string convertSource(DType from, DType to) {
  const uint32_t in_words = from == DType::i64 ? 2 : 1, out_words = to == DType::i64 ? 2 : 1;  // u8: in bytes
  std::string src = prelude(2) + readBinding(0, "src", "u32") + writeBinding(1, "dst", "u32") +
                    // f32 to i64 words: the magnitude's, negated in two's complement.
                    "fn f32_to_i64(v: f32) -> vec2u {\n"
                    "  if (!is_finite(v) && (bitcast<u32>(v) & 0x7fffffu) != 0u) { return vec2u(0u, 0u); }\n"
                    "  if (v >= 9.223372036854775807e18) { return vec2u(0xffffffffu, 0x7fffffffu); }\n"
                    "  if (v <= -9.223372036854775807e18) { return vec2u(0u, 0x80000000u); }\n"
                    "  let a = trunc(abs(v));\n  let h = floor(a / 4294967296.0);\n"
                    "  var lo = u32(a - h * 4294967296.0);\n  var hi = u32(h);\n"
                    "  if (v < 0.0) { lo = ~lo + 1u; hi = ~hi + select(0u, 1u, lo == 0u); }\n"
                    "  return vec2u(lo, hi);\n"
                    "}\n" +
                    kMainSignature + " {\n  " + kLinearIndex +
                    "\n  if (i >= uw(0u)) { return; }\n  let s = strided(i, 0u) * " + std::to_string(in_words) +
                    "u;\n  let d = strided(i, 1u) * " + std::to_string(out_words) + "u;\n";
  if (from == DType::u8) {  // s counts bytes: the byte of its word
    src += "  let b = (src[s / 4u] >> (8u * (s % 4u))) & 0xffu;\n";
    if (to == DType::f32) src += "  dst[d] = bitcast<u32>(f32(b));\n";
    else src += std::string("  dst[d] = b;\n") + (to == DType::i64 ? "  dst[d + 1u] = 0u;\n" : "");
  } else if (from == DType::i64) {
    src += "  let lo = src[s];\n  let hi = src[s + 1u];\n";
    if (to == DType::f32) src += "  dst[d] = bitcast<u32>(f32(bitcast<i32>(hi)) * 4294967296.0 + f32(lo));\n";
    else  // i32: saturated unless hi is lo's sign extension
      src += "  let fits = (hi == 0u && lo < 0x80000000u) || (hi == 0xffffffffu && lo >= 0x80000000u);\n"
             "  dst[d] = select(select(0x7fffffffu, 0x80000000u, bitcast<i32>(hi) < 0), lo, fits);\n";
  } else if (from == DType::i32) {
    if (to == DType::f32) src += "  dst[d] = bitcast<u32>(f32(bitcast<i32>(src[s])));\n";
    else src += "  let v = src[s];\n  dst[d] = v;\n  dst[d + 1u] = select(0u, 0xffffffffu, bitcast<i32>(v) < 0);\n";
  } else {  // f32
    src += "  let v = bitcast<f32>(src[s]);\n";
    if (to == DType::i64) src += "  let w = f32_to_i64(v);\n  dst[d] = w.x;\n  dst[d + 1u] = w.y;\n";
    else
      src += "  var r = 0;\n"
             "  if (v >= 2147483647.0) { r = 2147483647; } else if (v <= -2147483648.0) { r = -2147483647 - 1; }\n"
             "  else if (is_finite(v)) { r = i32(trunc(v)); }\n"
             "  dst[d] = bitcast<u32>(r);\n";
  }
  return src + "}\n";
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
  const bool bytes = dst.dtype() == DType::u8;
  const uint32_t words = bytes ? 1 : wordsOf(dst.dtype(), "fill");
  if (dst.numel() == 0) return;
  uint32_t bits[2] = {0, 0};
  io::store(reinterpret_cast<std::byte*>(bits), dst.dtype(), 0, value);
  Uniforms u = stridedLayout(dst.shape(), {dst.strides()}, {dst.offset()}).uniforms();
  for (uint32_t j = 0; j < words; ++j) u.set(kParamWord + j, bits[j]);
  const uint32_t buffer = bufferOf(dst, "fill");
  dispatchLinear(Gpu::get().pipeline(bytes ? byteSource(true) : fillSource(words)), {&buffer, 1}, u, dst.numel());
}

void copy(ExecContext&, const RawTensor& src, const RawTensor& dst) {
  if (src.shape() != dst.shape())
    fail(ErrorCode::ShapeMismatch, "copy from " + src.describe() + " into " + dst.describe());
  if (dst.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "cannot write into q8_0 " + dst.describe() + " element by element");
  if (src.device() == Device::cpu && dst.device() == Device::webgpu) return upload(src, dst);
  const bool convert = converts(src.dtype(), dst.dtype());
  if (src.dtype() != dst.dtype() && !convert)
    unsupported("a conversion from " + std::string(name(src.dtype())) + " to " + std::string(name(dst.dtype())));
  const bool bytes = src.dtype() == DType::u8 && dst.dtype() == DType::u8;
  const uint32_t words = convert || bytes ? 1 : wordsOf(src.dtype(), "a copy");
  const uint32_t buffers[2] = {bufferOf(src, "copy"), bufferOf(dst, "copy")};
  if (src.numel() == 0) return;
  if (buffers[0] == buffers[1]) unsupported("a copy within one buffer");
  const Uniforms u = stridedLayout(src.shape(), {src.strides(), dst.strides()}, {src.offset(), dst.offset()}).uniforms();
  const std::string source = convert ? convertSource(src.dtype(), dst.dtype()) : bytes ? byteSource(false) : copySource(words);
  dispatchLinear(Gpu::get().pipeline(source), buffers, u, src.numel());
}

}  // namespace fucina::backend::webgpu
