// The webgpu backend's weight preparations: the q8_0 and ternary quantizers (Kernels::quantizeQ8,
// ternaryQuantize), writing what the cpu writes, and packed right operands (packRhs,
// packedProduct): Bᵀ as a plain f32 {columns..., depth} matrix, which the tiled GEMM reads with its
// depth contiguous, or the q8_0 blocks themselves, dequantized in the GEMM's loads.
#include <algorithm>
#include <array>
#include <string>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/q8.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Note [Exact quotients]: the q8_0 quantizer divides (amax/127, x/d) and rounds the quotient, and
// every backend must write the same bytes, but WGSL's division is only within 2.5 ulp. Both
// divisors have few significant bits (127, and d an f16 value), so div_rn divides the mantissas
// as integers, 26 bits of quotient and a sticky bit, and rounds to nearest even as IEEE division
// does. Its operands are positive normal f32s, b of at most 12 significant bits; a quotient below
// f32's normal range is 0 and one past it infinity, which both uses round or clamp the same way.
constexpr const char* kDivRn =
    "fn div_rn(a: f32, b: f32) -> f32 {\n"
    "  let ab = bitcast<u32>(a);\n  let bb = bitcast<u32>(b);\n"
    "  let ma = (ab & 0x7fffffu) | 0x800000u;\n  let mb0 = (bb & 0x7fffffu) | 0x800000u;\n"
    "  let tz = countTrailingZeros(mb0);\n  let mb = mb0 >> tz;\n"
    // hi has 12 to 24 bits; s more bits of quotient make 26 of them
    "  let hi = ma / mb;\n  let s = 25u - firstLeadingBit(hi);\n  let rs = (ma % mb) << s;\n"
    "  let q = (hi << s) | (rs / mb);\n"
    "  let rest = (q & 1u) | select(0u, 1u, rs % mb != 0u);\n"
    "  var m = q >> 2u;\n"
    "  if (((q >> 1u) & 1u) == 1u && (rest != 0u || (m & 1u) == 1u)) { m = m + 1u; }\n"
    // a/b = m·2^(2 - s + ea - eb - tz), m of 24 bits: biased exponent that + 150
    "  var e = i32((ab >> 23u) & 0xffu) - i32((bb >> 23u) & 0xffu) - i32(tz) - i32(s) + 152;\n"
    "  if (m == 0x1000000u) { m = 0x800000u; e = e + 1; }\n"
    "  if (e <= 0) { return 0.0; }\n"
    "  if (e >= 255) { return from_bits(0x7f800000u); }\n"
    "  return bitcast<f32>((u32(e) << 23u) | (m & 0x7fffffu));\n"
    "}\n";

// One invocation per pair of blocks (68 bytes, 17 whole words), as backend/q8_blocks.h's
// quantizeBlock: d = f16(min(amax/127, 65504)) over the non-NaN |x|, q = round(x/d) (ties away
// from zero) clamped to ±127, 0 for NaN and for every x when d is 0. Magnitudes compare as bits
// (non-negative floats order as their bits), so a NaN never counts. Words: 0 the pairs of this
// piece, 1 the blocks in all, 2 the piece's first pair; src the blocks' values, contiguous f32.
std::string quantizeQ8Source() {
  return prelude(2) + readBinding(0, "src") + writeBinding(1, "dst", "u32") + kHalves + kDivRn + kMainSignature +
         " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let blocks = select(2u, 1u, 2u * (uw(2u) + i) + 1u >= uw(1u));\n"
         "  var by: array<u32, 68>;\n"
         "  for (var h = 0u; h < blocks; h = h + 1u) {\n"
         "    let e0 = (2u * i + h) * 32u;\n"
         "    var amax = 0u;\n"
         "    for (var j = 0u; j < 32u; j = j + 1u) {\n"
         "      let a = bitcast<u32>(src[e0 + j]) & 0x7fffffffu;\n"
         "      if (a <= 0x7f800000u && a > amax) { amax = a; }\n"
         "    }\n"
         "    var bits = 0u;\n"
         "    if (amax == 0x7f800000u) { bits = 0x7bffu; }\n"
         "    else if (amax >= 0x800000u) { bits = f32_to_f16(min(div_rn(bitcast<f32>(amax), 127.0), 65504.0)); }\n"
         "    let d = f16_to_f32(bits);\n"
         "    by[34u * h] = bits & 0xffu;\n    by[34u * h + 1u] = bits >> 8u;\n"
         "    for (var j = 0u; j < 32u; j = j + 1u) {\n"
         "      let xb = bitcast<u32>(src[e0 + j]);\n      let a = xb & 0x7fffffffu;\n"
         "      var q = 0u;\n"
         "      if (bits != 0u && a >= 0x800000u && a <= 0x7f800000u) {\n"
         "        var v = 127.0;\n"
         "        if (a < 0x7f800000u) {\n"
         "          let r = div_rn(bitcast<f32>(a), d);\n          let f = floor(r);\n"
         "          v = min(select(f, f + 1.0, r - f >= 0.5), 127.0);\n"  // not floor(r + 0.5): r + 0.5 rounds
         "        }\n"
         "        q = u32(v);\n"
         "        if ((xb >> 31u) == 1u) { q = (256u - q) & 0xffu; }\n"
         "      }\n"
         "      by[34u * h + 2u + j] = q;\n"
         "    }\n"
         "  }\n"
         "  for (var w = 0u; w < select(17u, 9u, blocks == 1u); w = w + 1u) {\n"
         "    dst[17u * i + w] = by[4u * w] | (by[4u * w + 1u] << 8u) | (by[4u * w + 2u] << 16u) | (by[4u * w + 3u] << 24u);\n"
         "  }\n"
         "}\n";
}

// dotTernarySte's weights from s = Σ|w| / n (the sum f32, in a tree: the cpu's is f64):
// round(clamp(w/s, -1, 1))·s with ties to even, so ±s where fl(|w|/s) > 1/2. Exactly, without
// dividing: |w| - s/2 > s·2^-25, the subtraction exact near the tie (Sterbenz). NaN everywhere
// when s is not finite (a NaN or infinite w), as on the cpu.
constexpr const char* kTernary =
    "fn ternary(w: f32, s: f32) -> f32 {\n"
    "  if (!is_finite(s)) { return nan(); }\n"
    "  if (!((abs(w) - 0.5 * s) > s * 2.98023223876953125e-8)) { return 0.0; }\n"
    "  return select(s, -s, w < 0.0);\n"
    "}\n";

}  // namespace

RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis) {
  RawTensor out = RawTensor::emptyQ8(ctx, a.tags(), a.shape(), block_axis);  // checks the axis
  if (a.numel() == 0) return out;
  // The blocks' values in out's order (the other axes, then block_axis), contiguous f32.
  Tags order;
  for (Tag t : a.tags())
    if (t != block_axis) order.push_back(t);
  order.push_back(block_axis);
  const RawTensor view = a.permuted(order);
  const RawTensor src = view.dtype() == DType::f32 ? whole(ctx, view) : view.to(ctx, DType::f32);
  const int64_t blocks = a.numel() / q8::kBlock, pairs = (blocks + 1) / 2;
  Uniforms u;
  u.set(1, static_cast<uint32_t>(blocks));
  const uint32_t buffers[2] = {bufferOf(src, "quantize"), bufferOf(out, "quantize")};
  const uint64_t pair_bytes[2] = {2 * q8::kBlock * sizeof(float), 2 * q8::kBlockBytes};
  dispatchElements(Gpu::get().pipeline(quantizeQ8Source()), buffers, pair_bytes, u, pairs, 2);
  return out;
}

RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w) {
  requireF32(w, "ternaryQuantize");
  const RawTensor magnitudes = mapOne(ctx, w, "abs(a)");
  const RawTensor sum = sumAxes(ctx, magnitudes, w.tags());
  const std::array<const RawTensor*, 2> ins{&w, &sum};
  return mapExpr(ctx, w.tags(), w.shape(), ins, {"w", "t"}, "ternary(w, t / pa)",
                 {static_cast<double>(std::max<int64_t>(w.numel(), 1))}, kTernary);
}

Kernels::PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last) {
  Tags order = b.tags();
  if (!depth_last) std::rotate(order.begin(), order.begin() + 1, order.end());  // the depth last
  const RawTensor view = b.permuted(order);
  RawTensor bt = RawTensor::empty(ctx, order, view.shape());
  if (bt.numel() > 0) copy(ctx, view, bt);  // 16-bit weights widen to f32
  return {std::move(bt), 0};
}

RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const Kernels::PackedB& b, const RawTensor& bias,
                        const Tags& /*tags*/, const Extents& /*shape*/) {
  // contract lays out a's rows, then the storage's columns: the caller's (tags, shape).
  return contract(ctx, a, b.storage, {a.tags().back()}, bias);
}

}  // namespace fucina::backend::webgpu
