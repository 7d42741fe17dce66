// Convolutions as the tiled GEMM (Note [Tiled GEMM]) reading image taps in place (an implicit
// im2col: no column buffer): per (image, group) y = W_g·cols; the input gradient gathers, for
// each image element, the output positions whose taps read it (so no two invocations add into one
// element); the weight gradient sums over images and positions, its long depth split in slices
// that sumAxes adds.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/tiled_gemm.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

enum class Pass { forward, input_grad, weight_grad };

// The geometry, from word kGemmWord on.
std::string geometry() {
  std::string s = "struct Geo { C: u32, H: u32, W: u32, kh: u32, kw: u32, sh: u32, sw: u32, ph: u32, pw: u32, "
                  "dh: u32, dw: u32, OH: u32, OW: u32, G: u32, OC: u32 }\nfn geo() -> Geo { return Geo(";
  for (uint32_t i = 0; i < 15; ++i) s += (i ? ", uw(" : "uw(") + std::to_string(kGemmWord + i) + "u)";
  return s + "); }\n";
}

// x_col: image n's tap k of output position p in group grp, 0 in the padding.
std::string xCol(bool channels_last) {
  std::string s =
       "fn x_col(n: u32, grp: u32, k: u32, p: u32) -> f32 {\n"
       "  let q = geo();\n  let Cg = q.C / q.G;\n";
  s += channels_last ? "  let t = k / Cg;\n  let c = k % Cg;\n" : "  let c = k / (q.kh * q.kw);\n  let t = k % (q.kh * q.kw);\n";
  s += "  let iy = i32((p / q.OW) * q.sh + (t / q.kw) * q.dh) - i32(q.ph);\n"
       "  let ix = i32((p % q.OW) * q.sw + (t % q.kw) * q.dw) - i32(q.pw);\n"
       "  if (iy < 0 || ix < 0 || iy >= i32(q.H) || ix >= i32(q.W)) { return 0.0; }\n"
       "  let ch = grp * Cg + c;\n";
  s += channels_last ? "  return x[((n * q.H + u32(iy)) * q.W + u32(ix)) * q.C + ch];\n}\n"
                     : "  return x[((n * q.C + ch) * q.H + u32(iy)) * q.W + u32(ix)];\n}\n";
  return s;
}

// Output o's gradient at position p of image n, in gy's layout.
std::string gyAt(bool cl) {
  return cl ? "gy[(n * q.OH * q.OW + p) * q.OC + o]" : "gy[(n * q.OC + o) * q.OH * q.OW + p]";
}

std::string source(Pass pass, bool cl) {
  const std::string flags = std::to_string(kGemmWord + 15);  // bias, then relu
  switch (pass) {
    case Pass::forward:  // C[n·G + g] [OCg, P] = W_g [OCg, Cg·kh·kw] · cols
      return tiledGemmSource(
          readBinding(0, "x") + readBinding(1, "w") + readBinding(2, "bias") + writeBinding(3, "y") + geometry() + xCol(cl) +
              "fn a_at(b: u32, m: u32, k: u32) -> f32 {\n  let q = geo();\n"
              "  return w[((b % q.G) * (q.OC / q.G) + m) * (q.C / q.G * q.kh * q.kw) + k];\n}\n"
              "fn b_at(b: u32, p: u32, k: u32) -> f32 { let q = geo(); return x_col(b / q.G, b % q.G, k, p); }\n"
              "fn store(b: u32, s: u32, m: u32, p: u32, v: f32) {\n  let q = geo();\n  let n = b / q.G;\n"
              "  let o = (b % q.G) * (q.OC / q.G) + m;\n  var r = v;\n"
              "  if (uw(" + flags + "u) != 0u) { r = r + bias[o]; }\n"
              "  if (uw(" + flags + "u + 1u) != 0u && r < 0.0) { r = 0.0; }\n" +
              (cl ? "  y[(n * q.OH * q.OW + p) * q.OC + o] = r;\n}\n" : "  y[(n * q.OC + o) * q.OH * q.OW + p] = r;\n}\n"),
          4, TileLoad::along_depth, along(cl));
    case Pass::input_grad:  // C[n·G + g] [Cg, H·W]: depth (o', tap), gathered from the outputs
      return tiledGemmSource(
          readBinding(0, "gy") + readBinding(1, "w") + writeBinding(2, "gx") + geometry() +
              "fn a_at(b: u32, c: u32, k: u32) -> f32 {\n  let q = geo();\n  let taps = q.kh * q.kw;\n"
              "  let o = (b % q.G) * (q.OC / q.G) + k / taps;\n  let t = k % taps;\n" +
              (cl ? "  return w[(o * taps + t) * (q.C / q.G) + c];\n}\n" : "  return w[(o * (q.C / q.G) + c) * taps + t];\n}\n") +
              "fn b_at(b: u32, pix: u32, k: u32) -> f32 {\n  let q = geo();\n  let taps = q.kh * q.kw;\n  let n = b / q.G;\n"
              "  let o = (b % q.G) * (q.OC / q.G) + k / taps;\n  let t = k % taps;\n"
              "  let ny = i32(pix / q.W + q.ph) - i32((t / q.kw) * q.dh);\n"
              "  let nx = i32(pix % q.W + q.pw) - i32((t % q.kw) * q.dw);\n"
              "  if (ny < 0 || nx < 0) { return 0.0; }\n"
              "  if (u32(ny) % q.sh != 0u || u32(nx) % q.sw != 0u) { return 0.0; }\n"
              "  let oy = u32(ny) / q.sh;\n  let ox = u32(nx) / q.sw;\n"
              "  if (oy >= q.OH || ox >= q.OW) { return 0.0; }\n"
              "  let p = oy * q.OW + ox;\n"
              "  return " + gyAt(cl) + ";\n}\n"
              "fn store(b: u32, s: u32, c: u32, pix: u32, v: f32) {\n  let q = geo();\n  let n = b / q.G;\n"
              "  let ch = (b % q.G) * (q.C / q.G) + c;\n" +
              (cl ? "  gx[(n * q.H * q.W + pix) * q.C + ch] = v;\n}\n" : "  gx[(n * q.C + ch) * q.H * q.W + pix] = v;\n}\n"),
          3, along(!cl), TileLoad::along_rows);
    case Pass::weight_grad:  // C[g] [OCg, Cg·kh·kw] over depth (image, position), in slices s
      return tiledGemmSource(
          readBinding(0, "x") + readBinding(1, "gy") + writeBinding(2, "gw") + geometry() + xCol(cl) +
              "fn a_at(b: u32, m: u32, d: u32) -> f32 {\n  let q = geo();\n  let P = q.OH * q.OW;\n"
              "  let n = d / P;\n  let p = d % P;\n  let o = b * (q.OC / q.G) + m;\n"
              "  return " + gyAt(cl) + ";\n}\n"
              "fn b_at(b: u32, k: u32, d: u32) -> f32 {\n  let q = geo();\n  let P = q.OH * q.OW;\n"
              "  return x_col(d / P, b, k, d % P);\n}\n"
              "fn store(b: u32, s: u32, m: u32, k: u32, v: f32) {\n  let q = geo();\n"
              "  gw[((s * q.G + b) * (q.OC / q.G) + m) * (q.C / q.G * q.kh * q.kw) + k] = v;\n}\n",
          3, along(!cl), along(!cl));
  }
  return {};
}

Uniforms geometryWords(const ConvPlan& p) {
  const Conv2dGeometry& g = p.g;
  Uniforms u;
  u.set(kGemmWord - 1, 0);
  for (int64_t v : {g.channels, g.height, g.width, g.kh, g.kw, g.stride_h, g.stride_w, g.pad_h, g.pad_w,
                    g.dilation_h, g.dilation_w, g.out_h, g.out_w, p.G, p.OC})
    u.u(static_cast<uint64_t>(v));
  return u;
}

}  // namespace

RawTensor conv2d(ExecContext& ctx, const RawTensor& x_in, const RawTensor& w_in, const ConvPlan& p, const Tags& tags,
                 const Extents& shape, const RawTensor& bias_in, bool relu) {
  requireF32(x_in, "conv2d");
  requireF32(w_in, "conv2d");
  const RawTensor x = whole(ctx, x_in), w = whole(ctx, w_in), bias = bias_in.valid() ? whole(ctx, bias_in) : bias_in;
  RawTensor y = RawTensor::empty(ctx, tags, shape);
  Uniforms u = geometryWords(p);
  u.u(bias.valid() ? 1 : 0).u(relu ? 1 : 0);
  const uint32_t buffers[4] = {bufferOf(x, "conv2d"), bufferOf(w, "conv2d"),
                               bufferOf(bias.valid() ? bias : w, "conv2d"), bufferOf(y, "conv2d")};
  const int64_t Cg = p.g.channels / p.G;
  dispatchGemm(source(Pass::forward, p.channels_last), buffers, u,
               {p.N * p.G, p.OC / p.G, p.positions(), Cg * p.g.kh * p.g.kw}, "conv2d");
  return y;
}

RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy_in, const RawTensor& w_in, const ConvPlan& p,
                          const Tags& tags, const Extents& shape) {
  requireF32(gy_in, "conv2d input gradient");
  const RawTensor gy = whole(ctx, gy_in), w = whole(ctx, w_in);
  RawTensor gx = RawTensor::empty(ctx, tags, shape);
  const uint32_t buffers[3] = {bufferOf(gy, "conv2d input gradient"), bufferOf(w, "conv2d input gradient"),
                               bufferOf(gx, "conv2d input gradient")};
  dispatchGemm(source(Pass::input_grad, p.channels_last), buffers, geometryWords(p),
               {p.N * p.G, p.g.channels / p.G, p.g.height * p.g.width, p.OC / p.G * p.g.kh * p.g.kw},
               "conv2d input gradient");
  return gx;
}

RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x_in, const RawTensor& gy_in, const ConvPlan& p,
                           const Tags& tags, const Extents& shape) {
  requireF32(x_in, "conv2d weight gradient");
  const RawTensor x = whole(ctx, x_in), gy = whole(ctx, gy_in);
  const GemmShape s = splitDepth({p.G, p.OC / p.G, p.groupDepth(), p.N * p.positions()});
  const Tag slices("webgpu.slice");
  Tags sliced_tags = tags;
  Extents sliced_shape = shape;
  if (s.splits > 1) {
    sliced_tags.insert(sliced_tags.begin(), slices);
    sliced_shape.insert(sliced_shape.begin(), s.splits);
  }
  RawTensor gw = RawTensor::empty(ctx, sliced_tags, sliced_shape);
  const uint32_t buffers[3] = {bufferOf(x, "conv2d weight gradient"), bufferOf(gy, "conv2d weight gradient"),
                               bufferOf(gw, "conv2d weight gradient")};
  dispatchGemm(source(Pass::weight_grad, p.channels_last), buffers, geometryWords(p), s, "conv2d weight gradient");
  return s.splits > 1 ? sumAxes(ctx, gw, {slices}) : gw;
}

}  // namespace fucina::backend::webgpu
