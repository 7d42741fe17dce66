// Seeded dropout on the device: the same counter-based draws as the host (core/random.h), in
// 64-bit arithmetic built from u32 pairs (WGSL has no 64-bit integers), so a mask is the same on
// every backend. unit(seed, i) < p is compared as integers: bits(seed, i) < ceil(p·2⁵³)·2¹¹.
#include <cmath>
#include <string>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/random.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

std::string dropoutSource() {
  // Words: n, mix(seed) (2), threshold (2), keep_scale, all dropped, the first element's index (a
  // piece's: Note [Bound in pieces]), which the draw is of.
  return prelude(2) + readBinding(0, "x") + writeBinding(1, "y") + kU64 + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let bits = mix(add64(vec2u(uw(1u), uw(2u)), mul64(vec2u(i + uw(7u), 0u), vec2u(0x7f4a7c15u, 0x9e3779b9u))));\n"
         "  let t = vec2u(uw(3u), uw(4u));\n"
         "  let dropped = uw(6u) != 0u || bits.y < t.y || (bits.y == t.y && bits.x < t.x);\n"
         "  y[i] = x[i] * select(uf(5u), 0.0, dropped);\n"
         "}\n";
}

}  // namespace

RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale) {
  requireF32(x, "dropout");
  const RawTensor src = whole(ctx, x);
  RawTensor y = RawTensor::empty(ctx, src.tags(), src.shape());
  const uint64_t mixed = random::mix(seed);
  const bool all = p >= 1;
  const uint64_t threshold = all || !(p > 0) ? 0 : static_cast<uint64_t>(std::ceil(std::ldexp(p, 53))) << 11;
  Uniforms u;
  u.u(static_cast<uint64_t>(y.numel())).u(mixed & 0xffffffffu).u(mixed >> 32).u(threshold & 0xffffffffu);
  u.u(threshold >> 32).f(keep_scale).u(all ? 1 : 0).u(0);
  const uint32_t buffers[2] = {bufferOf(src, "dropout"), bufferOf(y, "dropout")};
  const uint64_t elem_bytes[2] = {4, 4};
  dispatchElements(Gpu::get().pipeline(dropoutSource()), buffers, elem_bytes, u, y.numel(), 7);
  return y;
}

}  // namespace fucina::backend::webgpu
