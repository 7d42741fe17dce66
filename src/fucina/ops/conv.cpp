// Convolutions over named axes: conv2d, conv1d and its causal forms, convTranspose1d and
// conv2dRelu on one im2col + GEMM core (Note [Convolution core]), unfold/fold (im2col/col2im
// themselves) and channelAffine. Every op copies its input into a layout [other axes...,
// channels, spatial...] (no copy when it already is) and returns a view in the input's axis
// order; VJPs return gradients in that layout and let the engine permute them back (as the
// axis-last row-wise ops do). Pooling lives in ops/pool.cpp.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fucina/exec/claims.h"
#include "fucina/backend/cpu/conv.h"
#include "fucina/ops/conv_core.h"
#include "fucina/backend/cpu/gemm.h"
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

// ---------------------------------------------------------------- the convolution core

// Note [Convolution core]: every GEMM convolution runs on three loops over N images [C, H, W]
// (a 1-D image has height 1) that share one geometry, with W [OC, C/G · kh·kw] per group g and
// P = out_h·out_w output positions:
//   convForward     y_g = W_g · im2col(x)_g              y [N, OC, P]
//   convInputGrad   x̄   = col2im(W_gᵀ · ȳ_g)             the adjoint of convForward in x
//   convWeightGrad  W̄_g = Σ_n ȳ_g · im2col(x)_gᵀ         its adjoint in W
// A convolution's VJP is the other two. A transposed convolution is the adjoint of a convolution:
// its forward is convInputGrad, its input gradient convForward, and its weight gradient
// convWeightGrad with the roles of input and output swapped. A 1-D depthwise convolution (groups
// = channels = output channels) runs the same three as row loops (kernels::depthwiseConv1dRow...)
// instead of im2col and one-row GEMMs, each row on one thread, so its results do not depend on
// the thread count either.
struct ConvPlan {
  Conv2dGeometry g;  // one image
  int64_t N, G, OC;  // images, groups, output channels
  bool depthwise() const {
    return g.height == 1 && g.kh == 1 && g.out_h == 1 && G == g.channels && OC == g.channels;
  }
  int64_t positions() const { return g.out_h * g.out_w; }
  int64_t groupDepth() const { return g.channels / G * g.kh * g.kw; }  // columns of W_g
  int64_t colsFloats() const { return g.channels * g.kh * g.kw * positions(); }
  int64_t imageFloats() const { return g.channels * g.height * g.width; }
};

// y = conv(x, w); with a bias (per output channel) and/or relu, applied to each image while it is
// in cache (conv2dRelu's fused inference path).
void convForward(ExecContext& ctx, const ConvPlan& p, const float* x, const float* w, float* y,
                 const float* bias = nullptr, bool relu = false) {
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G;
  auto epilogue = [&](float* row, int64_t o) {
    const float b = bias != nullptr ? bias[o] : 0.0f;
    for (int64_t i = 0; i < P; ++i) row[i] = relu ? std::max(row[i] + b, 0.0f) : row[i] + b;
  };
  const bool plain = bias == nullptr && !relu;
  if (p.depthwise()) {
    const int64_t W = p.g.width, K = p.g.kw;
    forPlaneChunks(ctx, p.N * p.OC, W + P, [&](int64_t first, int64_t count) {
      for (int64_t r = first; r < first + count; ++r) {
        kernels::depthwiseConv1dRow(p.g, x + r * W, w + r % p.OC * K, y + r * P);
        if (!plain) epilogue(y + r * P, r % p.OC);
      }
    });
    return;
  }
  forEachImage(ctx, p.N, p.colsFloats(), [&](int64_t, int64_t n, float* cols, bool serial) {
    kernels::im2col(p.g, x + n * p.imageFloats(), cols);
    float* yn = y + n * p.OC * P;
    for (int64_t gi = 0; gi < p.G; ++gi)
      convGemm(ctx, serial, false, false, OCg, P, CgK, w + gi * OCg * CgK, CgK, cols + gi * CgK * P, P,
               yn + gi * OCg * P, P, false);
    for (int64_t o = 0; o < p.OC && !plain; ++o) epilogue(yn + o * P, o);
  });
}

// gx = col2im(W_gᵀ · gy_g), each image zeroed by the chunk that adds into it, while it is in cache.
void convInputGrad(ExecContext& ctx, const ConvPlan& p, const float* gy, const float* w, float* gx) {
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G;
  if (p.depthwise()) {
    const int64_t W = p.g.width, K = p.g.kw;
    forPlaneChunks(ctx, p.N * p.OC, W + P, [&](int64_t first, int64_t count) {
      std::fill(gx + first * W, gx + (first + count) * W, 0.0f);
      for (int64_t r = first; r < first + count; ++r)
        kernels::depthwiseConv1dRowInputGrad(p.g, gy + r * P, w + r % p.OC * K, gx + r * W);
    });
    return;
  }
  forEachImage(ctx, p.N, p.colsFloats(), [&](int64_t, int64_t n, float* dcols, bool serial) {
    for (int64_t gi = 0; gi < p.G; ++gi)  // W_g is [OCg, CgK]: read transposed in place
      convGemm(ctx, serial, true, false, CgK, P, OCg, w + gi * OCg * CgK, CgK, gy + (n * p.OC + gi * OCg) * P, P,
               dcols + gi * CgK * P, P, false);
    float* gxn = gx + n * p.imageFloats();
    std::fill(gxn, gxn + p.imageFloats(), 0.0f);
    kernels::col2imAdd(p.g, dcols, gxn);
  });
}

// gw (every element written) = Σ_n gy_g · im2col(x)_gᵀ: one partial sum per image chunk, added
// in chunk order afterwards (the chunking above forEachImage: the same bits on any thread count).
void convWeightGrad(ExecContext& ctx, const ConvPlan& p, const float* x, const float* gy, float* gw) {
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G;
  const int64_t chunks = imageChunks(p.N), size = p.OC * CgK;
  std::fill(gw, gw + size, 0.0f);
  if (p.depthwise()) {  // per channel, the images in order
    const int64_t W = p.g.width, K = p.g.kw, C = p.OC;
    forPlaneChunks(ctx, C, p.N * (W + P), [&](int64_t first, int64_t count) {
      for (int64_t c = first; c < first + count; ++c)
        for (int64_t n = 0; n < p.N; ++n)
          kernels::depthwiseConv1dRowWeightGrad(p.g, x + (n * C + c) * W, gy + (n * C + c) * P, gw + c * K);
    });
    return;
  }
  RawTensor partial = chunks <= 1 ? RawTensor() : RawTensor::zeros(ctx, {"chunk", "w"}, {chunks, size});
  forEachImage(ctx, p.N, p.colsFloats(), [&](int64_t chunk, int64_t n, float* cols, bool serial) {
    float* acc = chunks == 1 ? gw : partial.f32() + chunk * size;
    kernels::im2col(p.g, x + n * p.imageFloats(), cols);
    for (int64_t gi = 0; gi < p.G; ++gi)  // cols_g is [CgK, P]: read transposed in place
      convGemm(ctx, serial, false, true, OCg, CgK, P, gy + (n * p.OC + gi * OCg) * P, P, cols + gi * CgK * P, P,
               acc + gi * OCg * CgK, CgK, true);
  });
  for (int64_t chunk = 0; chunks > 1 && chunk < chunks; ++chunk) {
    const float* src = partial.f32() + chunk * size;
    for (int64_t i = 0; i < size; ++i) gw[i] += src[i];
  }
}

// ---------------------------------------------------------------- convolutions by named axes

// One convolution as a public op names it. The 1-D ops leave height and kernel_h unset: their
// images have height 1 and their kernels one row.
struct ConvSpec {
  std::string_view op;
  Tag channels, out_channels, width, kernel_w;
  std::optional<Tag> height = std::nullopt, kernel_h = std::nullopt;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1, groups = 1;
  bool transposed = false;     // weight {channels, out_channels / groups, kernel...}, as torch's
  int64_t output_padding = 0;  // transposed only
  bool causal = false;         // pad_w = (kernel - 1)·dilation on the left only: output length = input length
};

ConvSpec specOf(const Conv2dOptions& o, std::string_view op) {
  return {.op = op, .channels = o.channels, .out_channels = o.out_channels, .width = o.width, .kernel_w = o.kernel_w,
          .height = o.height, .kernel_h = o.kernel_h, .stride_h = o.stride_h, .stride_w = o.stride_w, .pad_h = o.pad_h,
          .pad_w = o.pad_w, .dilation_h = o.dilation_h, .dilation_w = o.dilation_w, .groups = o.groups};
}
ConvSpec specOf(const Conv1dOptions& o) {
  return {.op = "conv1d", .channels = o.channels, .out_channels = o.out_channels, .width = o.length, .kernel_w = o.kernel,
          .stride_w = o.stride, .pad_w = o.padding, .dilation_w = o.dilation, .groups = o.groups};
}
ConvSpec specOf(const ConvTranspose1dOptions& o) {
  return {.op = "convTranspose1d", .channels = o.channels, .out_channels = o.out_channels, .width = o.length,
          .kernel_w = o.kernel, .stride_w = o.stride, .pad_w = o.padding, .dilation_w = o.dilation, .groups = o.groups,
          .transposed = true, .output_padding = o.output_padding};
}
ConvSpec causalSpec(std::string_view op, const Conv1dAxes& a, int64_t groups, int64_t dilation) {
  return {.op = op, .channels = a.channels, .out_channels = a.out_channels, .width = a.length, .kernel_w = a.kernel,
          .dilation_w = dilation, .groups = groups, .causal = true};
}
// groups = x's channels; a missing channel axis is reported by the convolution (groups 1 then).
ConvSpec depthwiseSpec(const Tensor& x, const Conv1dAxes& a) {
  const int64_t groups = hasTag(x.tags(), a.channels) ? std::max<int64_t>(1, x.extent(a.channels)) : 1;
  return causalSpec("causalDepthwiseConv1d", a, groups, 1);
}

// The convolution s describes, validated (ShapeMismatch for axes and extents, InvalidArgument for
// the geometry's numbers). `bias`/`relu` fuse an epilogue into the forward: only for results that
// record no VJP (conv2dRelu's inference path).
Tensor convolve(ExecContext& ctx, const Tensor& input, const Tensor& weight, const ConvSpec& s,
                const float* bias = nullptr, bool relu = false) {
  const std::string op(s.op);
  const RawTensor& a = input.value();
  const RawTensor& wv = weight.value();
  const bool two_d = s.height.has_value();
  const Tags spatial = two_d ? Tags{*s.height, s.width} : Tags{s.width};
  const Tags kernel = two_d ? Tags{*s.kernel_h, s.kernel_w} : Tags{s.kernel_w};
  const Tags x_axes = joinTags({{s.channels}, spatial});
  requireDistinct(op, joinTags({{s.channels, s.out_channels}, spatial, kernel}));
  requireAxes(op, "input", a, x_axes);
  if (hasTag(a.tags(), s.out_channels))
    fail(ErrorCode::ShapeMismatch, op + ": the input " + a.describe() + " already has the output axis " + quoted(s.out_channels));
  const Tags w_order = joinTags({s.transposed ? Tags{s.channels, s.out_channels} : Tags{s.out_channels, s.channels}, kernel});
  bool weight_ok = wv.rank() == w_order.size();
  for (Tag t : w_order) weight_ok = weight_ok && hasTag(wv.tags(), t);
  if (!weight_ok)
    fail(ErrorCode::ShapeMismatch, op + ": the weight needs exactly the axes " + listed(w_order) + ", got " + wv.describe());
  if (two_d) {
    requirePositive(op, "stride_h", s.stride_h);
    requirePositive(op, "dilation_h", s.dilation_h);
    requirePositive(op, "pad_h", s.pad_h, 0);
  }
  requirePositive(op, two_d ? "stride_w" : "stride", s.stride_w);
  requirePositive(op, two_d ? "dilation_w" : "dilation", s.dilation_w);
  requirePositive(op, two_d ? "pad_w" : "padding", s.pad_w, 0);
  requirePositive(op, "groups", s.groups);
  requirePositive(op, "output_padding", s.output_padding, 0);
  if (s.transposed && s.output_padding >= std::max(s.stride_w, s.dilation_w))
    fail(ErrorCode::InvalidArgument, op + ": output_padding " + num(s.output_padding) + " must be smaller than the stride " +
                                         num(s.stride_w) + " or the dilation " + num(s.dilation_w));

  // The core's view (Note [Convolution core]): images of C channels, W [OC, C / G, kernel].
  const int64_t G = s.groups, Cx = a.extent(s.channels);
  const int64_t W_out = wv.extent(s.out_channels), W_in = wv.extent(s.channels);
  const int64_t C = s.transposed ? W_out * G : Cx, OC = s.transposed ? Cx : W_out;
  if (Cx % G != 0 || (!s.transposed && OC % G != 0))
    fail(ErrorCode::InvalidArgument, op + ": groups=" + num(G) + " must divide the input's " + quoted(s.channels) + "=" + num(Cx) +
                                         (s.transposed ? "" : " and the weight's " + quoted(s.out_channels) + "=" + num(OC)));
  if (W_in != (s.transposed ? Cx : Cx / G))
    fail(ErrorCode::ShapeMismatch, op + ": the weight's " + quoted(s.channels) + " must be the input's " + num(Cx) +
                                       (s.transposed ? "" : " / groups " + num(G) + " = " + num(Cx / G)) + ", got weight " +
                                       wv.describe() + " and input " + a.describe());
  const int64_t KH = two_d ? wv.extent(*s.kernel_h) : 1, KW = wv.extent(s.kernel_w);
  if (two_d) requirePositive(op, "the kernel's height", KH);
  requirePositive(op, two_d ? "the kernel's width" : "the kernel's length", KW);
  const int64_t H = two_d ? a.extent(*s.height) : 1, Lx = a.extent(s.width);
  const int64_t pad_w = s.causal ? checkedMul(KW - 1, s.dilation_w, op) : s.pad_w;

  // The image side (input of a convolution, output of a transposed one) and the output positions.
  int64_t OH = 1, W = Lx, OW = 0;
  if (s.transposed) {
    // (L - 1)·stride - 2·padding + dilation·(K - 1) + output_padding + 1, as torch.
    const std::string what = op + " output length";
    W = checkedAdd(checkedAdd(checkedMul(Lx - 1, s.stride_w, what), checkedMul(s.dilation_w, KW - 1, what), what),
                   s.output_padding + 1 - checkedMul(2, pad_w, what), what);
    OW = Lx;
    if (W < 1)
      fail(ErrorCode::ShapeMismatch, op + ": the output length (" + quoted(s.width) + "=" + num(Lx) + " - 1)*" + num(s.stride_w) +
                                         " - 2*" + num(pad_w) + " + " + num(s.dilation_w) + "*(" + num(KW) + " - 1) + " +
                                         num(s.output_padding) + " + 1 = " + num(W) + " is below 1");
  } else {
    OH = two_d ? kernels::convOutExtent(H, KH, s.stride_h, s.pad_h, s.dilation_h) : 1;
    OW = s.causal ? Lx : kernels::convOutExtent(Lx, KW, s.stride_w, pad_w, s.dilation_w);
    if (OH < 1 || (OW < 1 && !s.causal)) {
      std::string msg = op + ": the kernel ";
      if (two_d) msg += quoted(*s.kernel_h) + "=" + num(KH) + " (dilation " + num(s.dilation_h) + "), ";
      msg += quoted(s.kernel_w) + "=" + num(KW) + " (dilation " + num(s.dilation_w) + ") is larger than the padded input ";
      if (two_d) msg += quoted(*s.height) + "=" + num(H) + "+2*" + num(s.pad_h) + ", ";
      fail(ErrorCode::ShapeMismatch, msg + quoted(s.width) + "=" + num(Lx) + "+2*" + num(pad_w));
    }
  }
  const Conv2dGeometry g{C, H, W, KH, KW, s.stride_h, s.stride_w, s.pad_h, pad_w, s.dilation_h, s.dilation_w, OH, OW};

  Extents batch_shape;
  int64_t N = 0;
  const Tags batch = otherAxes(a, x_axes, &batch_shape, &N);
  const ConvPlan plan{g, N, G, OC};
  // OH and OW grow with the pads: every product below is checked (Note [Extent products fit]).
  const int64_t P = checkedMul(OH, OW, op), CgK = checkedMul(C / G, KH * KW, op);
  checkedMul(checkedMul(C, KH * KW, op), P, op);  // im2col's columns
  const auto work = static_cast<size_t>(checkedMul(checkedMul(checkedMul(2 * N, OC, op), P, op), CgK, op));
  // The input [batch..., channels, spatial...] and the result [batch..., out_channels, spatial...]:
  // the core's images and outputs, or for a transposed convolution its outputs and images.
  const Tags x_tags = joinTags({batch, {s.channels}, spatial}), y_tags = joinTags({batch, {s.out_channels}, spatial});
  Extents x_shape = batch_shape, y_shape = batch_shape;
  x_shape.push_back(Cx);
  y_shape.push_back(s.transposed ? C : OC);
  if (two_d) {
    x_shape.insert(x_shape.end(), {H, Lx});
    y_shape.insert(y_shape.end(), {OH, OW});
  } else {
    x_shape.push_back(Lx);
    y_shape.push_back(s.transposed ? W : OW);
  }
  const RawTensor x = a.permuted(x_tags).contiguous(ctx);
  const RawTensor w = wv.permuted(w_order).contiguous(ctx);
  RawTensor y = RawTensor::empty(ctx, y_tags, y_shape);
  if (y.numel() > 0) {  // an empty result (no output channels, say) computes nothing, however many images
    if (s.transposed) convInputGrad(ctx, plan, x.f32(), w.f32(), y.f32());
    else convForward(ctx, plan, x.f32(), w.f32(), y.f32(), bias, relu);
  }
  Tags result_order = a.tags();
  for (Tag& t : result_order)
    if (t == s.channels) t = s.out_channels;
  return ops::finishOp(ctx, s.op, y.permuted(result_order), {&input, &weight}, [&] {
    // Each gradient reads the other operand.
    return [x = weight.requiresGrad() ? x : RawTensor(), w = input.requiresGrad() ? w : RawTensor(), plan,
            transposed = s.transposed, x_tags, x_shape, y_tags, w_order,
            w_shape = w.shape()](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads out) {
      const RawTensor gyc = gy.permuted(y_tags).contiguous(c);
      if (gyc.numel() == 0) {  // as in the forward: zeros, without a loop over the images
        if (needs[0]) out[0] = RawTensor::zeros(c, x_tags, x_shape);
        if (needs[1]) out[1] = RawTensor::zeros(c, w_order, w_shape);
        return;
      }
      if (needs[0]) {  // every element written
        RawTensor gx = RawTensor::empty(c, x_tags, x_shape);
        if (transposed) convForward(c, plan, gyc.f32(), w.f32(), gx.f32());
        else convInputGrad(c, plan, gyc.f32(), w.f32(), gx.f32());
        out[0] = std::move(gx);
      }
      if (needs[1]) {
        RawTensor gw = RawTensor::empty(c, w_order, w_shape);
        if (transposed) convWeightGrad(c, plan, gyc.f32(), x.f32(), gw.f32());
        else convWeightGrad(c, plan, x.f32(), gyc.f32(), gw.f32());
        out[1] = std::move(gw);
      }
    };
  }, work);
}

// A convolution's bias: exactly the axis {out_channels} with the result's extent there.
void checkBias(std::string_view op, const Tensor& bias, Tag out_channels, int64_t extent) {
  const RawTensor& b = bias.value();
  if (b.rank() != 1 || !(b.tags()[0] == out_channels) || b.shape()[0] != extent)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the bias must have the single axis " + quoted(out_channels) + "=" +
                                       num(extent) + ", got " + b.describe());
}

// convolve under Note [Dtype rules], plus a bias composed with add (so its gradient is the sum).
Tensor runConv(ExecContext& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, const ConvSpec& s) {
  if (bias == nullptr) {
    if (!ops::allF32({&x, &w}))
      return ops::viaF32(ctx, s.op, {&x, &w}, [&](std::span<const Tensor> f) { return convolve(ctx, f[0], f[1], s); });
    return convolve(ctx, x, w, s);
  }
  if (ops::composeViaF32({&x, &w, bias}))
    return ops::viaF32(ctx, s.op, {&x, &w, bias}, [&](std::span<const Tensor> f) { return runConv(ctx, f[0], f[1], &f[2], s); });
  Tensor y = runConv(ctx, x, w, nullptr, s);
  checkBias(s.op, *bias, s.out_channels, y.extent(s.out_channels));
  return y.add(ctx, *bias);
}

// relu(conv2d), fused into the forward unless it records a VJP (then conv2d and relu, composed).
Tensor fusedConv2dRelu(ExecContext& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dOptions& o) {
  constexpr std::string_view op = "conv2dRelu";
  if (isGradEnabled() && (x.requiresGrad() || w.requiresGrad() || (bias != nullptr && bias->requiresGrad())))
    return runConv(ctx, x, w, bias, specOf(o, "conv2d")).relu(ctx);
  if (bias != nullptr ? !ops::allF32({&x, &w, bias}) : !ops::allF32({&x, &w})) {
    auto body = [&](std::span<const Tensor> f) { return fusedConv2dRelu(ctx, f[0], f[1], bias != nullptr ? &f[2] : nullptr, o); };
    return bias != nullptr ? ops::viaF32(ctx, op, {&x, &w, bias}, body) : ops::viaF32(ctx, op, {&x, &w}, body);
  }
  RawTensor b;
  if (bias != nullptr) {
    if (hasTag(w.tags(), o.out_channels)) checkBias(op, *bias, o.out_channels, w.extent(o.out_channels));
    b = bias->value().contiguous(ctx);
  }
  return convolve(ctx, x, w, specOf(o, op), bias != nullptr ? b.f32() : nullptr, true);
}

}  // namespace

Tensor ops::conv2dForward(ExecContext& ctx, const Tensor& x, const Tensor& w, const Conv2dOptions& options,
                          std::string_view op, const float* bias, bool relu) {
  return convolve(ctx, x, w, specOf(options, op), bias, relu);
}

// ---------------------------------------------------------------- convolutions

Tensor Tensor::conv2d(ExecContext& ctx, const Tensor& weight, const Conv2dOptions& o) const {
  return runConv(ctx, *this, weight, nullptr, specOf(o, "conv2d"));
}
Tensor Tensor::conv2d(ExecContext& ctx, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) const {
  return runConv(ctx, *this, weight, &bias, specOf(o, "conv2d"));
}
Tensor Tensor::conv2dRelu(ExecContext& ctx, const Tensor& weight, const Conv2dOptions& o) const {
  return fusedConv2dRelu(ctx, *this, weight, nullptr, o);
}
Tensor Tensor::conv2dRelu(ExecContext& ctx, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) const {
  return fusedConv2dRelu(ctx, *this, weight, &bias, o);
}
Tensor Tensor::conv1d(ExecContext& ctx, const Tensor& weight, const Conv1dOptions& o) const {
  return runConv(ctx, *this, weight, nullptr, specOf(o));
}
Tensor Tensor::conv1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias, const Conv1dOptions& o) const {
  return runConv(ctx, *this, weight, &bias, specOf(o));
}
Tensor Tensor::convTranspose1d(ExecContext& ctx, const Tensor& weight, const ConvTranspose1dOptions& o) const {
  return runConv(ctx, *this, weight, nullptr, specOf(o));
}
Tensor Tensor::convTranspose1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias,
                               const ConvTranspose1dOptions& o) const {
  return runConv(ctx, *this, weight, &bias, specOf(o));
}
Tensor Tensor::causalConv1d(ExecContext& ctx, const Tensor& weight, int64_t dilation, const Conv1dAxes& axes) const {
  return runConv(ctx, *this, weight, nullptr, causalSpec("causalConv1d", axes, 1, dilation));
}
Tensor Tensor::causalConv1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias, int64_t dilation,
                            const Conv1dAxes& axes) const {
  return runConv(ctx, *this, weight, &bias, causalSpec("causalConv1d", axes, 1, dilation));
}
Tensor Tensor::groupedCausalConv1d(ExecContext& ctx, const Tensor& weight, int64_t groups, int64_t dilation,
                                   const Conv1dAxes& axes) const {
  return runConv(ctx, *this, weight, nullptr, causalSpec("groupedCausalConv1d", axes, groups, dilation));
}
Tensor Tensor::groupedCausalConv1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias, int64_t groups,
                                   int64_t dilation, const Conv1dAxes& axes) const {
  return runConv(ctx, *this, weight, &bias, causalSpec("groupedCausalConv1d", axes, groups, dilation));
}
Tensor Tensor::causalDepthwiseConv1d(ExecContext& ctx, const Tensor& weight, const Conv1dAxes& axes) const {
  return runConv(ctx, *this, weight, nullptr, depthwiseSpec(*this, axes));
}
Tensor Tensor::causalDepthwiseConv1d(ExecContext& ctx, const Tensor& weight, const Tensor& bias,
                                     const Conv1dAxes& axes) const {
  return runConv(ctx, *this, weight, &bias, depthwiseSpec(*this, axes));
}

// ---------------------------------------------------------------- unfold and fold

namespace {

// unfold's and fold's two sides: images [batch..., c, h, w] and columns [batch..., patch, positions].
struct FoldSetup {
  Conv2dGeometry g;
  int64_t images = 0;
  Tags image_tags, cols_tags;
  Extents image_shape, cols_shape;
};

// `a` is the side that exists (images for unfold, columns for fold); C, H, W describe the images.
FoldSetup foldSetup(std::string_view op, const RawTensor& a, const Tags& own, const Tags& made, int64_t C, int64_t H,
                    int64_t W, int64_t kh, int64_t kw, const UnfoldOptions& o) {
  FoldSetup s;
  Extents batch_shape;
  const Tags batch = otherAxes(a, own, &batch_shape, &s.images);
  for (Tag t : made)
    if (hasTag(a.tags(), t))
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": the input " + a.describe() + " already has the result's axis " + quoted(t));
  const int64_t oh = kernels::convOutExtent(H, kh, o.stride_h, o.pad_h, o.dilation_h);
  const int64_t ow = kernels::convOutExtent(W, kw, o.stride_w, o.pad_w, o.dilation_w);
  if (oh < 1 || ow < 1)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the kernel " + num(kh) + "x" + num(kw) + " (dilation " + num(o.dilation_h) +
                                       "x" + num(o.dilation_w) + ") is larger than the padded image " + quoted(o.height) + "=" +
                                       num(H) + "+2*" + num(o.pad_h) + ", " + quoted(o.width) + "=" + num(W) + "+2*" + num(o.pad_w));
  s.g = Conv2dGeometry{C, H, W, kh, kw, o.stride_h, o.stride_w, o.pad_h, o.pad_w, o.dilation_h, o.dilation_w, oh, ow};
  s.image_tags = joinTags({batch, {o.channels, o.height, o.width}});
  s.cols_tags = joinTags({batch, {o.patch, o.positions}});
  s.image_shape = s.cols_shape = batch_shape;
  s.image_shape.insert(s.image_shape.end(), {C, H, W});
  s.cols_shape.insert(s.cols_shape.end(), {checkedMul(C, kh * kw, op), checkedMul(oh, ow, op)});
  return s;
}

void checkFoldOptions(std::string_view op, int64_t kh, int64_t kw, const UnfoldOptions& o) {
  requireDistinct(op, {o.channels, o.height, o.width, o.patch, o.positions});
  requirePositive(op, "kernel_h", kh);
  requirePositive(op, "kernel_w", kw);
  requirePositive(op, "stride_h", o.stride_h);
  requirePositive(op, "stride_w", o.stride_w);
  requirePositive(op, "dilation_h", o.dilation_h);
  requirePositive(op, "dilation_w", o.dilation_w);
  requirePositive(op, "pad_h", o.pad_h, 0);
  requirePositive(op, "pad_w", o.pad_w, 0);
}

// im2col of every image (contiguous, s.image_tags order) and its adjoint, col2im of every columns
// block. Images are independent: the same bits on any number of threads.
RawTensor unfoldImages(ExecContext& ctx, const FoldSetup& s, const RawTensor& images) {
  RawTensor cols = RawTensor::empty(ctx, s.cols_tags, s.cols_shape);
  const int64_t in = s.g.channels * s.g.height * s.g.width, out = s.cols_shape.end()[-2] * s.cols_shape.back();
  forPlaneChunks(ctx, s.images, out, [&](int64_t first, int64_t count) {
    for (int64_t n = first; n < first + count; ++n) kernels::im2col(s.g, images.f32() + n * in, cols.f32() + n * out);
  });
  return cols;
}
RawTensor foldColumns(ExecContext& ctx, const FoldSetup& s, const RawTensor& cols) {
  RawTensor images = RawTensor::zeros(ctx, s.image_tags, s.image_shape);
  const int64_t in = s.g.channels * s.g.height * s.g.width, out = s.cols_shape.end()[-2] * s.cols_shape.back();
  forPlaneChunks(ctx, s.images, in, [&](int64_t first, int64_t count) {
    for (int64_t n = first; n < first + count; ++n) kernels::col2imAdd(s.g, cols.f32() + n * out, images.f32() + n * in);
  });
  return images;
}

}  // namespace

Tensor Tensor::unfold(ExecContext& ctx, int64_t kernel_h, int64_t kernel_w, const UnfoldOptions& o) const {
  constexpr std::string_view op = "unfold";
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, op, {this}, [&](std::span<const Tensor> f) { return f[0].unfold(ctx, kernel_h, kernel_w, o); });
  const RawTensor& a = value();
  checkFoldOptions(op, kernel_h, kernel_w, o);
  requireAxes(op, "input", a, {o.channels, o.height, o.width});
  const FoldSetup s = foldSetup(op, a, {o.channels, o.height, o.width}, {o.patch, o.positions}, a.extent(o.channels),
                                a.extent(o.height), a.extent(o.width), kernel_h, kernel_w, o);
  RawTensor cols = unfoldImages(ctx, s, a.permuted(s.image_tags).contiguous(ctx));
  const size_t work = static_cast<size_t>(cols.numel());
  return ops::finishOp(ctx, op, std::move(cols), {this}, [&] {
    return [s](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads out) {
      out[0] = foldColumns(c, s, gy.permuted(s.cols_tags).contiguous(c));
    };
  }, work);
}

Tensor Tensor::fold(ExecContext& ctx, int64_t out_h, int64_t out_w, int64_t kernel_h, int64_t kernel_w,
                    const UnfoldOptions& o) const {
  constexpr std::string_view op = "fold";
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, op, {this}, [&](std::span<const Tensor> f) { return f[0].fold(ctx, out_h, out_w, kernel_h, kernel_w, o); });
  const RawTensor& a = value();
  checkFoldOptions(op, kernel_h, kernel_w, o);
  requirePositive(op, "out_h", out_h, 0);
  requirePositive(op, "out_w", out_w, 0);
  requireAxes(op, "input", a, {o.patch, o.positions});
  const int64_t patch = a.extent(o.patch), taps = checkedMul(kernel_h, kernel_w, op);
  if (patch % taps != 0)
    fail(ErrorCode::ShapeMismatch, "fold: the input's " + quoted(o.patch) + "=" + num(patch) + " must be a multiple of the kernel's " +
                                       num(kernel_h) + "x" + num(kernel_w) + " taps");
  const FoldSetup s = foldSetup(op, a, {o.patch, o.positions}, {o.channels, o.height, o.width}, patch / taps, out_h, out_w,
                                kernel_h, kernel_w, o);
  if (a.extent(o.positions) != s.cols_shape.back())
    fail(ErrorCode::ShapeMismatch, "fold: the input's " + quoted(o.positions) + "=" + num(a.extent(o.positions)) + " must be the " +
                                       num(s.g.out_h) + "x" + num(s.g.out_w) + " = " + num(s.cols_shape.back()) +
                                       " kernel positions in the " + num(out_h) + "x" + num(out_w) + " output");
  RawTensor images = foldColumns(ctx, s, a.permuted(s.cols_tags).contiguous(ctx));
  return ops::finishOp(ctx, op, std::move(images), {this}, [&] {
    return [s](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads out) {
      out[0] = unfoldImages(c, s, gy.permuted(s.image_tags).contiguous(c));
    };
  }, static_cast<size_t>(a.numel()));
}

// ---------------------------------------------------------------- channelAffine

Tensor Tensor::channelAffine(ExecContext& ctx, const Tensor& scale, const Tensor& shift, Tag channel_axis) const {
  constexpr std::string_view op = "channelAffine";
  if (!ops::allF32({this, &scale, &shift}))
    return ops::viaF32(ctx, op, {this, &scale, &shift},
                       [&](std::span<const Tensor> f) { return f[0].channelAffine(ctx, f[1], f[2], channel_axis); });
  const RawTensor& a = value();
  requireAxes(op, "input", a, {channel_axis});
  const int64_t C = a.extent(channel_axis);
  for (const Tensor* t : {&scale, &shift}) {
    const RawTensor& v = t->value();
    if (v.rank() != 1 || !(v.tags()[0] == channel_axis) || v.shape()[0] != C)
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": the " + (t == &scale ? "scale" : "shift") + " must have the single axis " +
                                         quoted(channel_axis) + "=" + num(C) + ", got " + v.describe());
  }
  // x as [outer, C, inner] rows of `inner` elements, in its own axis order.
  const size_t axis = a.axis(channel_axis);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= a.shape()[i];
  for (size_t i = axis + 1; i < a.rank(); ++i) inner *= a.shape()[i];
  const RawTensor x = a.contiguous(ctx);
  const RawTensor sc = scale.value().contiguous(ctx), sh = shift.value().contiguous(ctx);
  RawTensor y = RawTensor::empty(ctx, a.tags(), a.shape());
  forPlaneChunks(ctx, outer * C, inner, [&](int64_t first, int64_t count) {
    for (int64_t r = first; r < first + count; ++r) {
      const float s = sc.f32()[r % C], b = sh.f32()[r % C];
      const float* xr = x.f32() + r * inner;
      float* yr = y.f32() + r * inner;
      for (int64_t i = 0; i < inner; ++i) yr[i] = xr[i] * s + b;
    }
  });
  return ops::finishOp(ctx, op, std::move(y), {this, &scale, &shift}, [&] {
    return [x = scale.requiresGrad() ? x : RawTensor(), sc = requiresGrad() ? sc : RawTensor(), outer, C, inner,
            tags = a.tags(), channel_axis](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads out) {
      const RawTensor g = gy.permuted(tags).contiguous(c);
      if (needs[0]) {
        RawTensor gx = RawTensor::empty(c, g.tags(), g.shape());
        forPlaneChunks(c, outer * C, inner, [&](int64_t first, int64_t count) {
          for (int64_t r = first; r < first + count; ++r) {
            const float s = sc.f32()[r % C];
            for (int64_t i = 0; i < inner; ++i) gx.f32()[r * inner + i] = g.f32()[r * inner + i] * s;
          }
        });
        out[0] = std::move(gx);
      }
      if (!needs[1] && !needs[2]) return;
      // Per channel, sums over its rows in a fixed order: the same bits on any number of threads.
      RawTensor gs = RawTensor::empty(c, {channel_axis}, {C}), gb = RawTensor::empty(c, {channel_axis}, {C});
      c.parallelFor(C, std::max<int64_t>(1, (int64_t{16} << 10) / std::max<int64_t>(1, outer * inner)), [&](int64_t begin, int64_t end) {
        for (int64_t ch = begin; ch < end; ++ch) {
          double s = 0, b = 0;
          for (int64_t o = 0; o < outer; ++o) {
            const float* gr = g.f32() + (o * C + ch) * inner;
            const float* xr = needs[1] ? x.f32() + (o * C + ch) * inner : nullptr;
            for (int64_t i = 0; i < inner; ++i) {
              b += gr[i];
              if (xr != nullptr) s += double(gr[i]) * xr[i];
            }
          }
          gs.f32()[ch] = static_cast<float>(s);
          gb.f32()[ch] = static_cast<float>(b);
        }
      });
      if (needs[1]) out[1] = std::move(gs);
      if (needs[2]) out[2] = std::move(gb);
    };
  }, static_cast<size_t>(2 * a.numel()));
}

}  // namespace fucina
