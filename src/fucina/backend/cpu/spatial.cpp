#include "fucina/backend/cpu/spatial.h"

#include <algorithm>

#include "fucina/backend/cpu/conv.h"
#include "fucina/backend/cpu/planes.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

namespace {

// forPlaneChunks over g's planes of `plane` elements, with body(sub-geometry of those planes,
// first plane).
template <class Body>
void forGeometryChunks(ExecContext& ctx, const Conv2dGeometry& g, int64_t plane, const Body& body) {
  forPlaneChunks(ctx, g.channels, plane, [&](int64_t first, int64_t count) {
    Conv2dGeometry sub = g;
    sub.channels = count;
    body(sub, first);
  });
}

// A pooling VJP's input gradient: body(sub-geometry, first plane, that plane's gradient) adds
// into planes its chunk has just zeroed, while they are in cache.
template <class Body>
RawTensor poolGradient(ExecContext& c, const Conv2dGeometry& g, int64_t lanes, const Tags& order, const Extents& x_shape,
                       const Body& body) {
  RawTensor gx = RawTensor::empty(c, order, x_shape);
  const int64_t in_plane = g.height * g.width * lanes;
  forGeometryChunks(c, g, in_plane, [&](const Conv2dGeometry& sub, int64_t p) {
    float* gxp = gx.f32() + p * in_plane;
    std::fill(gxp, gxp + sub.channels * in_plane, 0.0f);
    body(sub, p, gxp);
  });
  return gx;
}

// t's extents with the plane's two (followed by `trailing` axes) replaced.
Extents withPlane(const RawTensor& t, int64_t h, int64_t w, size_t trailing = 0) {
  Extents shape = t.shape();
  shape.end()[-2 - static_cast<std::ptrdiff_t>(trailing)] = h;
  shape.end()[-1 - static_cast<std::ptrdiff_t>(trailing)] = w;
  return shape;
}

// The product of the last `trailing` extents: the lanes interleaved in each plane.
int64_t trailingCount(const Extents& shape, size_t trailing) {
  int64_t n = 1;
  for (size_t i = shape.size() - trailing; i < shape.size(); ++i) n *= shape[i];
  return n;
}

// The product of shape's extents but the last `trailing` (the images before a plane's axes).
int64_t leading(const Extents& shape, size_t trailing) {
  int64_t n = 1;
  for (size_t i = 0; i + trailing < shape.size(); ++i) n *= shape[i];
  return n;
}

// x as [outer, C, inner] rows of `inner` elements around its `channel` axis.
struct ChannelRows {
  int64_t outer = 1, C, inner = 1;
};
ChannelRows channelRows(const RawTensor& a, Tag channel) {
  const size_t axis = a.axis(channel);
  ChannelRows r{.C = a.shape()[axis]};
  for (size_t i = 0; i < axis; ++i) r.outer *= a.shape()[i];
  for (size_t i = axis + 1; i < a.rank(); ++i) r.inner *= a.shape()[i];
  return r;
}

}  // namespace

// Images are independent: the same bits on any number of threads.
RawTensor im2colImages(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                       const Extents& shape) {
  RawTensor cols = RawTensor::empty(ctx, tags, shape);
  const int64_t in = g.channels * g.height * g.width, out = shape.end()[-2] * shape.back();
  forPlaneChunks(ctx, leading(shape, 2), out, [&](int64_t first, int64_t count) {
    for (int64_t n = first; n < first + count; ++n) im2col(g, images.f32() + n * in, cols.f32() + n * out);
  });
  return cols;
}
RawTensor col2imImages(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                       const Extents& shape) {
  RawTensor images = RawTensor::zeros(ctx, tags, shape);
  const int64_t in = g.channels * g.height * g.width, out = cols.shape().end()[-2] * cols.shape().back();
  forPlaneChunks(ctx, leading(shape, 3), in, [&](int64_t first, int64_t count) {
    for (int64_t n = first; n < first + count; ++n) col2imAdd(g, cols.f32() + n * out, images.f32() + n * in);
  });
  return images;
}

backend::Kernels::Pooled pool2d(ExecContext& ctx, Pool kind, const RawTensor& x, const Conv2dGeometry& g, size_t trailing,
                                bool argmax) {
  const Extents out_shape = withPlane(x, g.out_h, g.out_w, trailing);
  backend::Kernels::Pooled r{RawTensor::empty(ctx, x.tags(), out_shape), RawTensor()};
  if (kind == Pool::max && argmax) r.argmax = RawTensor::empty(ctx, x.tags(), out_shape, DType::i64);
  const int64_t lanes = trailingCount(x.shape(), trailing);
  const int64_t in_plane = g.height * g.width * lanes, out_plane = g.out_h * g.out_w * lanes;
  forGeometryChunks(ctx, g, in_plane, [&](const Conv2dGeometry& sub, int64_t p) {
    if (kind == Pool::avg) return avgPool2dPlanes(sub, lanes, x.f32() + p * in_plane, r.y.f32() + p * out_plane);
    maxPool2dPlanes(sub, lanes, x.f32() + p * in_plane, r.y.f32() + p * out_plane,
                    r.argmax.valid() ? r.argmax.data<int64_t>() + p * out_plane : nullptr);
  });
  return r;
}

RawTensor pool2dVjp(ExecContext& ctx, Pool kind, const RawTensor& gy, const RawTensor& argmax, const Conv2dGeometry& g,
                    size_t trailing) {
  const int64_t lanes = trailingCount(gy.shape(), trailing), out_plane = g.out_h * g.out_w * lanes;
  return poolGradient(ctx, g, lanes, gy.tags(), withPlane(gy, g.height, g.width, trailing),
                      [&](const Conv2dGeometry& sub, int64_t p, float* gxp) {
    if (kind == Pool::avg) return avgPool2dBackward(sub, lanes, gy.f32() + p * out_plane, gxp);
    maxPool2dBackward(sub, lanes, gy.f32() + p * out_plane, argmax.data<int64_t>() + p * out_plane, gxp);
  });
}

RawTensor upsample2x(ExecContext& ctx, const RawTensor& x) {
  const int64_t H = x.shape().end()[-2], W = x.shape().back();
  RawTensor y = RawTensor::empty(ctx, x.tags(), withPlane(x, 2 * H, 2 * W));
  forPlaneChunks(ctx, leading(x.shape(), 2), 4 * H * W, [&](int64_t p, int64_t count) {
    upsample2xPlanes(count, H, W, x.f32() + p * H * W, y.f32() + p * 4 * H * W);
  });
  return y;
}

RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy) {
  const int64_t H = gy.shape().end()[-2] / 2, W = gy.shape().back() / 2;
  RawTensor gx = RawTensor::empty(ctx, gy.tags(), withPlane(gy, H, W));
  forPlaneChunks(ctx, leading(gy.shape(), 2), 4 * H * W, [&](int64_t p, int64_t count) {
    upsample2xBackward(count, H, W, gy.f32() + p * 4 * H * W, gx.f32() + p * H * W);
  });
  return gx;
}

RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                        Tag channel) {
  // Plain locals, not a structured binding: Emscripten's clang cannot capture those in lambdas.
  const ChannelRows rows = channelRows(x, channel);
  const int64_t outer = rows.outer, C = rows.C, inner = rows.inner;
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  forPlaneChunks(ctx, outer * C, inner, [&](int64_t first, int64_t count) {
    for (int64_t r = first; r < first + count; ++r) {
      const float s = scale.f32()[r % C], b = shift.f32()[r % C];
      const float* xr = x.f32() + r * inner;
      float* yr = y.f32() + r * inner;
      for (int64_t i = 0; i < inner; ++i) yr[i] = xr[i] * s + b;
    }
  });
  return y;
}

backend::Kernels::AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale,
                                               const RawTensor& g, Tag channel, bool input, bool params) {
  const ChannelRows rows = channelRows(g, channel);
  const int64_t outer = rows.outer, C = rows.C, inner = rows.inner;
  backend::Kernels::AffineGrads out;
  if (input) {
    RawTensor gx = RawTensor::empty(ctx, g.tags(), g.shape());
    forPlaneChunks(ctx, outer * C, inner, [&](int64_t first, int64_t count) {
      for (int64_t r = first; r < first + count; ++r) {
        const float s = scale.f32()[r % C];
        for (int64_t i = 0; i < inner; ++i) gx.f32()[r * inner + i] = g.f32()[r * inner + i] * s;
      }
    });
    out.x = std::move(gx);
  }
  if (!params) return out;
  // Per channel, sums over its rows in a fixed order: the same bits on any number of threads.
  RawTensor gs = RawTensor::empty(ctx, {channel}, {C}), gb = RawTensor::empty(ctx, {channel}, {C});
  ctx.parallelFor(C, std::max<int64_t>(1, (int64_t{16} << 10) / std::max<int64_t>(1, outer * inner)), [&](int64_t begin, int64_t end) {
    for (int64_t ch = begin; ch < end; ++ch) {
      double s = 0, b = 0;
      for (int64_t o = 0; o < outer; ++o) {
        const float* gr = g.f32() + (o * C + ch) * inner;
        const float* xr = x.valid() ? x.f32() + (o * C + ch) * inner : nullptr;
        for (int64_t i = 0; i < inner; ++i) {
          b += gr[i];
          if (xr != nullptr) s += double(gr[i]) * xr[i];
        }
      }
      gs.f32()[ch] = static_cast<float>(s);
      gb.f32()[ch] = static_cast<float>(b);
    }
  });
  out.scale = std::move(gs);
  out.shift = std::move(gb);
  return out;
}

}  // namespace fucina::kernels
