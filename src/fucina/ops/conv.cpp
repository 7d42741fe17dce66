// Convolutions over named axes: conv2d, conv1d and its causal forms, convTranspose1d and
// conv2dRelu on the backend's three convolution primitives (conv2d and its two adjoints, Note
// [Convolution core] in backend/cpu/conv_core.cpp), unfold/fold (im2col/col2im themselves) and
// channelAffine. Every op copies its input into a layout [other axes..., channels, spatial...],
// or for a 2-D input that names its channels last [other axes..., spatial..., channels] (Note
// [Channels last]), with no copy when it already is, and returns a view in the input's axis
// order; VJPs return gradients in that layout and let the engine permute them back (as the
// axis-last row-wise ops do). Pooling lives in ops/pool.cpp.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fucina/backend/kernels.h"
#include "fucina/ops/conv_core.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/spatial.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using kernels::Conv2dGeometry;
using kernels::ConvPlan;
using ops::Grads;
using ops::NeedsGrad;
using namespace ops::spatial;

namespace {

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
  int64_t max_pool = 1;        // conv2dRelu's maxPool (Note [Pooled conv2dRelu])
};

ConvSpec specOf(const Conv2dOptions& o, std::string_view op) {
  return {.op = op, .channels = o.channels, .out_channels = o.out_channels, .width = o.width, .kernel_w = o.kernel_w,
          .height = o.height, .kernel_h = o.kernel_h, .stride_h = o.stride_h, .stride_w = o.stride_w, .pad_h = o.pad_h,
          .pad_w = o.pad_w, .dilation_h = o.dilation_h, .dilation_w = o.dilation_w, .groups = o.groups,
          .max_pool = o.max_pool};
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
// the geometry's numbers). `bias` (checked by the caller: {out_channels}) and `relu` fuse an
// epilogue into a convolution's forward, added to each image while it is in cache (conv2dRelu;
// not for a transposed one). Note [conv2dRelu's VJP]: the relu's mask is read from the result
// (y > 0 exactly where its argument is), so neither the sums nor the biased sums are kept, and the
// gradients are relu's, add's and conv2d's composed, bit for bit.
Tensor convolve(ExecContext& ctx, const Tensor& input, const Tensor& weight, const ConvSpec& s,
                const Tensor* bias = nullptr, bool relu = false) {
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
  // Note [Channels last]: a 2-D input that names its channels after both spatial axes is
  // convolved in that layout, its weight read as [out, kh, kw, c].
  const bool channels_last = two_d && !s.transposed && a.axis(s.channels) > a.axis(*s.height) &&
                             a.axis(s.channels) > a.axis(s.width);
  const Tags w_order = s.transposed     ? joinTags({{s.channels, s.out_channels}, kernel})
                       : channels_last ? joinTags({{s.out_channels}, kernel, {s.channels}})
                                       : joinTags({{s.out_channels, s.channels}, kernel});
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
  requirePositive(op, "maxPool", s.max_pool);
  const bool pooled = s.max_pool > 1;
  if (pooled && !relu)
    fail(ErrorCode::InvalidArgument, op + ": maxPool " + num(s.max_pool) + " is conv2dRelu's option; pool " + op +
                                         "'s result with maxPool2d");
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
    if (pooled && (OH < s.max_pool || OW < s.max_pool))
      fail(ErrorCode::ShapeMismatch, op + ": maxPool " + num(s.max_pool) + " is larger than the convolution's output " +
                                         quoted(*s.height) + "=" + num(OH) + ", " + quoted(s.width) + "=" + num(OW));
  }
  const Conv2dGeometry g{C, H, W, KH, KW, s.stride_h, s.stride_w, s.pad_h, pad_w, s.dilation_h, s.dilation_w, OH, OW};

  Extents batch_shape;
  int64_t N = 0;
  const Tags batch = otherAxes(a, x_axes, &batch_shape, &N);
  const ConvPlan plan{g, N, G, OC, channels_last};
  // OH and OW grow with the pads: every product below is checked (Note [Extent products fit]).
  const int64_t P = checkedMul(OH, OW, op), CgK = checkedMul(C / G, KH * KW, op);
  checkedMul(checkedMul(C, KH * KW, op), P, op);  // im2col's columns
  const auto work = static_cast<size_t>(checkedMul(checkedMul(checkedMul(2 * N, OC, op), P, op), CgK, op));
  // The input [batch..., channels, spatial...] and the result [batch..., out_channels, spatial...]:
  // the core's images and outputs, or for a transposed convolution its outputs and images.
  // Channels last: [batch..., spatial..., channels] and [batch..., spatial..., out_channels].
  const Tags x_tags = channels_last ? joinTags({batch, spatial, {s.channels}}) : joinTags({batch, {s.channels}, spatial});
  const Tags y_tags =
      channels_last ? joinTags({batch, spatial, {s.out_channels}}) : joinTags({batch, {s.out_channels}, spatial});
  Extents x_shape = batch_shape, y_shape = batch_shape;
  if (!channels_last) {
    x_shape.push_back(Cx);
    y_shape.push_back(s.transposed ? C : OC);
  }
  if (two_d) {
    x_shape.insert(x_shape.end(), {H, Lx});
    y_shape.insert(y_shape.end(), {OH, OW});
  } else {
    x_shape.push_back(Lx);
    y_shape.push_back(s.transposed ? W : OW);
  }
  if (channels_last) {
    x_shape.push_back(Cx);
    y_shape.push_back(OC);
  }
  const RawTensor x = a.permuted(x_tags).contiguous(ctx);
  const RawTensor w = wv.permuted(w_order).contiguous(ctx);
  const RawTensor b = bias != nullptr ? bias->value().contiguous(ctx) : RawTensor();
  const backend::Kernels& k = backend::kernelsOf(ctx);
  // Pooled (Note [Pooled conv2dRelu]): the output's planes, or channels last its images with the
  // output channels trailing, pooled as maxPool2d pools them.
  const int64_t mp = s.max_pool;
  const Conv2dGeometry pool{channels_last ? N : checkedMul(N, OC, op), OH, OW, mp, mp, mp, mp, 0, 0, 1, 1, OH / mp, OW / mp};
  const size_t trailing = channels_last ? 1 : 0;
  RawTensor argmax;
  // An empty result (no output channels, say) computes nothing, however many images.
  RawTensor y;
  if (numelOf(y_shape) == 0) {
    if (pooled) {
      y_shape.end()[-2 - static_cast<std::ptrdiff_t>(trailing)] = pool.out_h;
      y_shape.end()[-1 - static_cast<std::ptrdiff_t>(trailing)] = pool.out_w;
    }
    y = RawTensor::empty(ctx, y_tags, y_shape);
  } else if (s.transposed) {
    y = k.conv2dInputGrad(ctx, x, w, plan, y_tags, y_shape);
  } else if (pooled) {
    const bool records = isGradEnabled() && (ops::anyRequiresGrad({&input, &weight}) || (bias && bias->requiresGrad()));
    backend::Kernels::Pooled r = k.conv2dReluPool(ctx, x, w, plan, y_tags, y_shape, b, pool, trailing, records);
    y = std::move(r.y);
    argmax = std::move(r.argmax);
  } else {
    y = k.conv2d(ctx, x, w, plan, y_tags, y_shape, b, relu);
  }
  Tags result_order = a.tags();
  for (Tag& t : result_order)
    if (t == s.channels) t = s.out_channels;
  auto makeVjp = [&] {
    // Each convolution gradient reads the other operand; the relu's mask, the result.
    return [x = weight.requiresGrad() ? x : RawTensor(), w = input.requiresGrad() ? w : RawTensor(),
            y = relu ? y : RawTensor(), argmax, pooled, pool, trailing, plan, transposed = s.transposed, y_tags,
            layout = backend::Kernels::ConvGradLayout{x_tags, x_shape, w_order, w.shape(), Tags{s.out_channels},
                                                      Extents{OC}}](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads out) {
      const backend::Kernels& k = backend::kernelsOf(c);
      const RawTensor g = gy.permuted(y_tags).contiguous(c);
      if (!transposed) {  // Note [Fused convolution VJP], Note [Pooled conv2dRelu]
        // x for the weight's gradient, w for the input's.
        const RawTensor xs = needs[1] ? x : RawTensor(), ws = needs[0] ? w : RawTensor();
        const bool gb = needs.size() > 2 && needs[2];
        backend::Kernels::ConvGrads r = pooled ? k.conv2dReluPoolVjp(c, g, y, argmax, xs, ws, plan, pool, trailing, layout, gb)
                                               : k.conv2dVjp(c, g, y, xs, ws, plan, layout, gb);
        if (needs[0]) out[0] = std::move(r.x);
        if (needs[1]) out[1] = std::move(r.w);
        if (needs.size() > 2 && needs[2]) out[2] = std::move(r.bias);
        return;
      }
      // A transposed convolution (no bias or relu here: runConv adds its bias) is the adjoint of
      // convInputGrad: its input gradient is conv2d's forward, its weight gradient conv2d's with
      // the roles of input and output swapped.
      if (g.numel() == 0) {
        if (needs[0]) out[0] = RawTensor::zeros(c, layout.x_tags, layout.x_shape);
        if (needs[1]) out[1] = RawTensor::zeros(c, layout.w_tags, layout.w_shape);
        return;
      }
      if (needs[0]) out[0] = k.conv2d(c, g, w, plan, layout.x_tags, layout.x_shape, RawTensor(), false);
      if (needs[1]) out[1] = k.conv2dWeightGrad(c, g, x, plan, layout.w_tags, layout.w_shape);
    };
  };
  if (bias != nullptr) return ops::finishOp(ctx, s.op, y.permuted(result_order), {&input, &weight, bias}, makeVjp, work);
  return ops::finishOp(ctx, s.op, y.permuted(result_order), {&input, &weight}, makeVjp, work);
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
  if (s.height.has_value() && ops::allF32({&x, &w, bias})) {  // conv2d: the bias added in the forward's epilogue
    if (hasTag(w.tags(), s.out_channels)) checkBias(s.op, *bias, s.out_channels, w.extent(s.out_channels));
    return convolve(ctx, x, w, s, bias);
  }
  Tensor y = runConv(ctx, x, w, nullptr, s);
  checkBias(s.op, *bias, s.out_channels, y.extent(s.out_channels));
  return y.add(ctx, *bias);
}

// relu(conv2d + bias) in one op: the bias and relu fused into the forward, one VJP (Note
// [conv2dRelu's VJP]).
Tensor fusedConv2dRelu(ExecContext& ctx, const Tensor& x, const Tensor& w, const Tensor* bias, const Conv2dOptions& o) {
  constexpr std::string_view op = "conv2dRelu";
  if (bias != nullptr ? !ops::allF32({&x, &w, bias}) : !ops::allF32({&x, &w})) {
    auto body = [&](std::span<const Tensor> f) { return fusedConv2dRelu(ctx, f[0], f[1], bias != nullptr ? &f[2] : nullptr, o); };
    return bias != nullptr ? ops::viaF32(ctx, op, {&x, &w, bias}, body) : ops::viaF32(ctx, op, {&x, &w}, body);
  }
  if (bias != nullptr && hasTag(w.tags(), o.out_channels)) checkBias(op, *bias, o.out_channels, w.extent(o.out_channels));
  return convolve(ctx, x, w, specOf(o, op), bias, true);
}

}  // namespace

Tensor ops::conv2dForward(ExecContext& ctx, const Tensor& x, const Tensor& w, const Conv2dOptions& options,
                          std::string_view op, const RawTensor& bias, bool relu) {
  const Tensor b = bias.valid() ? Tensor::fromRaw(ctx, bias) : Tensor();
  return convolve(ctx, x, w, specOf(options, op), bias.valid() ? &b : nullptr, relu);
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
  Tags image_tags, cols_tags;
  Extents image_shape, cols_shape;
};

// `a` is the side that exists (images for unfold, columns for fold); C, H, W describe the images.
FoldSetup foldSetup(std::string_view op, const RawTensor& a, const Tags& own, const Tags& made, int64_t C, int64_t H,
                    int64_t W, int64_t kh, int64_t kw, const UnfoldOptions& o) {
  FoldSetup s;
  Extents batch_shape;
  int64_t images = 0;
  const Tags batch = otherAxes(a, own, &batch_shape, &images);
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
// block.
RawTensor unfoldImages(ExecContext& ctx, const FoldSetup& s, const RawTensor& images) {
  return backend::kernelsOf(ctx).im2col(ctx, images, s.g, s.cols_tags, s.cols_shape);
}
RawTensor foldColumns(ExecContext& ctx, const FoldSetup& s, const RawTensor& cols) {
  return backend::kernelsOf(ctx).col2im(ctx, cols, s.g, s.image_tags, s.image_shape);
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
  const RawTensor x = a.contiguous(ctx);
  const RawTensor sc = scale.value().contiguous(ctx), sh = shift.value().contiguous(ctx);
  RawTensor y = backend::kernelsOf(ctx).channelAffine(ctx, x, sc, sh, channel_axis);
  return ops::finishOp(ctx, op, std::move(y), {this, &scale, &shift}, [&] {
    return [x = scale.requiresGrad() ? x : RawTensor(), sc = requiresGrad() ? sc : RawTensor(), tags = a.tags(),
            channel_axis](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads out) {
      auto g = backend::kernelsOf(c).channelAffineVjp(c, needs[1] ? x : RawTensor(), sc, gy.permuted(tags).contiguous(c),
                                                      channel_axis, needs[0], needs[1] || needs[2]);
      if (needs[0]) out[0] = std::move(g.x);
      if (needs[1]) out[1] = std::move(g.scale);
      if (needs[2]) out[2] = std::move(g.shift);
    };
  }, static_cast<size_t>(2 * a.numel()));
}

}  // namespace fucina
