// Losses. crossEntropy and nllLoss work row-wise over the class axis with integer labels and
// fuse their gradients; mseLoss is composed from differentiable primitives (it needs no VJP);
// huber, bce, bceWithLogits and klDiv are fused pointwise kernels, each loss beside its partials.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/labels.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::Labels;
using ops::NeedsGrad;
using ops::readLabels;

namespace ops {

Labels readLabels(ExecContext& ctx, std::string_view op, const RawTensor& logits, const Tensor& labels,
                  Tag class_axis, std::optional<int64_t> ignore) {
  const RawTensor& l = labels.value();
  if (l.dtype() != DType::i32 && l.dtype() != DType::i64)
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": labels must be i32 or i64, got " +
                                       std::string(name(l.dtype())));
  Labels out;
  for (size_t i = 0; i < logits.rank(); ++i) {
    if (logits.tags()[i] == class_axis) continue;
    out.tags.push_back(logits.tags()[i]);
    out.shape.push_back(logits.shape()[i]);
  }
  const bool same_axes = l.rank() == out.tags.size() && [&] {
    for (size_t i = 0; i < out.tags.size(); ++i)
      if (!hasTag(l.tags(), out.tags[i]) || l.extent(out.tags[i]) != out.shape[i]) return false;
    return true;
  }();
  if (!same_axes)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": labels " + l.describe() +
                                       " must have the logits' axes without '" +
                                       std::string(class_axis.name()) + "': " + describe(out.tags, out.shape));
  out.values = l.permuted(out.tags).to(ctx, DType::i64);
  const int64_t classes = logits.extent(class_axis);
  const backend::Kernels::IndexFault bad = backend::kernelsOf(ctx).firstLabelOutside(ctx, out.values, classes, ignore);
  if (bad.position >= 0)
    fail(ErrorCode::IndexOutOfRange, std::string(op) + ": label " + std::to_string(bad.value) + " at position " +
                                         std::to_string(bad.position) + " is outside [0, " + std::to_string(classes) +
                                         ")");
  return out;
}

}  // namespace ops

namespace {

float reductionScale(Reduction r, int64_t rows) {
  return r == Reduction::mean ? 1.0f / static_cast<float>(rows) : 1.0f;
}

// Reduces per-row losses (f64, the labels' axes) as asked: the rows as f32, or their sum or mean.
RawTensor reduceRows(ExecContext& ctx, const RawTensor& loss, Reduction r) {
  if (r == Reduction::none) return loss.to(ctx, DType::f32);
  return backend::kernelsOf(ctx).reduceLoss(ctx, loss, r == Reduction::mean ? static_cast<double>(loss.numel()) : 1.0);
}

// The upstream gradient as labelLossRowsVjp takes it: gy's rows in the labels' order (Reduction::none),
// else the scalar gy.
RawTensor rowGrads(ExecContext& ctx, const RawTensor& gy, const Labels& labels, Reduction r) {
  return r == Reduction::none ? gy.permuted(labels.tags).contiguous(ctx) : gy.contiguous(ctx);
}

void requireRows(std::string_view op, int64_t rows, Reduction r) {
  if (rows == 0 && r == Reduction::mean)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": mean over zero rows");
}

}  // namespace

Tensor Tensor::crossEntropy(ExecContext& ctx, const Tensor& labels, Tag class_axis,
                            CrossEntropyOptions options) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "crossEntropy", {this}, [&](std::span<const Tensor> f) { return f[0].crossEntropy(ctx, labels, class_axis, options); });
  const double eps = options.label_smoothing;
  if (!(eps >= 0.0 && eps < 1.0))
    fail(ErrorCode::InvalidArgument, "crossEntropy: label_smoothing must be in [0, 1), got " + std::to_string(eps));
  const RawTensor in = ops::axisLast(ctx, value(), class_axis);
  const int64_t classes = in.extent(class_axis);
  if (classes == 0) fail(ErrorCode::InvalidArgument, "crossEntropy: the class axis is empty");
  Labels lab = readLabels(ctx, "crossEntropy", value(), labels, class_axis);
  const int64_t rows = lab.rows();
  requireRows("crossEntropy", rows, options.reduction);
  const backend::Kernels& k = backend::kernelsOf(ctx);
  RawTensor logp = k.softmaxRows(ctx, in, /*log=*/true);
  RawTensor out = reduceRows(ctx, k.labelLossRows(ctx, logp, lab.values, eps, /*plain=*/false), options.reduction);
  return ops::finishOp(ctx, "crossEntropy", out, {this, &labels}, [&] {
    // d loss_r / d logits_rc = softmax_rc - target_rc, target = (1-eps)*onehot + eps/C.
    return [logp, lab = std::move(lab), options, rows](ExecContext& c, const RawTensor& gy, NeedsGrad needs,
                                                        Grads g) {
      if (!needs[0]) return;
      g[0] = backend::kernelsOf(c).labelLossRowsVjp(c, logp, lab.values, rowGrads(c, gy, lab, options.reduction),
                                                    reductionScale(options.reduction, rows),
                                                    options.label_smoothing, /*plain=*/false);
    };
  }, static_cast<size_t>(in.numel()) * 4);
}

Tensor Tensor::nllLoss(ExecContext& ctx, const Tensor& labels, Tag class_axis, Reduction reduction) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "nllLoss", {this}, [&](std::span<const Tensor> f) { return f[0].nllLoss(ctx, labels, class_axis, reduction); });
  const RawTensor in = ops::axisLast(ctx, value(), class_axis);
  Labels lab = readLabels(ctx, "nllLoss", value(), labels, class_axis);
  const int64_t rows = lab.rows();
  requireRows("nllLoss", rows, reduction);
  RawTensor out = reduceRows(ctx, backend::kernelsOf(ctx).labelLossRows(ctx, in, lab.values, 0.0, /*plain=*/true),
                             reduction);
  return ops::finishOp(ctx, "nllLoss", out, {this, &labels}, [&] {
    return [tags = in.tags(), shape = in.shape(), lab = std::move(lab), reduction, rows](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      if (!needs[0]) return;
      // The plain gradient reads only the logits' layout: a zero-stride stand-in keeps them unsaved.
      const RawTensor layout = RawTensor::full(c, {}, {}, 0.0).broadcastView(tags, shape);
      g[0] = backend::kernelsOf(c).labelLossRowsVjp(c, layout, lab.values, rowGrads(c, gy, lab, reduction),
                                                    reductionScale(reduction, rows), 0.0, /*plain=*/true);
    };
  });
}

Tensor Tensor::mseLoss(ExecContext& ctx, const Tensor& target, Reduction reduction) const {
  if (ops::composeViaF32({this, &target}))
    return ops::viaF32(ctx, "mseLoss", {this, &target}, [&](std::span<const Tensor> f) { return f[0].mseLoss(ctx, f[1], reduction); });
  const Tensor d = sub(ctx, target);
  const Tensor sq = d.mul(ctx, d);
  switch (reduction) {
    case Reduction::mean: return sq.meanAll(ctx);
    case Reduction::sum: return sq.sumAll(ctx);
    case Reduction::none: break;
  }
  return sq;
}

namespace {

// Both operands of a pointwise loss have the same axes and extents, in any order.
void requireSameAxes(std::string_view op, const RawTensor& x, const RawTensor& t) {
  bool same = x.rank() == t.rank();
  for (size_t i = 0; same && i < x.rank(); ++i)
    same = hasTag(t.tags(), x.tags()[i]) && t.extent(x.tags()[i]) == x.shape()[i];
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": input " + x.describe() + " and target " + t.describe() +
                                       " must have the same axes and extents");
}

// A pointwise loss l(x, t) (a row of backend/elementwise_table.h) reduced as asked, fused: the
// forward is one map (plus a sum), the VJP one map per operand that needs a gradient, the row's
// partials applied to gy scaled by the mean's 1/n first (gy is then a scalar).
template <class Row>
Tensor pointwiseLoss(ExecContext& ctx, std::string_view op, const Tensor& input, const Tensor& target,
                     Reduction reduction, double param = 0) {
  if (!ops::allF32({&input, &target}))
    return ops::viaF32(ctx, op, {&input, &target}, [&](std::span<const Tensor> f) {
      return pointwiseLoss<Row>(ctx, op, f[0], f[1], reduction, param);
    });
  const RawTensor& x = input.value();
  const RawTensor& t = target.value();
  requireSameAxes(op, x, t);
  if (x.numel() == 0 && reduction == Reduction::mean)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": mean over zero elements");
  constexpr backend::ElemOp row = backend::elemOpOf<Row>();
  const backend::ElemParams p{param};
  const std::array<const RawTensor*, 2> in{&x, &t};
  RawTensor out = backend::kernelsOf(ctx).map(ctx, row, backend::Form::fwd, x.tags(), x.shape(), in, p);
  if (reduction != Reduction::none)  // map's result is contiguous
    out = backend::kernelsOf(ctx).reduceLoss(ctx, out, reduction == Reduction::mean ? static_cast<double>(x.numel()) : 1.0);
  return ops::finishOp(ctx, op, out, {&input, &target}, [&] {
    const float scale = reduction == Reduction::mean ? 1.0f / static_cast<float>(x.numel()) : 1.0f;
    return [x, t, scale, p](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      // gy is a scalar (sum, mean) or has the loss's axes (none); map broadcasts the scalar.
      const backend::Kernels& k = backend::kernelsOf(c);
      const RawTensor gs =
          scale == 1.0f ? gy : k.map(c, backend::ElemOp::Scale, backend::Form::fwd, gy.tags(), gy.shape(),
                                     std::array<const RawTensor*, 1>{&gy}, {scale});
      const std::array<const RawTensor*, 4> ins{&gs, &x, &t, &gs};
      if (needs[0]) g[0] = k.map(c, row, backend::Form::da, x.tags(), x.shape(), ins, p);
      if (needs[1]) g[1] = k.map(c, row, backend::Form::db, x.tags(), x.shape(), ins, p);
    };
  }, static_cast<size_t>(x.numel()) * 2);
}

}  // namespace

Tensor Tensor::huberLoss(ExecContext& ctx, const Tensor& target, double delta, Reduction reduction) const {
  if (!(delta > 0))
    fail(ErrorCode::InvalidArgument, "huberLoss: delta must be > 0, got " + std::to_string(delta));
  return pointwiseLoss<backend::rows::HuberLoss>(ctx, "huberLoss", *this, target, reduction, delta);
}

Tensor Tensor::bceLoss(ExecContext& ctx, const Tensor& target, Reduction reduction) const {
  if (!ops::allF32({this, &target}))
    return ops::viaF32(ctx, "bceLoss", {this, &target}, [&](std::span<const Tensor> f) { return f[0].bceLoss(ctx, f[1], reduction); });
  const backend::Kernels::ValueFault f = backend::kernelsOf(ctx).firstValueOutside(ctx, value(), 0.0, 1.0);
  if (f.position >= 0)
    fail(ErrorCode::InvalidArgument, "bceLoss: every input must be a probability in [0, 1], got " +
                                         std::to_string(static_cast<float>(f.value)) + " in " + value().describe());
  return pointwiseLoss<backend::rows::BceLoss>(ctx, "bceLoss", *this, target, reduction);
}

Tensor Tensor::bceWithLogitsLoss(ExecContext& ctx, const Tensor& target, Reduction reduction) const {
  return pointwiseLoss<backend::rows::BceWithLogitsLoss>(ctx, "bceWithLogitsLoss", *this, target, reduction);
}

Tensor Tensor::klDivLoss(ExecContext& ctx, const Tensor& target, Reduction reduction, bool log_target) const {
  return pointwiseLoss<backend::rows::KlDivLoss>(ctx, "klDivLoss", *this, target, reduction, log_target ? 1.0 : 0.0);
}

}  // namespace fucina
