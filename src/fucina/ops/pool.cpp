// Pooling and upsampling over two named spatial axes. Every op copies its input into a layout
// [other axes..., h, w] (no copy when it already is), runs plane-wise kernels (backend/cpu/conv.h) and
// returns a view in the input's axis order; VJPs return gradients in that layout and let the
// engine permute them back (as the axis-last row-wise ops do).
#include <algorithm>
#include <string>

#include "fucina/core/storage.h"
#include "fucina/backend/cpu/conv.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/spatial.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using kernels::Conv2dGeometry;
using ops::Grads;
using ops::NeedsGrad;
using namespace ops::spatial;

namespace {

using ops::spatial::forPlaneChunks;  // overloaded below for a geometry's planes

// The same over g's planes, with body(sub-geometry of those planes, first plane).
template <class Body>
void forPlaneChunks(ExecContext& ctx, const Conv2dGeometry& g, const Body& body) {
  forPlaneChunks(ctx, g.channels, g.height * g.width, [&](int64_t first, int64_t count) {
    Conv2dGeometry sub = g;
    sub.channels = count;
    body(sub, first);
  });
}

// A pooling VJP's input gradient: body(sub-geometry, first plane, that plane's gradient) adds
// into planes its chunk has just zeroed, while they are in cache.
template <class Body>
RawTensor poolGradient(ExecContext& c, const Conv2dGeometry& g, const Tags& order, const Extents& x_shape,
                       const Body& body) {
  RawTensor gx = RawTensor::empty(c, order, x_shape);
  const int64_t in_plane = g.height * g.width;
  forPlaneChunks(c, g, [&](const Conv2dGeometry& sub, int64_t p) {
    float* gxp = gx.f32() + p * in_plane;
    std::fill(gxp, gxp + sub.channels * in_plane, 0.0f);
    body(sub, p, gxp);
  });
  return gx;
}

struct PoolSetup {
  Tags order;            // internal layout: other axes, then h, w
  Extents out_shape;     // in that layout
  Conv2dGeometry g;      // channels = number of planes
  RawTensor x;           // the input in the internal layout, contiguous
};

PoolSetup poolSetup(ExecContext& ctx, std::string_view op, const Tensor& t, int64_t kh, int64_t kw,
                    int64_t sh, int64_t sw, int64_t pad, Tag h, Tag w) {
  const RawTensor& a = t.value();
  requireDistinct(op, {h, w});
  requireAxes(op, "input", a, {h, w});
  requirePositive(op, "kernel_h", kh);
  requirePositive(op, "kernel_w", kw);
  requirePositive(op, "stride_h", sh);
  requirePositive(op, "stride_w", sw);
  requirePositive(op, "pad", pad, 0);
  if (pad > kh / 2 || pad > kw / 2)  // not 2 * pad: a pad near INT64_MAX would wrap
    fail(ErrorCode::InvalidArgument, std::string(op) + ": pad " + num(pad) + " must be at most half the kernel " +
                                         num(kh) + "x" + num(kw));
  PoolSetup s;
  int64_t planes = 0;
  s.order = otherAxes(a, {h, w}, &s.out_shape, &planes);
  const int64_t H = a.extent(h), W = a.extent(w);
  // With pad <= kernel / 2 alone a kernel could be any size (a window of 2^40 x 2^40 taps); a
  // pad within the input bounds it by 3x the input.
  if (pad > H || pad > W)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": pad " + num(pad) + " must be at most the input's " + quoted(h) +
                                         "=" + num(H) + " and " + quoted(w) + "=" + num(W));
  const int64_t oh = kernels::convOutExtent(H, kh, sh, pad, 1);
  const int64_t ow = kernels::convOutExtent(W, kw, sw, pad, 1);
  if (oh < 1 || ow < 1)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": kernel " + num(kh) + "x" + num(kw) + " is larger than the padded input " +
                                       quoted(h) + "=" + num(H) + "+2*" + num(pad) + ", " + quoted(w) + "=" + num(W) + "+2*" + num(pad));
  s.order.push_back(h);
  s.order.push_back(w);
  s.out_shape.push_back(oh);
  s.out_shape.push_back(ow);
  s.g = Conv2dGeometry{planes, H, W, kh, kw, sh, sw, pad, pad, 1, 1, oh, ow};
  s.x = a.permuted(s.order).contiguous(ctx);
  return s;
}

}  // namespace

// ---------------------------------------------------------------- pooling

Tensor Tensor::maxPool2d(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                         int64_t pad, Tag h, Tag w) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "maxPool2d", {this}, [&](std::span<const Tensor> f) { return f[0].maxPool2d(ctx, kernel_h, kernel_w, stride_h, stride_w, pad, h, w); });
  PoolSetup s = poolSetup(ctx, "maxPool2d", *this, kernel_h, kernel_w, stride_h, stride_w, pad, h, w);
  RawTensor y = RawTensor::empty(ctx, s.order, s.out_shape);
  // The windows' maxima are saved for the VJP only when there will be one.
  const bool records = isGradEnabled() && ops::anyRequiresGrad({this});
  const Scratch<int64_t> argmax(ctx.account(), records ? static_cast<size_t>(y.numel()) : 0);
  const int64_t in_plane = s.g.height * s.g.width, out_plane = s.g.out_h * s.g.out_w;
  forPlaneChunks(ctx, s.g, [&](const Conv2dGeometry& sub, int64_t p) {
    kernels::maxPool2dPlanes(sub, s.x.f32() + p * in_plane, y.f32() + p * out_plane,
                             records ? argmax.data() + p * out_plane : nullptr);
  });
  return ops::finishOp(ctx, "maxPool2d", y.permuted(value().tags()), {this}, [&] {
    return [g = s.g, argmax, order = s.order, x_shape = s.x.shape()](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads out) {
      const RawTensor gyc = gy.permuted(order).contiguous(c);
      const int64_t out_plane = g.out_h * g.out_w;
      out[0] = poolGradient(c, g, order, x_shape, [&](const Conv2dGeometry& sub, int64_t p, float* gxp) {
        kernels::maxPool2dBackward(sub, gyc.f32() + p * out_plane, argmax.data() + p * out_plane, gxp);
      });
    };
  }, static_cast<size_t>(y.numel() * kernel_h * kernel_w));
}

Tensor Tensor::avgPool2d(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                         int64_t pad, Tag h, Tag w) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "avgPool2d", {this}, [&](std::span<const Tensor> f) { return f[0].avgPool2d(ctx, kernel_h, kernel_w, stride_h, stride_w, pad, h, w); });
  PoolSetup s = poolSetup(ctx, "avgPool2d", *this, kernel_h, kernel_w, stride_h, stride_w, pad, h, w);
  RawTensor y = RawTensor::empty(ctx, s.order, s.out_shape);
  const int64_t in_plane = s.g.height * s.g.width, out_plane = s.g.out_h * s.g.out_w;
  forPlaneChunks(ctx, s.g, [&](const Conv2dGeometry& sub, int64_t p) {
    kernels::avgPool2dPlanes(sub, s.x.f32() + p * in_plane, y.f32() + p * out_plane);
  });
  return ops::finishOp(ctx, "avgPool2d", y.permuted(value().tags()), {this}, [&] {
    return [g = s.g, order = s.order, x_shape = s.x.shape()](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads out) {
      const RawTensor gyc = gy.permuted(order).contiguous(c);
      const int64_t out_plane = g.out_h * g.out_w;
      out[0] = poolGradient(c, g, order, x_shape, [&](const Conv2dGeometry& sub, int64_t p, float* gxp) {
        kernels::avgPool2dBackward(sub, gyc.f32() + p * out_plane, gxp);
      });
    };
  }, static_cast<size_t>(y.numel() * kernel_h * kernel_w));
}

Tensor Tensor::upsample2xNearest(ExecContext& ctx, Tag h, Tag w) const {
  constexpr std::string_view op = "upsample2xNearest";
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, op, {this}, [&](std::span<const Tensor> f) { return f[0].upsample2xNearest(ctx, h, w); });
  const RawTensor& a = value();
  requireDistinct(op, {h, w});
  requireAxes(op, "input", a, {h, w});
  Extents shape;
  int64_t planes = 0;
  Tags order = otherAxes(a, {h, w}, &shape, &planes);
  order.push_back(h);
  order.push_back(w);
  const int64_t H = a.extent(h), W = a.extent(w);
  const RawTensor x = a.permuted(order).contiguous(ctx);
  Extents out_shape = shape;
  out_shape.insert(out_shape.end(), {2 * H, 2 * W});
  RawTensor y = RawTensor::empty(ctx, order, out_shape);
  forPlaneChunks(ctx, planes, 4 * H * W, [&](int64_t p, int64_t count) {
    kernels::upsample2xPlanes(count, H, W, x.f32() + p * H * W, y.f32() + p * 4 * H * W);
  });
  return ops::finishOp(ctx, op, y.permuted(a.tags()), {this}, [&] {
    return [planes, H, W, order, x_shape = x.shape()](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads out) {
      const RawTensor gyc = gy.permuted(order).contiguous(c);
      RawTensor gx = RawTensor::empty(c, order, x_shape);
      forPlaneChunks(c, planes, 4 * H * W, [&](int64_t p, int64_t count) {
        kernels::upsample2xBackward(count, H, W, gyc.f32() + p * 4 * H * W, gx.f32() + p * H * W);
      });
      out[0] = std::move(gx);
    };
  }, static_cast<size_t>(y.numel()));
}

}  // namespace fucina
