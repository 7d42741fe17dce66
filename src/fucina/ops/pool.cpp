// Pooling and upsampling over two named spatial axes. Every op copies its input into a layout
// [other axes..., h, w], pooling into [other axes..., h, w, axes after both] when some come after
// both (channels last, Note [Channels last]), with no copy when it already is; computes with the
// backend's plane-wise primitives (pool2d, upsample2x and their VJPs) and returns a view in the
// input's axis order; VJPs return gradients in that layout and let the engine permute them back
// (as the axis-last row-wise ops do).
#include <algorithm>
#include <string>

#include "fucina/backend/kernels.h"
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

struct PoolSetup {
  Tags order;            // internal layout: other axes, then h, w, then the axes after both
  size_t trailing = 0;   // the axes after h and w (channels last: Note [Channels last])
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
  // The other axes before h or w lead (their product is the planes); those after both trail.
  const size_t last = std::max(a.axis(h), a.axis(w));
  Tags trailing;
  int64_t planes = 1;
  for (size_t i = 0; i < a.rank(); ++i) {
    const Tag t = a.tags()[i];
    if (t == h || t == w) continue;
    if (i > last) {
      trailing.push_back(t);
    } else {
      s.order.push_back(t);
      planes *= a.shape()[i];
    }
  }
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
  s.order.insert(s.order.end(), trailing.begin(), trailing.end());
  s.trailing = trailing.size();
  s.g = Conv2dGeometry{planes, H, W, kh, kw, sh, sw, pad, pad, 1, 1, oh, ow};
  s.x = a.permuted(s.order).contiguous(ctx);
  return s;
}

// pool2d of `kind` and its VJP: y in the input's axis order; max saves its argmax for the VJP
// only when there will be one.
Tensor pool(ExecContext& ctx, std::string_view op, backend::Kernels::Pool kind, const Tensor& t, int64_t kernel_h,
            int64_t kernel_w, int64_t stride_h, int64_t stride_w, int64_t pad, Tag h, Tag w) {
  using Pool = backend::Kernels::Pool;
  const PoolSetup s = poolSetup(ctx, op, t, kernel_h, kernel_w, stride_h, stride_w, pad, h, w);
  const bool records = isGradEnabled() && ops::anyRequiresGrad({&t});
  backend::Kernels::Pooled r =
      backend::kernelsOf(ctx).pool2d(ctx, kind, s.x, s.g, s.trailing, kind == Pool::max && records);
  const size_t work = static_cast<size_t>(r.y.numel() * kernel_h * kernel_w);
  return ops::finishOp(ctx, op, r.y.permuted(t.value().tags()), {&t}, [&] {
    return [kind, g = s.g, trailing = s.trailing, argmax = r.argmax, order = s.order](ExecContext& c, const RawTensor& gy,
                                                                                       NeedsGrad, Grads out) {
      out[0] = backend::kernelsOf(c).pool2dVjp(c, kind, gy.permuted(order).contiguous(c), argmax, g, trailing);
    };
  }, work);
}

}  // namespace

// ---------------------------------------------------------------- pooling

Tensor Tensor::maxPool2d(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                         int64_t pad, Tag h, Tag w) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "maxPool2d", {this}, [&](std::span<const Tensor> f) { return f[0].maxPool2d(ctx, kernel_h, kernel_w, stride_h, stride_w, pad, h, w); });
  return pool(ctx, "maxPool2d", backend::Kernels::Pool::max, *this, kernel_h, kernel_w, stride_h, stride_w, pad, h, w);
}

Tensor Tensor::avgPool2d(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                         int64_t pad, Tag h, Tag w) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "avgPool2d", {this}, [&](std::span<const Tensor> f) { return f[0].avgPool2d(ctx, kernel_h, kernel_w, stride_h, stride_w, pad, h, w); });
  return pool(ctx, "avgPool2d", backend::Kernels::Pool::avg, *this, kernel_h, kernel_w, stride_h, stride_w, pad, h, w);
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
  const RawTensor y = backend::kernelsOf(ctx).upsample2x(ctx, a.permuted(order).contiguous(ctx));
  return ops::finishOp(ctx, op, y.permuted(a.tags()), {this}, [&] {
    return [order](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads out) {
      out[0] = backend::kernelsOf(c).upsample2xVjp(c, gy.permuted(order).contiguous(c));
    };
  }, static_cast<size_t>(y.numel()));
}

}  // namespace fucina
