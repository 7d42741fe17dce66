// Fills, strided copies between device buffers (converting among f32, i32, i64, u8, f16 and bf16,
// and between f32 and f64), and uploads from the host (Note [Strided kernels]): by 32-bit words,
// and the elements narrower than a word by atomic writes into theirs.
#include <cstring>
#include <string>
#include <vector>

#include "fucina/backend/element_io.h"
#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/core/q8.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// The 32-bit words of one element of a word dtype (f32, i32, i64, f64); the narrower ones are
// copied by narrowSource, and q8_0 is UnsupportedOnDevice.
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

// Conversions among f32, i32 and i64 and between f32 and f64 (convertSource), and to or from the
// dtypes narrower than a word, u8, f16 and bf16 (narrowSource), as the host's
// (backend/element_io.h, core/dtype.cpp): float to integer truncates toward zero and saturates,
// NaN becoming 0; i64 to i32 saturates; 16-bit floats round to nearest even. An i64 or f64 is two
// words, low first.
bool isWord(DType t) { return t == DType::f32 || t == DType::i32 || t == DType::i64; }
bool isNarrow(DType t) { return t == DType::u8 || t == DType::f16 || t == DType::bf16; }
bool converts(DType from, DType to) {
  const bool f64_f32 = (from == DType::f64 && to == DType::f32) || (from == DType::f32 && to == DType::f64);
  return f64_f32 || (from != to && isWord(from) && isWord(to));
}
bool twoWords(DType t) { return t == DType::i64 || t == DType::f64; }

// f64 (two words, low first) to f32 rounding to nearest even, as a C++ cast: past f32's range
// infinity, below it subnormals then ±0, NaN kept quiet; and f32 to f64, exactly.
const char* kF64 =
    "fn f64_to_f32(lo: u32, hi: u32) -> u32 {\n"
    "  let sign = hi & 0x80000000u;\n  let e = (hi >> 20u) & 0x7ffu;\n  let mh = hi & 0xfffffu;\n"
    "  if (e == 0x7ffu) { return sign | select(0x7f800000u, 0x7fc00000u | (mh << 3u) | (lo >> 29u), (mh | lo) != 0u); }\n"
    "  let E = i32(e) - 896;\n"
    "  if (E >= 255) { return sign | 0x7f800000u; }\n"
    // the top 24 bits of the significand, and the 29 below them
    "  let m = 0x800000u | (mh << 3u) | (lo >> 29u);\n  let rest = lo & 0x1fffffffu;\n"
    "  if (E >= 1) {\n"
    "    var r = m + select(0u, 1u, (rest >> 28u) == 1u && ((rest & 0xfffffffu) != 0u || (m & 1u) == 1u));\n"
    "    var be = u32(E);\n"
    "    if (r == 0x1000000u) { r = 0x800000u; be = be + 1u; }\n"
    "    return select(sign | (be << 23u) | (r & 0x7fffffu), sign | 0x7f800000u, be >= 255u);\n"
    "  }\n"
    "  let s = u32(1 - E);\n"
    "  if (e == 0u || s >= 25u) { return sign; }\n"
    "  let q = m >> s;\n  let half = (m >> (s - 1u)) & 1u;\n"
    "  let below = (m & ((1u << (s - 1u)) - 1u)) != 0u || rest != 0u;\n"
    "  return sign | (q + select(0u, 1u, half == 1u && (below || (q & 1u) == 1u)));\n"
    "}\n"
    "fn f32_to_f64(v: u32) -> vec2u {\n"
    "  let sign = v & 0x80000000u;\n  let e = (v >> 23u) & 0xffu;\n  let m = v & 0x7fffffu;\n"
    "  if (e == 0xffu) { return vec2u(m << 29u, sign | 0x7ff00000u | (m >> 3u)); }\n"
    "  if (e == 0u) {\n"
    "    if (m == 0u) { return vec2u(0u, sign); }\n"
    "    let b = 31u - countLeadingZeros(m);\n"  // m·2^-149 = 1.f·2^(b - 149)
    "    let f = (m << (23u - b)) & 0x7fffffu;\n"
    "    return vec2u(f << 29u, sign | ((b + 874u) << 20u) | (f >> 3u));\n"
    "  }\n"
    "  return vec2u(m << 29u, sign | ((e + 896u) << 20u) | (m >> 3u));\n"
    "}\n";

const char* kF32ToI64 =
    "fn f32_to_i64(v: f32) -> vec2u {\n"
    "  if (is_nan(v)) { return vec2u(0u, 0u); }\n"
    "  if (v >= 9.223372036854775807e18) { return vec2u(0xffffffffu, 0x7fffffffu); }\n"
    "  if (v <= -9.223372036854775807e18) { return vec2u(0u, 0x80000000u); }\n"
    // the magnitude's words, negated in two's complement
    "  let a = trunc(abs(v));\n  let h = floor(a / 4294967296.0);\n"
    "  var lo = u32(a - h * 4294967296.0);\n  var hi = u32(h);\n"
    "  if (v < 0.0) { lo = ~lo + 1u; hi = ~hi + select(0u, 1u, lo == 0u); }\n"
    "  return vec2u(lo, hi);\n"
    "}\n"
    "fn f32_to_i32(v: f32) -> u32 {\n"
    "  var r = 0;\n"
    "  if (v >= 2147483647.0) { r = 2147483647; } else if (v <= -2147483648.0) { r = -2147483647 - 1; }\n"
    "  else if (is_finite(v)) { r = i32(trunc(v)); }\n"
    "  return bitcast<u32>(r);\n"
    "}\n";

std::string unitOf(DType t) { return t == DType::u8 ? "1u" : "2u"; }
std::string maskOf(DType t) { return t == DType::u8 ? "0xffu" : "0xffffu"; }

// A copy or conversion (or, with fill, a fill with the bits of word kParamWord) where the source
// or the destination is narrower than a word. Narrow elements share their word with others that
// other invocations write: each is set with an atomic clear and an atomic or of its own bits.
std::string narrowSource(DType from, DType to, bool fill) {
  const bool narrow_out = isNarrow(to);
  std::string src = prelude(fill ? 1 : 2) + (fill ? "" : readBinding(0, "src", "u32")) + "@group(0) @binding(" +
                    (fill ? "0" : "1") + ") var<storage, read_write> dst: array<" +
                    (narrow_out ? "atomic<u32>" : "u32") + ">;\n" + kF32ToI64 + kHalves + (fill || (isWord(from) && from != DType::f32) ? "" : elementReader("src", from)) + kMainSignature + " {\n  " +
                    kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n";
  std::string bits;  // the destination's bits (narrow) or value (a word dtype)
  if (fill) {
    src += "  let bits = uw(" + std::to_string(kParamWord) + "u) & " + maskOf(to) + ";\n";
  } else {
    src += "  let s = strided(i, 0u);\n";
    if (from == to)
      src += "  let sb = s * " + unitOf(from) + ";\n  let raw = (src[sb / 4u] >> (8u * (sb % 4u))) & " + maskOf(from) + ";\n";
    if (from == DType::i32) src += "  let v = f32(bitcast<i32>(src[s]));\n";
    else if (from == DType::i64) src += "  let v = i64_to_f32(src[2u * s], src[2u * s + 1u]);\n";
    else src += "  let v = src_at(s);\n";
    if (from == to) src += "  let bits = raw;\n";
    else if (to == DType::u8) src += "  let bits = select(u32(clamp(trunc(v), 0.0, 255.0)), 0u, is_nan(v));\n";
    else if (to == DType::f16) src += "  let bits = f32_to_f16(v);\n";
    else if (to == DType::bf16) src += "  let bits = f32_to_bf16(v);\n";
  }
  const std::string d = fill ? "strided(i, 0u)" : "strided(i, 1u)";
  if (narrow_out)
    return src + "  let db = " + d + " * " + unitOf(to) + ";\n  let shift = 8u * (db % 4u);\n"
                 "  atomicAnd(&dst[db / 4u], ~(" + maskOf(to) + " << shift));\n  atomicOr(&dst[db / 4u], bits << shift);\n}\n";
  if (to == DType::f32) return src + "  dst[" + d + "] = bitcast<u32>(v);\n}\n";
  if (to == DType::i32) return src + "  dst[" + d + "] = f32_to_i32(v);\n}\n";
  return src + "  let w = f32_to_i64(v);\n  dst[2u * " + d + "] = w.x;\n  dst[2u * " + d + " + 1u] = w.y;\n}\n";
}

std::string convertSource(DType from, DType to) {
  const uint32_t in_words = twoWords(from) ? 2 : 1, out_words = twoWords(to) ? 2 : 1;
  std::string src = prelude(2) + readBinding(0, "src", "u32") + writeBinding(1, "dst", "u32") + kF32ToI64 + kF64 +
                    kMainSignature + " {\n  " + kLinearIndex +
                    "\n  if (i >= uw(0u)) { return; }\n  let s = strided(i, 0u) * " + std::to_string(in_words) +
                    "u;\n  let d = strided(i, 1u) * " + std::to_string(out_words) + "u;\n";
  if (from == DType::f64) {
    src += "  dst[d] = f64_to_f32(src[s], src[s + 1u]);\n";
  } else if (to == DType::f64) {
    src += "  let w = f32_to_f64(src[s]);\n  dst[d] = w.x;\n  dst[d + 1u] = w.y;\n";
  } else if (from == DType::i64) {
    src += "  let lo = src[s];\n  let hi = src[s + 1u];\n";
    if (to == DType::f32) src += "  dst[d] = bitcast<u32>(i64_to_f32(lo, hi));\n";
    else  // i32: saturated unless hi is lo's sign extension
      src += "  let fits = (hi == 0u && lo < 0x80000000u) || (hi == 0xffffffffu && lo >= 0x80000000u);\n"
             "  dst[d] = select(select(0x7fffffffu, 0x80000000u, bitcast<i32>(hi) < 0), lo, fits);\n";
  } else if (from == DType::i32) {
    if (to == DType::f32) src += "  dst[d] = bitcast<u32>(f32(bitcast<i32>(src[s])));\n";
    else src += "  let v = src[s];\n  dst[d] = v;\n  dst[d + 1u] = select(0u, 0xffffffffu, bitcast<i32>(v) < 0);\n";
  } else {  // f32
    src += "  let v = bitcast<f32>(src[s]);\n";
    if (to == DType::i64) src += "  let w = f32_to_i64(v);\n  dst[d] = w.x;\n  dst[d + 1u] = w.y;\n";
    else src += "  dst[d] = f32_to_i32(v);\n";
  }
  return src + "}\n";
}

// Host bytes (contiguous, dst's dtype) into contiguous dst: one write, padded to whole words.
void upload(const RawTensor& src, const RawTensor& dst) {
  // q8_0: both in emptyQ8's layout (the block axis innermost, wherever it is among the tags)
  const bool same_layout = src.dtype() == DType::q8_0 ? src.strides() == dst.strides()
                                                      : src.isContiguous() && dst.isContiguous();
  if (src.dtype() != dst.dtype() || !same_layout)
    unsupported("an upload of " + std::string(name(src.dtype())) + " " + src.describe() + " into " +
                std::string(name(dst.dtype())) + " " + dst.describe() + " (it takes contiguous values of one dtype)");
  const bool q8 = dst.dtype() == DType::q8_0;  // whole blocks, in emptyQ8's layout on both sides
  if (q8 && (dst.offset() != 0 || src.offset() % q8::kBlock != 0))
    unsupported("an upload of q8_0 blocks into a view " + dst.describe());
  const size_t size = q8 ? 0 : elementSize(dst.dtype());
  const size_t bytes = q8 ? q8::bytesFor(src.numel()) : static_cast<size_t>(src.numel()) * size;
  const size_t at = static_cast<size_t>(dst.offset()) * size;
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
  const bool narrow = isNarrow(dst.dtype());
  const uint32_t words = narrow ? 1 : wordsOf(dst.dtype(), "fill");
  if (dst.numel() == 0) return;
  uint32_t bits[2] = {0, 0};
  io::store(reinterpret_cast<std::byte*>(bits), dst.dtype(), 0, value);
  const StridedLayout l = stridedLayout(dst.shape(), {dst.strides()}, {dst.offset()});
  Uniforms u = l.uniforms();
  for (uint32_t j = 0; j < words; ++j) u.set(kParamWord + j, bits[j]);
  const uint32_t buffer = bufferOf(dst, "fill");
  const DType dtype = dst.dtype();
  const std::string source = narrow ? narrowSource(dst.dtype(), dst.dtype(), true) : fillSource(words);
  dispatchStrided(Gpu::get().pipeline(source), {&buffer, 1}, {&dtype, 1}, l, u);
}

void copy(ExecContext&, const RawTensor& src, const RawTensor& dst) {
  if (src.shape() != dst.shape())
    fail(ErrorCode::ShapeMismatch, "copy from " + src.describe() + " into " + dst.describe());
  if (src.device() == Device::cpu && dst.device() == Device::webgpu) return upload(src, dst);
  if (dst.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "cannot write into q8_0 " + dst.describe() + " element by element");
  // From q8_0 it dequantizes; into q8_0 only an upload (quantizing is Tensor::quantize's).
  const bool narrow = (isNarrow(src.dtype()) || isNarrow(dst.dtype()) || src.dtype() == DType::q8_0) &&
                      (isWord(src.dtype()) || isNarrow(src.dtype()) || src.dtype() == DType::q8_0) &&
                      (isWord(dst.dtype()) || isNarrow(dst.dtype()));
  const bool convert = converts(src.dtype(), dst.dtype());
  if (src.dtype() != dst.dtype() && !convert && !narrow)
    unsupported("a conversion from " + std::string(name(src.dtype())) + " to " + std::string(name(dst.dtype())));
  const uint32_t words = convert || narrow ? 1 : wordsOf(src.dtype(), "a copy");
  const uint32_t buffers[2] = {bufferOf(src, "copy"), bufferOf(dst, "copy")};
  if (src.numel() == 0) return;
  if (buffers[0] == buffers[1]) unsupported("a copy within one buffer");
  const StridedLayout l = stridedLayout(src.shape(), {src.strides(), dst.strides()}, {src.offset(), dst.offset()});
  const std::string source = narrow    ? narrowSource(src.dtype(), dst.dtype(), false)
                             : convert ? convertSource(src.dtype(), dst.dtype())
                                       : copySource(words);
  const DType dtypes[2] = {src.dtype(), dst.dtype()};
  dispatchStrided(Gpu::get().pipeline(source), buffers, dtypes, l, l.uniforms());
}

}  // namespace fucina::backend::webgpu
