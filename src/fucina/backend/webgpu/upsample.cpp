// Nearest 2x upsampling of the last two axes (contiguous f32 [..., H, W]): each output element
// reads its source, and the VJP gives each input element the sum of its 2x2 block, so every
// invocation owns what it writes.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Uniforms: count, H, W (the input's).
std::string upSource() {
  return prelude(2) + readBinding(0, "x") + writeBinding(1, "y") + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let h = uw(1u);\n  let w = uw(2u);\n"
         "  let ox = i % (2u * w);\n  let oy = (i / (2u * w)) % (2u * h);\n  let plane = i / (4u * h * w);\n"
         "  y[i] = x[(plane * h + oy / 2u) * w + ox / 2u];\n}\n";
}

std::string downSource() {
  return prelude(2) + readBinding(0, "gy") + writeBinding(1, "gx") + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let h = uw(1u);\n  let w = uw(2u);\n"
         "  let cx = i % w;\n  let cy = (i / w) % h;\n  let plane = i / (h * w);\n"
         "  let o = (plane * 2u * h + 2u * cy) * 2u * w + 2u * cx;\n"
         "  gx[i] = (gy[o] + gy[o + 1u]) + (gy[o + 2u * w] + gy[o + 2u * w + 1u]);\n}\n";
}

RawTensor resample(ExecContext& ctx, const RawTensor& in_raw, bool up) {
  const RawTensor in = rowsOf(ctx, in_raw, up ? "upsample2x" : "upsample2x VJP");
  if (in.rank() < 2) fail(ErrorCode::ShapeMismatch, "upsample2x needs two spatial axes, got " + in.describe());
  Extents shape = in.shape();
  const size_t r = shape.size();
  const int64_t h = up ? shape[r - 2] : shape[r - 2] / 2, w = up ? shape[r - 1] : shape[r - 1] / 2;
  shape[r - 2] = up ? 2 * h : h;
  shape[r - 1] = up ? 2 * w : w;
  RawTensor out = RawTensor::empty(ctx, in.tags(), shape);
  if (out.numel() == 0) return out;
  Uniforms u;
  u.u(static_cast<uint64_t>(out.numel())).u(static_cast<uint64_t>(h)).u(static_cast<uint64_t>(w));
  const uint32_t buffers[2] = {bufferOf(in, "upsample2x"), bufferOf(out, "upsample2x")};
  dispatchLinear(Gpu::get().pipeline(up ? upSource() : downSource()), buffers, u, out.numel());
  return out;
}

}  // namespace

RawTensor upsample2x(ExecContext& ctx, const RawTensor& x) { return resample(ctx, x, true); }
RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy) { return resample(ctx, gy, false); }

}  // namespace fucina::backend::webgpu
