// rollBy's and shiftBy's moves (Kernels::moveSlices) on the device, which reads the shifts where
// they are: one kernel turns each slice's i32 or i64 shift into the move it makes along the axis
// (wrapped into [0, n) for a roll, clamped to [-n, n] for a shift, negated for the VJP), and one
// gathers every element of the result from its slice's source place, or writes 0.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Words: 0 slices, 1 n, 2 words per shift (1: i32, 2: i64), 3 roll (1) or shift (0), 4 adjoint.
// A shift's magnitude (two's complement negated) is reduced mod n bit by bit from the top, so
// any i64 wraps as on the host (n < 2^31: 2r + 1 stays in a u32).
std::string movesSource() {
  return prelude(2) + readBinding(0, "k", "u32") + writeBinding(1, "moves", "i32") +
         "fn mod_u64(lo: u32, hi: u32, n: u32) -> u32 {\n"
         "  var r = 0u;\n"
         "  for (var b = 0u; b < 64u; b = b + 1u) {\n"
         "    let at = 63u - b;\n"
         "    let bit = (select(lo, hi, at >= 32u) >> (at & 31u)) & 1u;\n"
         "    r = r * 2u + bit;\n"
         "    if (r >= n) { r = r - n; }\n"
         "  }\n"
         "  return r;\n"
         "}\n" +
         kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n  let wide = uw(2u) == 2u;\n"
         "  var lo = k[i];\n  var hi = select(0u, 0xffffffffu, (lo >> 31u) == 1u);\n"  // an i32, sign-extended
         "  if (wide) { lo = k[2u * i];\n    hi = k[2u * i + 1u]; }\n"
         "  let neg = (hi >> 31u) == 1u;\n"
         "  var mlo = lo;\n  var mhi = hi;\n"
         "  if (neg) { mlo = ~lo + 1u; mhi = ~hi + select(0u, 1u, mlo == 0u); }\n"
         "  var m = 0i;\n"
         "  if (uw(3u) == 1u) {\n"
         "    let r = mod_u64(mlo, mhi, n);\n"
         "    var w = select(r, (n - r) % n, neg);\n"
         "    if (uw(4u) == 1u) { w = (n - w) % n; }\n"
         "    m = i32(w);\n"
         "  } else {\n"
         "    m = i32(select(mlo, n, mhi != 0u || mlo > n));\n"
         "    if (neg != (uw(4u) == 1u)) { m = -m; }\n"
         "  }\n"
         "  moves[i] = m;\n"
         "}\n";
}

// One invocation per element of the contiguous result, `words` 32-bit words each. Words: 0 the
// elements, 1 n, 2 the elements per step along the axis, 3 the slices, 4 the elements per slice
// step, 5 roll (1) or shift (0).
std::string gatherSource(uint32_t words) {
  std::string src = prelude(3) + readBinding(0, "src", "u32") + readBinding(1, "moves", "i32") +
                    writeBinding(2, "dst", "u32") + kMainSignature + " {\n  " + kLinearIndex +
                    "\n  if (i >= uw(0u)) { return; }\n"
                    "  let n = uw(1u);\n  let inner = uw(2u);\n"
                    "  let j = (i / inner) % n;\n  let m = moves[(i / uw(4u)) % uw(3u)];\n"
                    "  var at = i32(j) - m;\n"
                    "  if (uw(5u) == 1u) { at = i32((j + n - u32(m)) % n); }\n"
                    "  let inside = at >= 0 && at < i32(n);\n"
                    "  let s = (i - j * inner + u32(max(at, 0)) * inner) * " + std::to_string(words) + "u;\n";
  for (uint32_t w = 0; w < words; ++w) {
    const std::string o = std::to_string(w) + "u";
    src += "  dst[i * " + std::to_string(words) + "u + " + o + "] = select(0u, src[s + " + o + "], inside);\n";
  }
  return src + "}\n";
}

// The dtype a slice move runs in: words as they are, and the narrower ones widened exactly.
DType movedAs(DType d) {
  if (d == DType::u8) return DType::i32;
  if (d == DType::f16 || d == DType::bf16) return DType::f32;
  return d;
}

}  // namespace

RawTensor moveSlices(ExecContext& ctx, Kernels::SliceMove how, const RawTensor& src, Tag axis, Tag by_axis,
                     const RawTensor& shifts, bool adjoint) {
  const DType as = movedAs(src.dtype());
  if (as != src.dtype()) {
    const RawTensor moved = moveSlices(ctx, how, src.to(ctx, as), axis, by_axis, shifts, adjoint);
    return moved.to(ctx, src.dtype());
  }
  RawTensor out = RawTensor::empty(ctx, src.tags(), src.shape(), src.dtype());
  if (out.numel() == 0) return out;
  const RawTensor x = whole(ctx, src), k = whole(ctx, shifts);
  const int64_t n = src.extent(axis), slices = src.extent(by_axis);
  RawTensor moves = RawTensor::empty(ctx, {by_axis}, {slices}, DType::i32);
  Gpu& gpu = Gpu::get();
  Uniforms um;
  um.u(static_cast<uint64_t>(slices)).u(static_cast<uint64_t>(n));
  um.u(k.dtype() == DType::i64 ? 2 : 1).u(how == Kernels::SliceMove::roll ? 1 : 0).u(adjoint ? 1 : 0);
  const uint32_t mb[2] = {bufferOf(k, "moveSlices"), bufferOf(moves, "moveSlices")};
  dispatchLinear(gpu.pipeline(movesSource()), mb, um, slices);
  // Element strides of the contiguous result along the axis and along by_axis.
  const auto strideOf = [&](Tag t) {
    int64_t s = 1;
    for (size_t d = out.rank(); d-- > out.axis(t) + 1;) s *= out.shape()[d];
    return s;
  };
  Uniforms u;
  u.u(static_cast<uint64_t>(out.numel())).u(static_cast<uint64_t>(n)).u(static_cast<uint64_t>(strideOf(axis)));
  u.u(static_cast<uint64_t>(slices)).u(static_cast<uint64_t>(strideOf(by_axis)));
  u.u(how == Kernels::SliceMove::roll ? 1 : 0);
  const uint32_t buffers[3] = {bufferOf(x, "moveSlices"), bufferOf(moves, "moveSlices"), bufferOf(out, "moveSlices")};
  dispatchLinear(gpu.pipeline(gatherSource(static_cast<uint32_t>(elementSize(as) / 4))), buffers, u, out.numel());
  return out;
}

}  // namespace fucina::backend::webgpu
