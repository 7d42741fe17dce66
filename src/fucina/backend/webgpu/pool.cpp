// Pooling: one invocation per output over its window (padding never read); the VJP one
// invocation per input element, summing the outputs whose windows hold it (for max, those whose
// recorded argmax is it), so no two invocations add into one element.
#include <string>
#include <vector>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Words: n, then the window (struct Pool), from word 1.
std::string poolGeometry() {
  std::string s = "struct Pool { H: u32, W: u32, kh: u32, kw: u32, sh: u32, sw: u32, ph: u32, pw: u32, OH: u32, "
                  "OW: u32, L: u32 }\nfn pool() -> Pool { return Pool(";
  for (uint32_t i = 0; i < 11; ++i) s += (i ? ", uw(" : "uw(") + std::to_string(1 + i) + "u)";
  return s + "); }\n";
}

std::string forwardSource(bool max) {
  // A NaN is tested by its bits: a WGSL compiler may assume values are finite.
  // Average pooling binds no argmax: an unused binding is not in the pipeline's layout.
  return prelude(max ? 3 : 2) + readBinding(0, "x") + writeBinding(1, "y") + (max ? writeBinding(2, "at", "u32") : "") +
         poolGeometry() +
         kMainSignature +
         " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let q = pool();\n"
         "  let lane = i % q.L;\n  let ox = i / q.L % q.OW;\n  let oy = i / q.L / q.OW % q.OH;\n"
         "  let plane = i / q.L / q.OW / q.OH;\n"
         "  var best = from_bits(0xff800000u);\n  var arg = -1;\n  var s = 0.0;\n"
         "  for (var r = 0u; r < q.kh; r = r + 1u) {\n"
         "    let yy = i32(oy * q.sh + r) - i32(q.ph);\n"
         "    if (yy < 0 || yy >= i32(q.H)) { continue; }\n"
         "    for (var c = 0u; c < q.kw; c = c + 1u) {\n"
         "      let xx = i32(ox * q.sw + c) - i32(q.pw);\n"
         "      if (xx < 0 || xx >= i32(q.W)) { continue; }\n"
         "      let k = u32(yy) * q.W + u32(xx);\n"
         "      let v = x[(plane * q.H * q.W + k) * q.L + lane];\n" +
         (max ? "      if (arg < 0 || v > best || (is_nan(v) && !is_nan(best))) { best = v; arg = i32(k); }\n"
              : "      s = s + v;\n") +
         "    }\n  }\n" +
         (max ? "  y[i] = best;\n"
                "  if (uw(12u) != 0u) { at[2u * i] = bitcast<u32>(arg); at[2u * i + 1u] = select(0u, 0xffffffffu, arg < 0); }\n"
              : "  y[i] = s / f32(q.kh * q.kw);\n") +
         "}\n";
}

std::string vjpSource(bool max) {
  return prelude(max ? 3 : 2) + readBinding(0, "gy") + (max ? readBinding(1, "at", "u32") + writeBinding(2, "gx")
                                                             : writeBinding(1, "gx")) +
         poolGeometry() +
         kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let q = pool();\n"
         "  let lane = i % q.L;\n  let k = i / q.L % (q.H * q.W);\n  let plane = i / q.L / (q.H * q.W);\n"
         "  let ny = i32(k / q.W + q.ph);\n  let nx = i32(k % q.W + q.pw);\n"
         // The outputs whose windows hold the element: oy·sh <= ny <= oy·sh + kh - 1.
         "  let oy0 = u32(max(0, ny - i32(q.kh) + i32(q.sh)) / i32(q.sh));\n"
         "  let ox0 = u32(max(0, nx - i32(q.kw) + i32(q.sw)) / i32(q.sw));\n"
         "  let oy1 = min(q.OH, u32(ny) / q.sh + 1u);\n  let ox1 = min(q.OW, u32(nx) / q.sw + 1u);\n"
         "  var s = 0.0;\n"
         "  for (var oy = oy0; oy < oy1; oy = oy + 1u) {\n"
         "    for (var ox = ox0; ox < ox1; ox = ox + 1u) {\n"
         "      let o = ((plane * q.OH + oy) * q.OW + ox) * q.L + lane;\n" +
         (max ? "      if (at[2u * o] == k && at[2u * o + 1u] == 0u) { s = s + gy[o]; }\n"
              : "      s = s + gy[o];\n") +
         "    }\n  }\n" + (max ? "  gx[i] = s;\n" : "  gx[i] = s / f32(q.kh * q.kw);\n") + "}\n";
}

Uniforms poolWords(int64_t n, const Conv2dGeometry& g, int64_t lanes) {
  Uniforms u;
  u.u(static_cast<uint64_t>(n));
  for (int64_t v : {g.height, g.width, g.kh, g.kw, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.out_h, g.out_w, lanes})
    u.u(static_cast<uint64_t>(v));
  return u;
}

Extents withPlane(const Extents& shape, int64_t h, int64_t w, size_t trailing) {
  Extents s = shape;
  s[s.size() - 2 - trailing] = h;
  s[s.size() - 1 - trailing] = w;
  return s;
}

}  // namespace

Kernels::Pooled pool2d(ExecContext& ctx, Kernels::Pool kind, const RawTensor& x_in, const Conv2dGeometry& g,
                       size_t trailing, bool argmax) {
  const RawTensor x = rowsOf(ctx, x_in, "pool2d");
  const bool max = kind == Kernels::Pool::max;
  const Extents shape = withPlane(x.shape(), g.out_h, g.out_w, trailing);
  Kernels::Pooled r{RawTensor::empty(ctx, x.tags(), shape), RawTensor()};
  if (max && argmax) r.argmax = RawTensor::empty(ctx, x.tags(), shape, DType::i64);
  const int64_t lanes = numelOf(shape, shape.size() - trailing, shape.size());
  Uniforms u = poolWords(r.y.numel(), g, lanes);
  u.u(r.argmax.valid() ? 1 : 0);
  // Max without argmax writes a word of its own: two writable bindings of one buffer are invalid.
  const RawTensor at = !max || r.argmax.valid() ? r.argmax : RawTensor::empty(ctx, {}, {}, DType::i32);
  std::vector<uint32_t> buffers{bufferOf(x, "pool2d"), bufferOf(r.y, "pool2d")};
  if (max) buffers.push_back(bufferOf(at, "pool2d"));
  dispatchLinear(Gpu::get().pipeline(forwardSource(max)), buffers, u, r.y.numel());
  return r;
}

RawTensor pool2dVjp(ExecContext& ctx, Kernels::Pool kind, const RawTensor& gy_in, const RawTensor& argmax,
                    const Conv2dGeometry& g, size_t trailing) {
  const RawTensor gy = rowsOf(ctx, gy_in, "pool2d VJP");  // argmax: made by pool2d, whole
  const bool max = kind == Kernels::Pool::max;
  const Extents shape = withPlane(gy.shape(), g.height, g.width, trailing);
  RawTensor gx = RawTensor::empty(ctx, gy.tags(), shape);
  const int64_t lanes = numelOf(shape, shape.size() - trailing, shape.size());
  std::vector<uint32_t> buffers{bufferOf(gy, "pool2d VJP")};
  if (max) buffers.push_back(bufferOf(argmax, "pool2d VJP"));
  buffers.push_back(bufferOf(gx, "pool2d VJP"));
  dispatchLinear(Gpu::get().pipeline(vjpSource(max)), buffers, poolWords(gx.numel(), g, lanes), gx.numel());
  return gx;
}

}  // namespace fucina::backend::webgpu
