// The webgpu backend (Note [Backends]): the primitives it computes with WGSL kernels, and
// UnsupportedOnDevice naming the primitive for the rest, so an op on device tensors either runs
// on the device or says that it does not, and never moves data behind the caller's back.
#include "fucina/backend/kernels.h"
#include "fucina/core/error.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"

namespace fucina::backend {
namespace {

using webgpu::unsupported;

class WebgpuKernels final : public Kernels {
 public:
  Backend backend() const override { return Backend::webgpu; }
  RawTensor map(ExecContext& ctx, ElemOp op, Form form, const Tags& tags, const Extents& shape, Inputs ins, const ElemParams& p) const override { return webgpu::map(ctx, op, form, tags, shape, ins, p); }
  RawTensor mapAs(ExecContext&, ElemOp, DType, const Tags&, const Extents&, Inputs, const ElemParams&) const override { unsupported("f64 and integer elementwise forms (WGSL has no f64)"); }
  void updateInto(ExecContext& ctx, ElemOp op, const RawTensor& dst, const RawTensor* src, const ElemParams& p) const override { webgpu::updateInto(ctx, op, dst, src, p); }
  RawTensor select(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs ins) const override { return webgpu::select(ctx, tags, shape, ins); }
  void copy(ExecContext& ctx, const RawTensor& src, const RawTensor& dst) const override { webgpu::copy(ctx, src, dst); }
  void fill(ExecContext& ctx, const RawTensor& dst, double value) const override { webgpu::fill(ctx, dst, value); }
  RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes) const override { return webgpu::sumAxes(ctx, a, axes); }
  void addInto(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) const override { webgpu::addInto(ctx, dst, src); }
  RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted, const RawTensor& initial) const override { return webgpu::contract(ctx, a, b, contracted, initial); }
  RawTensor contractF64(ExecContext&, const RawTensor&, const RawTensor&, const Tags&) const override { unsupported("f64 contractions (WGSL has no f64)"); }
  Along reduceAlong(ExecContext& ctx, AlongAxis op, const RawTensor& a, Tag axis) const override {
    return webgpu::reduceAlong(ctx, op, a, axis);
  }
  RawTensor reduceF64(ExecContext& ctx, F64Line op, const RawTensor& a, const Tags& axes, double param) const override {
    return webgpu::reduceF64(ctx, op, a, axes, param);
  }
  RawTensor pNormVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& norm, const RawTensor& gy, double p) const override {
    return webgpu::pNormVjp(ctx, x, norm, gy, p);
  }
  RawTensor cumprodRows(ExecContext& ctx, const RawTensor& x) const override { return webgpu::cumprodRows(ctx, x); }
  RawTensor cumprodRowsVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& y, const RawTensor& gy) const override {
    return webgpu::cumprodRowsVjp(ctx, x, y, gy);
  }
  RawTensor linearRecurrenceRows(ExecContext& ctx, const RawTensor& x, const RawTensor& d, const RawTensor& h0) const override {
    return webgpu::linearRecurrenceRows(ctx, x, d, h0);
  }
  RecurrenceGrads linearRecurrenceRowsVjp(ExecContext& ctx, const RawTensor& d, const RawTensor& h0, const RawTensor& y,
                                          const RawTensor& gy) const override {
    return webgpu::linearRecurrenceRowsVjp(ctx, d, h0, y, gy);
  }
  IndexFault firstIndexOutside(ExecContext& ctx, const RawTensor& index, int64_t extent) const override {
    return webgpu::firstIndexOutside(ctx, index, extent);
  }
  ValueFault firstValueOutside(ExecContext& ctx, const RawTensor& x, double lo, double hi) const override {
    return webgpu::firstValueOutside(ctx, x, lo, hi);
  }
  RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) const override {
    return webgpu::gatherAlong(ctx, table, axis, index);
  }
  void scatterAlong(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                    bool add) const override {
    webgpu::scatterAlong(ctx, dst, axis, index, src, add);
  }
  RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) const override {
    return webgpu::selectRows(ctx, table, axis, index);
  }
  void updateRows(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                  RowUpdate how) const override {
    webgpu::updateRows(ctx, dst, axis, index, src, how);
  }
  RawTensor maskPositions(ExecContext&, const RawTensor&, Tag) const override {
    unsupported("maskPositions (how many elements a mask sets is read on the host)");
  }
  MaskedScatter maskedScatter(ExecContext& ctx, const RawTensor& a, const RawTensor& mask, const RawTensor& src) const override {
    return webgpu::maskedScatter(ctx, a, mask, src);
  }
  MaskedScatterGrads maskedScatterVjp(ExecContext& ctx, const RawTensor& where, const RawTensor& gy, const Tags& src_tags,
                                      const Extents& src_shape, bool need_a, bool need_src) const override {
    return webgpu::maskedScatterVjp(ctx, where, gy, src_tags, src_shape, need_a, need_src);
  }
  SortedRows sortRows(ExecContext& ctx, const RawTensor& rows, int64_t k, bool largest) const override {
    return webgpu::sortRows(ctx, rows, k, largest);
  }
  RawTensor argExtremumRows(ExecContext&, const RawTensor&, bool) const override { unsupported("argExtremumRows"); }
  RawTensor logic(ExecContext& ctx, Logic op, const Tags& tags, const Extents& shape, Inputs ins) const override {
    return webgpu::logic(ctx, op, tags, shape, ins);
  }
  RawTensor truthRows(ExecContext& ctx, const RawTensor& truth, bool any) const override {
    return webgpu::truthRows(ctx, truth, any);
  }
  RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower,
                     int64_t upper) const override {
    return webgpu::bandMask(ctx, row, col, rows, cols, lower, upper);
  }
  RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale) const override {
    return webgpu::dropout(ctx, x, seed, p, keep_scale);
  }
  RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows, int64_t samples, uint64_t seed, bool replacement,
                            const std::string&) const override {
    return webgpu::multinomialRows(ctx, rows, samples, seed, replacement);
  }
  RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                   const Extents& shape, const RawTensor& bias, bool relu) const override {
    return webgpu::conv2d(ctx, x, w, p, tags, shape, bias, relu);
  }
  RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                            const Tags& tags, const Extents& shape) const override {
    return webgpu::conv2dInputGrad(ctx, gy, w, p, tags, shape);
  }
  RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                             const Tags& tags, const Extents& shape) const override {
    return webgpu::conv2dWeightGrad(ctx, x, gy, p, tags, shape);
  }
  RawTensor winogradWeights(ExecContext&, const RawTensor&, int64_t) const override { unsupported("winogradWeights"); }
  RawTensor winogradConv2d(ExecContext&, const RawTensor&, const RawTensor&, const ConvPlan&, const Tags&, const Extents&, const RawTensor&, bool) const override { unsupported("winogradConv2d"); }
  RawTensor im2col(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                   const Extents& shape) const override {
    return webgpu::im2col(ctx, images, g, tags, shape);
  }
  RawTensor col2im(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                   const Extents& shape) const override {
    return webgpu::col2im(ctx, cols, g, tags, shape);
  }
  Pooled pool2d(ExecContext& ctx, Pool kind, const RawTensor& x, const Conv2dGeometry& g, size_t trailing,
                bool argmax) const override {
    return webgpu::pool2d(ctx, kind, x, g, trailing, argmax);
  }
  RawTensor pool2dVjp(ExecContext& ctx, Pool kind, const RawTensor& gy, const RawTensor& argmax,
                      const Conv2dGeometry& g, size_t trailing) const override {
    return webgpu::pool2dVjp(ctx, kind, gy, argmax, g, trailing);
  }
  RawTensor upsample2x(ExecContext& ctx, const RawTensor& x) const override { return webgpu::upsample2x(ctx, x); }
  RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy) const override { return webgpu::upsample2xVjp(ctx, gy); }
  RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                          Tag channel) const override {
    return webgpu::channelAffine(ctx, x, scale, shift, channel);
  }
  AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& gy,
                               Tag channel, bool input, bool params) const override {
    return webgpu::channelAffineVjp(ctx, x, scale, gy, channel, input, params);
  }
  RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log) const override { return webgpu::softmaxRows(ctx, x, log); }
  RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log) const override {
    return webgpu::softmaxRowsVjp(ctx, y, gy, log);
  }
  NormRows normRows(ExecContext& ctx, const RawTensor& x, Norm kind, double eps) const override {
    return webgpu::normRows(ctx, x, kind, eps);
  }
  RawTensor normRowsVjp(ExecContext& ctx, Norm kind, const NormRows& saved, const RawTensor& gy) const override {
    return webgpu::normRowsVjp(ctx, kind, saved, gy);
  }
  RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin, RopePairs pairs,
                     bool inverse) const override {
    return webgpu::ropeRows(ctx, x, cos, sin, pairs, inverse);
  }
  RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base,
                        int64_t offset) const override {
    return webgpu::ropeTables(ctx, position, dim, T, D, base, offset);
  }
  RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const RawTensor& cos,
                              const RawTensor& sin, double eps) const override {
    return webgpu::rmsNormRopeRows(ctx, x, w, cos, sin, eps);
  }
  RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const RmsRopeRows& saved, const RawTensor& w, const RawTensor& cos,
                                  const RawTensor& sin, const RawTensor& gy, bool need_x, bool need_w) const override {
    return webgpu::rmsNormRopeRowsVjp(ctx, saved, w, cos, sin, gy, need_x, need_w);
  }
  IndexFault firstLabelOutside(ExecContext& ctx, const RawTensor& labels, int64_t classes,
                               std::optional<int64_t> ignore) const override {
    return webgpu::firstIndexOutside(ctx, labels, classes, ignore);
  }
  RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, double smoothing,
                          bool plain) const override {
    return webgpu::labelLossRows(ctx, lp, labels, smoothing, plain);
  }
  RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, const RawTensor& gy,
                             float scale, double smoothing, bool plain) const override {
    return webgpu::labelLossRowsVjp(ctx, lp, labels, gy, scale, smoothing, plain);
  }
  RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, const Divisor& denom) const override { return webgpu::reduceLoss(ctx, loss, denom); }
  Divisor labelWeightSum(ExecContext& ctx, const RawTensor& labels, const RawTensor& weights, int64_t ignore) const override {
    return webgpu::labelWeightSum(ctx, labels, weights, ignore);
  }
  CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x, const CrossEntropy& ce, bool in_place) const override {
    return webgpu::crossEntropyRows(ctx, x, ce, in_place);
  }
  CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& lse, const CrossEntropy& ce,
                                        const RawTensor& gy, const Divisor& denom, bool need_x, bool need_target,
                                        bool in_place) const override {
    return webgpu::crossEntropyRowsVjp(ctx, lp, lse, ce, gy, denom, need_x, need_target, in_place);
  }
  RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x, float inv_t) const override {
    return webgpu::temperatureSoftmaxRows(ctx, x, inv_t);
  }
  RawTensor distillRows(ExecContext& ctx, const RawTensor& x, const Distill& d) const override { return webgpu::distillRows(ctx, x, d); }
  RawTensor distillRowsVjp(ExecContext& ctx, const RawTensor& x, const Distill& d, const RawTensor& gy) const override {
    return webgpu::distillRowsVjp(ctx, x, d, gy);
  }
  Attention attention(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                      const RawTensor& v) const override {
    return webgpu::attention(ctx, g, q, k, v);
  }
  AttentionGrads attentionVjp(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                              const RawTensor& v, const RawTensor& probs, const RawTensor& gy, bool need_q,
                              bool need_k, bool need_v) const override {
    return webgpu::attentionVjp(ctx, g, q, k, v, probs, gy, need_q, need_k, need_v);
  }
  RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate) const override {
    return webgpu::gated(ctx, fn, up, gate);
  }
  void gatedVjp(ExecContext& ctx, const GateFn& fn, const RawTensor& gy, const RawTensor& up, const RawTensor& gate,
                const RawTensor& gup, const RawTensor& ggate) const override {
    webgpu::gatedVjp(ctx, fn, gy, up, gate, gup, ggate);
  }
  std::vector<int64_t> readI64(ExecContext&, const RawTensor&) const override { unsupported("host reads (device reads are async)"); }
  RawTensor moveSlices(ExecContext& ctx, SliceMove how, const RawTensor& src, Tag axis, Tag by_axis, const RawTensor& shifts,
                       bool adjoint) const override {
    return webgpu::moveSlices(ctx, how, src, axis, by_axis, shifts, adjoint);
  }
  RawTensor band(ExecContext& ctx, const RawTensor& a, Tag row, Tag col, int64_t lo, int64_t hi) const override {
    return webgpu::band(ctx, a, row, col, lo, hi);
  }
  void scatterAddView(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) const override { webgpu::scatterAddView(ctx, dst, src); }
  RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis) const override { return webgpu::quantizeQ8(ctx, a, block_axis); }
  RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w) const override { return webgpu::ternaryQuantize(ctx, w); }
  PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last) const override { return webgpu::packRhs(ctx, b, depth_last); }
  int64_t packedLayout() const override { return 0; }  // Bᵀ {columns..., depth}, f32
  RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const PackedB& b, const RawTensor& bias, const Tags& tags,
                          const Extents& shape) const override {
    return webgpu::packedProduct(ctx, a, b, bias, tags, shape);
  }
  void sgdUpdate(ExecContext& ctx, const SgdStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& buf) const override { webgpu::sgdUpdate(ctx, s, p, g, buf); }
  void adamUpdate(ExecContext& ctx, const AdamStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& m, const RawTensor& v) const override { webgpu::adamUpdate(ctx, s, p, g, m, v); }
  double sumSquares(ExecContext&, const RawTensor&) const override {
    fail(ErrorCode::DeviceReadIsAsync, "clipGradNorm returns its norm as a number, a synchronous read of the device: "
                                       "clipGradNormTensor clips on the device and returns the norm as a tensor");
  }
  GradNorm gradNorm(ExecContext& ctx, std::span<const RawTensor> grads, double max_norm) const override {
    return webgpu::gradNorm(ctx, grads, max_norm);
  }
};

}  // namespace

const Kernels& webgpuKernels() {
  static const WebgpuKernels kernels;
  return kernels;
}

}  // namespace fucina::backend
