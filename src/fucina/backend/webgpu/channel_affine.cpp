// The channel affine y = x·scale[c] + shift[c] and its VJP as strided maps, scale and shift
// viewed along x's channel axis; the parameters' gradients sum the products over the other axes
// (in f32, in a tree: the host's sums are f64).
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// A {C} parameter as a view along x's channel axis.
RawTensor alongChannel(const RawTensor& p, Tag channel) {
  requireF32(p, "channelAffine");
  return p.withTags({channel});
}

Tags othersThan(const RawTensor& x, Tag channel) {
  Tags others;
  for (Tag t : x.tags())
    if (t != channel) others.push_back(t);
  return others;
}

}  // namespace

RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                        Tag channel) {
  const RawTensor s = alongChannel(scale, channel), t = alongChannel(shift, channel);
  const RawTensor* ins[3] = {&x, &s, &t};
  return mapExpr(ctx, x.tags(), x.shape(), ins, {"a", "s", "t"}, "a * s + t", {});
}

Kernels::AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale,
                                      const RawTensor& gy, Tag channel, bool input, bool params) {
  Kernels::AffineGrads out;
  const RawTensor s = alongChannel(scale, channel);
  if (input) {
    const RawTensor* ins[2] = {&gy, &s};
    out.x = mapExpr(ctx, x.tags(), x.shape(), ins, {"g", "s"}, "g * s", {});
  }
  if (params) {
    const RawTensor* ins[2] = {&gy, &x};
    const RawTensor prod = mapExpr(ctx, x.tags(), x.shape(), ins, {"g", "a"}, "g * a", {});
    const Tags others = othersThan(x, channel);
    out.scale = sumAxes(ctx, prod, others).withTags(scale.tags());
    out.shift = sumAxes(ctx, gy.permuted(x.tags()), others).withTags(scale.tags());
  }
  return out;
}

}  // namespace fucina::backend::webgpu
