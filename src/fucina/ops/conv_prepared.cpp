// The prepared convolution (Note [Prepared convolution], docs/design-notes.md): inference-only
// conv2d with the weight transformed once by prepareConv2dWeights. A 3x3 kernel with stride 1
// and dilation 1 and at least kWinogradMinChannels input channels a group runs Winograd F(2x2,
// 3x3) (backend/conv_geometry.h: below that it measured slower); every other weight runs conv2d's
// own im2col + GEMM core (ops/conv_core.h) on the weight stored once in the layout that GEMM reads
// in place, so a channels-first call neither permutes, converts nor copies the weight (a
// channels-last one reads it as [out, kh, kw, c], a copy: Note [Channels last]).
#include <string>

#include "fucina/ag/control.h"
#include "fucina/backend/kernels.h"
#include "fucina/ops/conv_core.h"
#include "fucina/ops/spatial.h"

namespace fucina {

using internal::RawTensor;
using namespace ops::spatial;

struct PreparedConv2dState {
  Conv2dOptions options;
  int64_t out_channels = 0, group_channels = 0, kh = 0, kw = 0;  // the weight's extents
  bool winograd = false;
  RawTensor weight;  // GEMM path: f32 {out, c, kh, kw}, contiguous
  RawTensor planes;  // Winograd path: U [16, groups, c, out / groups] (Kernels::winogradWeights)
  RawTensor bias;    // f32 {out}, or none
};

const PreparedConv2dState& PreparedConv2d::state() const {
  if (!state_) fail(ErrorCode::InvalidArgument, "PreparedConv2d: an empty handle (make one with prepareConv2dWeights)");
  return *state_;
}
const Conv2dOptions& PreparedConv2d::options() const { return state().options; }
bool PreparedConv2d::winograd() const { return state().winograd; }
bool PreparedConv2d::hasBias() const { return state().bias.valid(); }
int64_t PreparedConv2d::inChannels() const { return state().group_channels * state().options.groups; }
int64_t PreparedConv2d::outChannels() const { return state().out_channels; }
int64_t PreparedConv2d::kernelH() const { return state().kh; }
int64_t PreparedConv2d::kernelW() const { return state().kw; }

namespace {

// The prepared planes live outside the graph (an inference path, intentionally without
// gradient), so no operand may ask for a gradient.
void refuseGrad(std::string_view op, const char* what, const Tensor& t) {
  if (t.requiresGrad() && isGradEnabled())
    fail(ErrorCode::GradientPreparedConv2dUnsupported,
         std::string(op) + ": the " + what + " " + t.value().describe() +
             " requires grad; a prepared convolution is inference only (its planes live outside the graph): "
             "detach it or run under noGrad, or use conv2d / conv2dRelu to train");
}

// A weight, bias or input as f32: 16-bit values widened, f32 as it is, other dtypes refused.
RawTensor asF32(ExecContext& ctx, std::string_view op, const char* what, const Tensor& t) {
  const RawTensor& v = t.value();
  if (v.dtype() == DType::f32) return v;
  if (v.dtype() == DType::f16 || v.dtype() == DType::bf16) return v.to(ctx, DType::f32);
  fail(ErrorCode::DTypeMismatch, std::string(op) + ": the " + what + " must be f32, f16 or bf16, got " + v.describe() +
                                     " " + std::string(name(v.dtype())));
}

PreparedConv2d prepare(ExecContext& ctx, const Tensor& weight, const Tensor* bias, const Conv2dOptions& o) {
  constexpr std::string_view op = "prepareConv2dWeights";
  refuseGrad(op, "weight", weight);
  if (bias != nullptr) refuseGrad(op, "bias", *bias);
  requireDistinct(op, {o.channels, o.out_channels, o.height, o.width, o.kernel_h, o.kernel_w});
  requirePositive(op, "stride_h", o.stride_h);
  requirePositive(op, "stride_w", o.stride_w);
  requirePositive(op, "dilation_h", o.dilation_h);
  requirePositive(op, "dilation_w", o.dilation_w);
  requirePositive(op, "pad_h", o.pad_h, 0);
  requirePositive(op, "pad_w", o.pad_w, 0);
  requirePositive(op, "groups", o.groups);
  if (o.max_pool != 1)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": maxPool " + num(o.max_pool) +
                                         " is conv2dRelu's option; pool a prepared convolution's result with maxPool2d");
  const Tags order = {o.out_channels, o.channels, o.kernel_h, o.kernel_w};
  const RawTensor& wv = weight.value();
  bool weight_ok = wv.rank() == order.size();
  for (Tag t : order) weight_ok = weight_ok && hasTag(wv.tags(), t);
  if (!weight_ok)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the weight needs exactly the axes " + listed(order) + ", got " + wv.describe());

  auto state = std::make_shared<PreparedConv2dState>();
  PreparedConv2dState& s = *state;
  s.options = o;
  s.out_channels = wv.extent(o.out_channels);
  s.group_channels = wv.extent(o.channels);
  s.kh = wv.extent(o.kernel_h);
  s.kw = wv.extent(o.kernel_w);
  requirePositive(op, "the kernel's height", s.kh);
  requirePositive(op, "the kernel's width", s.kw);
  if (s.out_channels % o.groups != 0)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": groups=" + num(o.groups) + " must divide the weight's " +
                                         quoted(o.out_channels) + "=" + num(s.out_channels));
  if (bias != nullptr) {
    const RawTensor& b = bias->value();
    if (b.rank() != 1 || !(b.tags()[0] == o.out_channels) || b.shape()[0] != s.out_channels)
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": the bias must have the single axis " + quoted(o.out_channels) + "=" +
                                         num(s.out_channels) + ", got " + b.describe());
    s.bias = asF32(ctx, op, "bias", *bias).clone(ctx);  // a snapshot, whatever the caller does with its bias
  }
  // A contiguous f32 snapshot in conv2d's weight order [out, c, kh, kw].
  const RawTensor w = asF32(ctx, op, "weight", weight).permuted(order).clone(ctx);
  s.winograd = s.kh == 3 && s.kw == 3 && o.stride_h == 1 && o.stride_w == 1 && o.dilation_h == 1 && o.dilation_w == 1 &&
               s.group_channels >= kernels::kWinogradMinChannels;
  if (s.winograd) {
    s.planes = backend::kernelsOf(ctx).winogradWeights(ctx, w, o.groups);
  } else {
    s.weight = w;
  }
  return PreparedConv2d(std::move(state));
}

// The Winograd path: conv2d's checks of the input, then the kernel on [batch..., c, h, w].
Tensor winogradForward(ExecContext& ctx, std::string_view op, const RawTensor& a, const PreparedConv2dState& s, bool relu) {
  const Conv2dOptions& o = s.options;
  const int64_t C = s.group_channels * o.groups;
  if (a.extent(o.channels) != C)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the input's " + quoted(o.channels) + " must be the weight's " +
                                       num(s.group_channels) + " x groups " + num(o.groups) + " = " + num(C) + ", got input " +
                                       a.describe());
  const int64_t H = a.extent(o.height), W = a.extent(o.width);
  const int64_t OH = kernels::convOutExtent(H, 3, 1, o.pad_h, 1), OW = kernels::convOutExtent(W, 3, 1, o.pad_w, 1);
  if (OH < 1 || OW < 1)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the kernel 3x3 is larger than the padded input " + quoted(o.height) +
                                       "=" + num(H) + "+2*" + num(o.pad_h) + ", " + quoted(o.width) + "=" + num(W) + "+2*" +
                                       num(o.pad_w));
  Extents batch_shape;
  int64_t N = 0;
  const Tags batch = otherAxes(a, {o.channels, o.height, o.width}, &batch_shape, &N);
  Extents y_shape = batch_shape;
  y_shape.insert(y_shape.end(), {s.out_channels, OH, OW});
  const Tags y_tags = joinTags({batch, {o.out_channels, o.height, o.width}});
  RawTensor y = RawTensor::empty(ctx, y_tags, y_shape);
  if (y.numel() > 0) {
    const RawTensor x = a.permuted(joinTags({batch, {o.channels, o.height, o.width}})).contiguous(ctx);
    const kernels::ConvPlan plan{{C, H, W, 3, 3, 1, 1, o.pad_h, o.pad_w, 1, 1, OH, OW}, N, o.groups, s.out_channels};
    y = backend::kernelsOf(ctx).winogradConv2d(ctx, x, s.planes, plan, y_tags, y_shape, s.bias, relu);
  }
  Tags result_order = a.tags();
  for (Tag& t : result_order)
    if (t == o.channels) t = o.out_channels;
  return Tensor::fromRaw(ctx, y.permuted(result_order));
}

Tensor prepared(ExecContext& ctx, const Tensor& input, const PreparedConv2d& p, bool relu) {
  const std::string_view op = relu ? "conv2dPreparedRelu" : "conv2dPrepared";
  const PreparedConv2dState& s = p.state();
  refuseGrad(op, "input", input);
  const Conv2dOptions& o = s.options;
  const RawTensor a = asF32(ctx, op, "input", input);
  requireAxes(op, "input", a, {o.channels, o.height, o.width});
  if (hasTag(a.tags(), o.out_channels))
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the input " + a.describe() + " already has the output axis " + quoted(o.out_channels));
  if (s.winograd) return winogradForward(ctx, op, a, s, relu);
  // A handle on the prepared storage for this call only (a tensor kept in the state would be
  // released by the ExecScope open when it was prepared).
  const Tensor x = a.dtype() == input.dtype() ? input : Tensor::fromRaw(ctx, a);
  return ops::conv2dForward(ctx, x, Tensor::fromRaw(ctx, s.weight), o, op, s.bias, relu);
}

}  // namespace

PreparedConv2d prepareConv2dWeights(ExecContext& ctx, const Tensor& weight, const Conv2dOptions& options) {
  return prepare(ctx, weight, nullptr, options);
}
PreparedConv2d prepareConv2dWeights(ExecContext& ctx, const Tensor& weight, const Tensor& bias, const Conv2dOptions& options) {
  return prepare(ctx, weight, &bias, options);
}

Tensor Tensor::conv2dPrepared(ExecContext& ctx, const PreparedConv2d& p) const { return prepared(ctx, *this, p, false); }
Tensor Tensor::conv2dPreparedRelu(ExecContext& ctx, const PreparedConv2d& p) const { return prepared(ctx, *this, p, true); }

}  // namespace fucina
