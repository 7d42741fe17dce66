// Convolution and pooling over two named spatial axes. Every op copies its input into a layout
// [other axes..., (channels,) h, w] (no copy when it already is), runs plane-wise kernels
// (kernels/conv.h) and returns a view in the input's axis order; VJPs return gradients in the
// internal layout and let the engine permute them back (as the axis-last row-wise ops do).
// conv2d lowers to GEMM through im2col: per image and group, y_g = W_g · cols_g.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "fucina/exec/claims.h"
#include "fucina/kernels/conv.h"
#include "fucina/kernels/gemm.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using kernels::Conv2dGeometry;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// Scratch buffers (im2col columns, transposes) go through the context's allocator like every
// other buffer, so ctx.memory() sees them.
RawTensor scratch(ExecContext& ctx, int64_t n) { return RawTensor::empty(ctx, {"scratch"}, {n}); }

// Images are independent, so conv2d's per-image loops run in chunks on the pool (claimed
// owner-first, Note [Owner-first claims]), each chunk with its own im2col buffer and
// single-threaded GEMMs. The chunking depends on the image count only, never on the thread
// count, so per-chunk partial sums (the weight gradient) add up in one fixed order and results
// are bit-identical on any number of threads, whichever thread runs a chunk. One image keeps
// the threaded GEMM.
constexpr int64_t kImageChunks = 8;

int64_t imageChunks(int64_t images) { return std::min(images, kImageChunks); }

// body(chunk, image, cols, serial) for every image; `serial`: call GEMMs single-threaded.
template <class Body>
void forEachImage(ExecContext& ctx, int64_t images, int64_t cols_floats, const Body& body) {
  const int64_t chunks = imageChunks(images);
  auto run = [&](int64_t chunk) {
    RawTensor cols = scratch(ctx, cols_floats);
    for (int64_t n = chunk * images / chunks; n < (chunk + 1) * images / chunks; ++n)
      body(chunk, n, cols.f32(), chunks > 1);
  };
  if (chunks == 1) return run(0);
  claimedFor(ctx, chunks, chunks, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) run(chunk);
  });
}

void convGemm(ExecContext& ctx, bool serial, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
              const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  if (serial) kernels::gemmSerial(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  else kernels::gemm(ctx, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

std::string num(int64_t v) { return std::to_string(v); }

void requireDistinct(std::string_view op, std::initializer_list<Tag> tags) {
  for (auto i = tags.begin(); i != tags.end(); ++i)
    for (auto j = i + 1; j != tags.end(); ++j)
      if (*i == *j)
        fail(ErrorCode::InvalidArgument, std::string(op) + ": axis " + quoted(*i) + " is named twice in the options");
}

void requireAxes(std::string_view op, const char* what, const RawTensor& a, std::initializer_list<Tag> tags) {
  for (Tag t : tags)
    if (!hasTag(a.tags(), t)) {
      std::string names;
      for (Tag u : tags) names += (names.empty() ? "" : ", ") + quoted(u);
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": the " + what + " needs axes " + names +
                                         ", got " + a.describe());
    }
}

void requirePositive(std::string_view op, const char* what, int64_t v, int64_t min = 1) {
  if (v < min)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": " + what + " must be >= " + num(min) + ", got " + num(v));
}

// Axes of a other than `spatial`, in a's order, and the product of their extents.
Tags otherAxes(const RawTensor& a, std::initializer_list<Tag> spatial, Extents* shape, int64_t* count) {
  Tags out;
  *count = 1;
  for (size_t i = 0; i < a.rank(); ++i) {
    bool skip = false;
    for (Tag t : spatial) skip = skip || a.tags()[i] == t;
    if (skip) continue;
    out.push_back(a.tags()[i]);
    shape->push_back(a.shape()[i]);
    *count *= a.shape()[i];
  }
  return out;
}

// ---------------------------------------------------------------- pooling setup

// Runs body(first plane, plane count) over chunks of `planes` planes of `plane_size` elements on
// the pool. Planes are independent, so the split never changes a result.
template <class Body>
void forPlaneChunks(ExecContext& ctx, int64_t planes, int64_t plane_size, const Body& body) {
  // Empty planes: nothing to do, however many (2^42 planes of an h=0 input hung in ops_fuzz).
  if (plane_size == 0) return;
  const int64_t grain = std::max<int64_t>(1, (int64_t{16} << 10) / std::max<int64_t>(1, plane_size));
  ctx.parallelFor(planes, grain, [&](int64_t begin, int64_t end) { body(begin, end - begin); });
}
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

// ---------------------------------------------------------------- conv2d

Tensor Tensor::conv2d(ExecContext& ctx, const Tensor& weight, const Conv2dOptions& o) const {
  constexpr std::string_view op = "conv2d";
  if (!ops::allF32({this, &weight}))
    return ops::viaF32(ctx, op, {this, &weight}, [&](std::span<const Tensor> f) { return f[0].conv2d(ctx, f[1], o); });
  const RawTensor& a = value();
  const RawTensor& wv = weight.value();
  requireDistinct(op, {o.channels, o.height, o.width, o.out_channels, o.kernel_h, o.kernel_w});
  requireAxes(op, "input", a, {o.channels, o.height, o.width});
  if (hasTag(a.tags(), o.out_channels))
    fail(ErrorCode::ShapeMismatch, "conv2d: the input " + a.describe() + " already has the output axis " + quoted(o.out_channels));
  if (wv.rank() != 4 || !hasTag(wv.tags(), o.out_channels) || !hasTag(wv.tags(), o.channels) ||
      !hasTag(wv.tags(), o.kernel_h) || !hasTag(wv.tags(), o.kernel_w))
    fail(ErrorCode::ShapeMismatch, "conv2d: the weight needs exactly the axes " + quoted(o.out_channels) + ", " +
                                       quoted(o.channels) + ", " + quoted(o.kernel_h) + ", " + quoted(o.kernel_w) + ", got " + wv.describe());
  requirePositive(op, "stride_h", o.stride_h);
  requirePositive(op, "stride_w", o.stride_w);
  requirePositive(op, "dilation_h", o.dilation_h);
  requirePositive(op, "dilation_w", o.dilation_w);
  requirePositive(op, "pad_h", o.pad_h, 0);
  requirePositive(op, "pad_w", o.pad_w, 0);
  requirePositive(op, "groups", o.groups);
  const int64_t G = o.groups;
  const int64_t C = a.extent(o.channels), H = a.extent(o.height), W = a.extent(o.width);
  const int64_t OC = wv.extent(o.out_channels), KH = wv.extent(o.kernel_h), KW = wv.extent(o.kernel_w);
  if (C % G != 0 || OC % G != 0)
    fail(ErrorCode::InvalidArgument, "conv2d: groups=" + num(G) + " must divide the input's " + quoted(o.channels) + "=" +
                                         num(C) + " and the weight's " + quoted(o.out_channels) + "=" + num(OC));
  if (wv.extent(o.channels) != C / G)
    fail(ErrorCode::ShapeMismatch, "conv2d: the weight's " + quoted(o.channels) + " must be the input's " + num(C) + " / groups " +
                                       num(G) + " = " + num(C / G) + ", got weight " + wv.describe() + " and input " + a.describe());
  requirePositive(op, "the kernel's height", KH);
  requirePositive(op, "the kernel's width", KW);
  const int64_t OH = kernels::convOutExtent(H, KH, o.stride_h, o.pad_h, o.dilation_h);
  const int64_t OW = kernels::convOutExtent(W, KW, o.stride_w, o.pad_w, o.dilation_w);
  if (OH < 1 || OW < 1)
    fail(ErrorCode::ShapeMismatch,
         "conv2d: the kernel " + quoted(o.kernel_h) + "=" + num(KH) + " (dilation " + num(o.dilation_h) + "), " + quoted(o.kernel_w) +
             "=" + num(KW) + " (dilation " + num(o.dilation_w) + ") is larger than the padded input " + quoted(o.height) + "=" +
             num(H) + "+2*" + num(o.pad_h) + ", " + quoted(o.width) + "=" + num(W) + "+2*" + num(o.pad_w));

  Extents batch_shape;
  int64_t N = 0;
  const Tags batch = otherAxes(a, {o.channels, o.height, o.width}, &batch_shape, &N);
  const RawTensor x = a.permuted(joinTags({batch, {o.channels, o.height, o.width}})).contiguous(ctx);
  const RawTensor w = wv.permuted({o.out_channels, o.channels, o.kernel_h, o.kernel_w}).contiguous(ctx);
  const Tags out_order = joinTags({batch, {o.out_channels, o.height, o.width}});
  Extents out_shape = batch_shape;
  out_shape.insert(out_shape.end(), {OC, OH, OW});
  RawTensor y = RawTensor::empty(ctx, out_order, out_shape);

  // OH and OW grow with the pads: every product below is checked (Note [Extent products fit]).
  // The input's extents and the weight's multiply too.
  const int64_t P = checkedMul(OH, OW, op), CgK = checkedMul(C / G, KH * KW, op), OCg = OC / G;
  const int64_t cols_floats = checkedMul(checkedMul(C, KH * KW, op), P, op);
  const auto work = static_cast<size_t>(checkedMul(checkedMul(checkedMul(2 * N, OC, op), P, op), CgK, op));
  const Conv2dGeometry g{C, H, W, KH, KW, o.stride_h, o.stride_w, o.pad_h, o.pad_w, o.dilation_h, o.dilation_w, OH, OW};
  // An empty result (no output channels, say) computes nothing, however many images.
  if (y.numel() > 0) {
    const float* px = x.f32();
    const float* pw = w.f32();
    float* py = y.f32();
    forEachImage(ctx, N, cols_floats, [&](int64_t, int64_t n, float* cols, bool serial) {
      kernels::im2col(g, px + n * C * H * W, cols);
      for (int64_t gi = 0; gi < G; ++gi)
        convGemm(ctx, serial, false, false, OCg, P, CgK, pw + gi * OCg * CgK, CgK, cols + gi * CgK * P, P,
                 py + (n * OC + gi * OCg) * P, P, false);
    });
  }
  Tags result_order = a.tags();
  for (Tag& t : result_order)
    if (t == o.channels) t = o.out_channels;
  return ops::finishOp(ctx, op, y.permuted(result_order), {this, &weight}, [&] {
    // gx = col2im(W_gᵀ · gy_g) per image; gW_g = Σ_n gy_g · cols_gᵀ. Each reads the other operand.
    return [x = weight.requiresGrad() ? x : RawTensor(), w = requiresGrad() ? w : RawTensor(), g, N, G, P, CgK, OCg,
            out_order, x_tags = joinTags({batch, {o.channels, o.height, o.width}}),
            x_shape = [&] { Extents s = batch_shape; s.insert(s.end(), {C, H, W}); return s; }(),
            w_tags = Tags{o.out_channels, o.channels, o.kernel_h, o.kernel_w},
            w_shape = Extents{OC, C / G, KH, KW}](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads out) {
      const RawTensor gyc = gy.permuted(out_order).contiguous(c);
      if (gyc.numel() == 0) {  // as in the forward: zeros, without a loop over the images
        if (needs[0]) out[0] = RawTensor::zeros(c, x_tags, x_shape);
        if (needs[1]) out[1] = RawTensor::zeros(c, w_tags, w_shape);
        return;
      }
      const float* pg = gyc.f32();
      const int64_t C = g.channels, OC = OCg * G, HW = g.height * g.width;
      if (needs[0]) {
        // Each image's gradient is zeroed by the chunk that adds into it, while it is in cache.
        RawTensor gx = RawTensor::empty(c, x_tags, x_shape);
        forEachImage(c, N, C * g.kh * g.kw * P, [&](int64_t, int64_t n, float* dcols, bool serial) {
          for (int64_t gi = 0; gi < G; ++gi)  // W_g is [OCg, CgK]: read transposed in place
            convGemm(c, serial, true, false, CgK, P, OCg, w.f32() + gi * OCg * CgK, CgK,
                     pg + (n * OC + gi * OCg) * P, P, dcols + gi * CgK * P, P, false);
          float* gxn = gx.f32() + n * C * HW;
          std::fill(gxn, gxn + C * HW, 0.0f);
          kernels::col2imAdd(g, dcols, gxn);
        });
        out[0] = std::move(gx);
      }
      if (needs[1]) {
        // One partial gradient per image chunk, summed in chunk order afterwards.
        const int64_t chunks = imageChunks(N), size = OC * CgK;
        RawTensor partial = chunks == 1 ? RawTensor() : RawTensor::zeros(c, {"chunk", "w"}, {chunks, size});
        RawTensor gw = RawTensor::zeros(c, w_tags, w_shape);
        forEachImage(c, N, C * g.kh * g.kw * P, [&](int64_t chunk, int64_t n, float* cols, bool serial) {
          float* acc = chunks == 1 ? gw.f32() : partial.f32() + chunk * size;
          kernels::im2col(g, x.f32() + n * C * HW, cols);
          for (int64_t gi = 0; gi < G; ++gi)  // cols_g is [CgK, P]: read transposed in place
            convGemm(c, serial, false, true, OCg, CgK, P, pg + (n * OC + gi * OCg) * P, P, cols + gi * CgK * P, P,
                     acc + gi * OCg * CgK, CgK, true);
        });
        for (int64_t chunk = 0; chunks > 1 && chunk < chunks; ++chunk) {
          float* dst = gw.f32();
          const float* src = partial.f32() + chunk * size;
          for (int64_t i = 0; i < size; ++i) dst[i] += src[i];
        }
        out[1] = std::move(gw);
      }
    };
  }, work);
}

Tensor Tensor::conv2d(ExecContext& ctx, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) const {
  if (ops::composeViaF32({this, &weight, &bias}))
    return ops::viaF32(ctx, "conv2d", {this, &weight, &bias},
                       [&](std::span<const Tensor> f) { return f[0].conv2d(ctx, f[1], f[2], o); });
  Tensor y = conv2d(ctx, weight, o);
  const RawTensor& b = bias.value();
  if (b.rank() != 1 || !(b.tags()[0] == o.out_channels) || b.shape()[0] != weight.extent(o.out_channels))
    fail(ErrorCode::ShapeMismatch, "conv2d: the bias must have the single axis " + quoted(o.out_channels) + "=" +
                                       num(weight.extent(o.out_channels)) + ", got " + b.describe());
  return y.add(ctx, bias);
}

// ---------------------------------------------------------------- pooling

Tensor Tensor::maxPool2d(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, int64_t stride_h, int64_t stride_w,
                         int64_t pad, Tag h, Tag w) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "maxPool2d", {this}, [&](std::span<const Tensor> f) { return f[0].maxPool2d(ctx, kernel_h, kernel_w, stride_h, stride_w, pad, h, w); });
  PoolSetup s = poolSetup(ctx, "maxPool2d", *this, kernel_h, kernel_w, stride_h, stride_w, pad, h, w);
  RawTensor y = RawTensor::empty(ctx, s.order, s.out_shape);
  const Scratch<int64_t> argmax(ctx.account(), static_cast<size_t>(y.numel()));  // saved for the VJP
  const int64_t in_plane = s.g.height * s.g.width, out_plane = s.g.out_h * s.g.out_w;
  forPlaneChunks(ctx, s.g, [&](const Conv2dGeometry& sub, int64_t p) {
    kernels::maxPool2dPlanes(sub, s.x.f32() + p * in_plane, y.f32() + p * out_plane, argmax.data() + p * out_plane);
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
