// torch's unfold and fold (im2col and col2im) of contiguous f32 images [N, C, H, W] and columns
// [N, C·kh·kw, out_h·out_w] (Kernels::im2col): each column entry reads its image element (0 in the
// padding), and each image element gathers, in (i, j) order, the column entries read from it, so
// every invocation owns what it writes and no atomics are needed.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Uniforms: count, C, H, W, kh, kw, stride h and w, padding h and w, dilation h and w, out_h, out_w.
constexpr const char* kGeometry =
    "  let C = uw(1u);\n  let H = uw(2u);\n  let W = uw(3u);\n  let kh = uw(4u);\n  let kw = uw(5u);\n"
    "  let sh = ui(6u);\n  let sw = ui(7u);\n  let ph = ui(8u);\n  let pw = ui(9u);\n  let dh = ui(10u);\n"
    "  let dw = ui(11u);\n  let oh = uw(12u);\n  let ow = uw(13u);\n";

// The head of either kernel: one invocation per element of `out`, reading `in`, the geometry defined.
std::string head(const char* in, const char* out) {
  return prelude(2) + readBinding(0, in) + writeBinding(1, out) + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n" + kGeometry;
}

std::string im2colSource() {
  return head("x", "cols") +
         "  let P = oh * ow;\n  let ox = i % ow;\n  let oy = (i / ow) % oh;\n  let row = (i / P) % (C * kh * kw);\n"
         "  let n = i / (P * C * kh * kw);\n"
         "  let j = row % kw;\n  let ki = (row / kw) % kh;\n  let c = row / (kh * kw);\n"
         "  let iy = i32(oy) * sh - ph + i32(ki) * dh;\n  let ix = i32(ox) * sw - pw + i32(j) * dw;\n"
         "  var v = 0.0;\n"
         "  if (iy >= 0 && iy < i32(H) && ix >= 0 && ix < i32(W)) {\n"
         "    v = x[((n * C + c) * H + u32(iy)) * W + u32(ix)];\n"
         "  }\n"
         "  cols[i] = v;\n}\n";
}

std::string col2imSource() {
  return head("cols", "x") +
         "  let P = oh * ow;\n  let px = i32(i % W);\n  let py = i32((i / W) % H);\n  let c = (i / (H * W)) % C;\n"
         "  let n = i / (C * H * W);\n"
         "  var s = 0.0;\n"
         "  for (var ki = 0u; ki < kh; ki = ki + 1u) {\n"
         "    let ty = py + ph - i32(ki) * dh;\n"
         "    if (ty < 0 || ty % sh != 0 || ty / sh >= i32(oh)) { continue; }\n"
         "    for (var j = 0u; j < kw; j = j + 1u) {\n"
         "      let tx = px + pw - i32(j) * dw;\n"
         "      if (tx < 0 || tx % sw != 0 || tx / sw >= i32(ow)) { continue; }\n"
         "      let row = (c * kh + ki) * kw + j;\n"
         "      s = s + cols[(n * C * kh * kw + row) * P + u32(ty / sh) * ow + u32(tx / sw)];\n"
         "    }\n"
         "  }\n"
         "  x[i] = s;\n}\n";
}

RawTensor columns(ExecContext& ctx, const RawTensor& in_raw, const Conv2dGeometry& g, const Tags& tags,
                  const Extents& shape, bool to_columns) {
  const RawTensor in = rowsOf(ctx, in_raw, to_columns ? "unfold" : "fold");
  RawTensor out = RawTensor::empty(ctx, tags, shape);
  if (out.numel() == 0) return out;
  Uniforms u;
  u.u(static_cast<uint64_t>(out.numel())).u(static_cast<uint64_t>(g.channels)).u(static_cast<uint64_t>(g.height));
  u.u(static_cast<uint64_t>(g.width)).u(static_cast<uint64_t>(g.kh)).u(static_cast<uint64_t>(g.kw));
  u.i(g.stride_h).i(g.stride_w).i(g.pad_h).i(g.pad_w).i(g.dilation_h).i(g.dilation_w);
  u.u(static_cast<uint64_t>(g.out_h)).u(static_cast<uint64_t>(g.out_w));
  const uint32_t buffers[2] = {bufferOf(in, "unfold"), bufferOf(out, "unfold")};
  if (in.numel() == 0) {  // no image elements (or columns) to read: zeros
    fill(ctx, out, 0.0);
    return out;
  }
  dispatchLinear(Gpu::get().pipeline(to_columns ? im2colSource() : col2imSource()), buffers, u, out.numel());
  return out;
}

}  // namespace

RawTensor im2col(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                 const Extents& shape) {
  return columns(ctx, images, g, tags, shape, true);
}

RawTensor col2im(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                 const Extents& shape) {
  return columns(ctx, cols, g, tags, shape, false);
}

}  // namespace fucina::backend::webgpu
