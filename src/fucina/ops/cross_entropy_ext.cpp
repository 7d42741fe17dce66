// crossEntropyExt (torch's cross_entropy with every option, plus a z-loss) and the chunked linear
// heads built on the same rows: linearCrossEntropyExt and linearDistillExt. Each loss is computed
// row by row from a row's log-softmax and logsumexp (Kernels::crossEntropyRows, distillRows); each
// gradient is fused, per row f·(a·softmax - b) (f the upstream factor of the row, a and b from the
// target). The linear heads compute the logits options.chunk_rows rows at a time with one
// contraction and recompute them in the backward pass, so neither the logits nor their gradient
// exist whole.
#include <algorithm>
#include <cmath>
#include <limits>
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
using CrossEntropy = backend::Kernels::CrossEntropy;
using Distill = backend::Kernels::Distill;
using Divisor = backend::Kernels::Divisor;

namespace {

// The options checked and the class weights laid out for the rows (CrossEntropyExtOptions'
// comment); the target is the caller's.
CrossEntropy ceRows(ExecContext& ctx, std::string_view op, const CrossEntropyExtOptions& o, Tag class_axis,
                    int64_t C) {
  if (!(o.label_smoothing >= 0.0 && o.label_smoothing < 1.0))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": label_smoothing must be in [0, 1), got " +
                                         std::to_string(o.label_smoothing));
  if (!(o.z_loss >= 0.0) || !std::isfinite(o.z_loss))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": z_loss must be finite and >= 0, got " + std::to_string(o.z_loss));
  if (C == 0) fail(ErrorCode::InvalidArgument, std::string(op) + ": the class axis is empty");
  CrossEntropy r;
  r.smoothing = o.label_smoothing;
  r.z_loss = o.z_loss;
  r.ignore = o.ignore_index;
  if (o.weight == nullptr) return r;
  const Tensor& w = *o.weight;
  if (w.rank() != 1 || !(w.tags()[0] == class_axis) || w.shape()[0] != C)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the class weight must have the single axis " +
                                       quoted(class_axis) + " of extent " + std::to_string(C) + ", got " +
                                       w.value().describe());
  if (w.requiresGrad() && isGradEnabled())
    fail(ErrorCode::UnsupportedGradient, std::string(op) + ": the class weight takes no gradient; detach it");
  if (w.dtype() != DType::f32) ops::typedResult(op, {&w});  // 16-bit converts below; others fail
  r.weights = w.value().to(ctx, DType::f32).contiguous(ctx);
  return r;
}

// The per-row losses (over tags and shape: f64 on the host, f32 on a device) reduced as asked: a
// scalar (sum; mean divides by denom), or the rows as f32.
RawTensor reduceRows(ExecContext& ctx, const RawTensor& loss, const Tags& tags, const Extents& shape, Reduction r,
                     const Divisor& denom) {
  const backend::Kernels& k = backend::kernelsOf(ctx);
  if (r == Reduction::none) {
    RawTensor out = RawTensor::empty(ctx, tags, shape);
    k.copy(ctx, loss, out);
    return out;
  }
  return k.reduceLoss(ctx, loss, r == Reduction::mean ? denom : Divisor(1.0));
}

// The upstream gradient as the rows' VJPs take it: gy's rows in the order of tags
// (Reduction::none), else the scalar gy.
RawTensor rowGrads(ExecContext& ctx, const RawTensor& gy, const Tags& tags, Reduction r) {
  return r == Reduction::none ? gy.permuted(tags).contiguous(ctx) : gy.contiguous(ctx);
}

// The row axes of logits laid out with the class axis last.
Tags rowTags(const RawTensor& rows_last) { return Tags(rows_last.tags().begin(), rows_last.tags().end() - 1); }
Extents rowShape(const RawTensor& rows_last) { return Extents(rows_last.shape().begin(), rows_last.shape().end() - 1); }

// ShapeMismatch unless t has the logits' axes and extents (any order).
void requireLogitsAxes(std::string_view op, const char* what, const RawTensor& t, const RawTensor& logits) {
  bool same = t.rank() == logits.rank();
  for (size_t i = 0; same && i < logits.rank(); ++i)
    same = hasTag(t.tags(), logits.tags()[i]) && t.extent(logits.tags()[i]) == logits.shape()[i];
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": " + what + " " + t.describe() + " must have the logits' axes " +
                                       logits.describe());
}

}  // namespace

Tensor Tensor::crossEntropyExt(ExecContext& ctx, const Tensor& target, Tag class_axis,
                               const CrossEntropyExtOptions& o) const {
  static constexpr std::string_view op = "crossEntropyExt";
  const bool soft = !ops::isInteger(target.dtype());
  if (soft && !ops::allF32({this, &target}))
    return ops::viaF32(ctx, op, {this, &target}, [&](std::span<const Tensor> f) { return f[0].crossEntropyExt(ctx, f[1], class_axis, o); });
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, op, {this}, [&](std::span<const Tensor> f) { return f[0].crossEntropyExt(ctx, target, class_axis, o); });
  const RawTensor in = ops::axisLast(ctx, value(), class_axis);
  const int64_t C = in.extent(class_axis);
  CrossEntropy ce = ceRows(ctx, op, o, class_axis, C);
  const int64_t rows = in.numel() / C;
  if (soft) {
    requireLogitsAxes(op, "soft targets", target.value(), in);
    ce.target = target.value().permuted(in.tags()).contiguous(ctx);
  } else {
    ce.target = ops::readLabels(ctx, op, value(), target, class_axis, o.ignore_index).values;
  }
  const backend::Kernels& k = backend::kernelsOf(ctx);
  const backend::Kernels::CrossEntropyRows fwd = k.crossEntropyRows(ctx, in, ce, /*in_place=*/false);
  // Only the labels' mean divides by their weight sum (on a device, a tensor there).
  const Divisor denom = soft ? Divisor(static_cast<double>(rows))
                        : o.reduction == Reduction::mean ? k.labelWeightSum(ctx, ce.target, ce.weights, ce.ignore)
                                                         : Divisor(1.0);
  RawTensor out = reduceRows(ctx, fwd.loss, rowTags(in), rowShape(in), o.reduction, denom);
  return ops::finishOp(ctx, op, std::move(out), {this, &target}, [&] {
    return [logp = fwd.logp, lse = fwd.lse, ce = std::move(ce), reduction = o.reduction, denom, soft](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor f = rowGrads(c, gy, rowTags(logp), reduction);
      backend::Kernels::CrossEntropyGrads grads = backend::kernelsOf(c).crossEntropyRowsVjp(
          c, logp, lse, ce, f, reduction == Reduction::mean ? denom : Divisor(1.0), needs[0], needs[1] && soft,
          /*in_place=*/false);
      if (grads.x.valid()) g[0] = std::move(grads.x);  // laid out as logp; the engine restores the axis order
      if (grads.target.valid()) g[1] = std::move(grads.target);
    };
  }, static_cast<size_t>(in.numel()) * 6);
}

namespace {

// A linear head's operands laid out for contractions: X [R, d] over {row, axis} (x's row axes
// folded, in x's order, into the one axis `row`) and W [V, d] over {class_axis, axis}; the logits
// X·Wᵀ have the row axes then class_axis.
struct LinearHead {
  RawTensor X, W;
  Tags row_tags, x_tags;  // x's row axes; then axis (X before folding)
  Extents row_shape, x_shape;
  Tag row = "row", axis = "axis", class_axis = "class";
  int64_t R = 0, d = 0, V = 0, chunk = 1;

  // A zero-stride stand-in for the logits (row axes, then class_axis), for their shape only.
  RawTensor logitsShape(ExecContext& ctx) const {
    Tags t = row_tags;
    Extents s = row_shape;
    t.push_back(class_axis);
    s.push_back(V);
    return RawTensor::full(ctx, {}, {}, 0.0).broadcastView(t, s);
  }

  // t (contiguous over the row axes in row_tags' order, then any further axes) with the row axes
  // folded into `row`, and back.
  RawTensor folded(const RawTensor& t) const {
    Tags tags{row};
    Extents shape{R};
    for (size_t i = row_tags.size(); i < t.rank(); ++i) tags.push_back(t.tags()[i]), shape.push_back(t.shape()[i]);
    return RawTensor::view(t.storage(), t.dtype(), tags, shape, contiguousStrides(shape), t.offset());
  }
  RawTensor unfolded(const RawTensor& t) const {
    Tags tags = row_tags;
    Extents shape = row_shape;
    for (size_t i = 1; i < t.rank(); ++i) tags.push_back(t.tags()[i]), shape.push_back(t.shape()[i]);
    return RawTensor::view(t.storage(), t.dtype(), tags, shape, contiguousStrides(shape), t.offset());
  }
  // Rows [r0, r0 + n) of a folded tensor; a scalar (an upstream gradient) is every row's.
  RawTensor rows(const RawTensor& t, int64_t r0, int64_t n) const {
    return t.rank() == 0 ? t : t.narrowed(row, r0, n);
  }

  // Calls chunk_fn(r0, n, logits) for each chunk of n rows from r0, logits [n, V] over
  // {row, class_axis} (fresh, exclusively owned: chunk_fn may overwrite them); then, when gX / gW
  // are given, G = chunk_fn's result: gX's rows = G·W and gW += Gᵀ·X. Only one chunk's logits
  // exist at a time.
  template <class Chunk>
  void forEachChunk(ExecContext& ctx, Chunk chunk_fn, const RawTensor* gX = nullptr, RawTensor* gW = nullptr) const {
    const backend::Kernels& k = backend::kernelsOf(ctx);
    for (int64_t r0 = 0; r0 < R; r0 += chunk) {
      const int64_t n = std::min(chunk, R - r0);
      const RawTensor x = X.narrowed(row, r0, n);
      const RawTensor G = chunk_fn(r0, n, k.contract(ctx, x, W, {axis}, RawTensor()));
      if (gX) k.copy(ctx, k.contract(ctx, G, W, {class_axis}, RawTensor()), gX->narrowed(row, r0, n));
      if (gW) *gW = k.contract(ctx, G, x, {row}, *gW);  // the first chunk's product starts the sum
    }
  }

  // Each row's loss from chunks' rows (a backend's row losses: f64 on the host, f32 on a device),
  // row r0 of the chunk first; an empty f32 when there are no rows.
  template <class Rows>
  RawTensor rowLosses(ExecContext& ctx, Rows rows_fn) const {
    const backend::Kernels& k = backend::kernelsOf(ctx);
    RawTensor loss;
    forEachChunk(ctx, [&](int64_t r0, int64_t n, const RawTensor& logits) {
      const RawTensor part = rows_fn(r0, n, logits);
      if (!loss.valid()) loss = RawTensor::empty(ctx, {row}, {R}, part.dtype());
      k.copy(ctx, part, rows(loss, r0, n));
      return RawTensor();
    });
    return loss.valid() ? unfolded(loss) : RawTensor::empty(ctx, row_tags, row_shape);
  }

  // The gradients of x and W (those asked for) from a chunk function returning each chunk's
  // logit gradient.
  template <class Chunk>
  void backward(ExecContext& ctx, NeedsGrad needs, Grads g, Chunk chunk_fn) const {
    RawTensor gx = needs[0] ? RawTensor::empty(ctx, x_tags, x_shape) : RawTensor();
    const RawTensor gx_rows = needs[0] ? folded(gx) : RawTensor();
    RawTensor gw;
    forEachChunk(ctx, chunk_fn, needs[0] ? &gx_rows : nullptr, needs[1] ? &gw : nullptr);
    if (needs[0]) g[0] = std::move(gx);
    if (needs[1]) g[1] = gw.valid() ? std::move(gw) : RawTensor::zeros(ctx, W.tags(), W.shape());
  }
};

// An axis name that is neither a nor b.
Tag freshTag(Tag a, Tag b) {
  std::string name = "row";
  while (Tag(name) == a || Tag(name) == b) name += "_";
  return Tag(name);
}

LinearHead linearHead(ExecContext& ctx, std::string_view op, const Tensor& x, const Tensor& weight, Tag axis,
                      Tag class_axis, int64_t chunk) {
  const RawTensor& a = x.value();
  const RawTensor& w = weight.value();
  if (chunk < 1) fail(ErrorCode::InvalidArgument, std::string(op) + ": chunk_rows must be >= 1, got " + std::to_string(chunk));
  if (w.rank() != 2 || !hasTag(w.tags(), axis) || !hasTag(w.tags(), class_axis) || axis == class_axis)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the weight must have exactly the axes " + quoted(class_axis) +
                                       " and " + quoted(axis) + ", got " + w.describe());
  if (!hasTag(a.tags(), axis) || hasTag(a.tags(), class_axis) || a.extent(axis) != w.extent(axis))
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the input " + a.describe() + " must have " + quoted(axis) +
                                       " (extent " + std::to_string(w.extent(axis)) + ") and not " +
                                       quoted(class_axis));
  LinearHead h;
  h.axis = axis;
  h.class_axis = class_axis;
  h.row = freshTag(axis, class_axis);
  for (size_t i = 0; i < a.rank(); ++i)
    if (!(a.tags()[i] == axis)) h.row_tags.push_back(a.tags()[i]), h.row_shape.push_back(a.shape()[i]);
  h.x_tags = h.row_tags;
  h.x_tags.push_back(axis);
  h.x_shape = h.row_shape;
  h.x_shape.push_back(a.extent(axis));
  h.d = w.extent(axis);
  h.V = w.extent(class_axis);
  h.R = numelOf(h.row_shape);
  h.chunk = chunk;
  h.X = h.folded(a.permuted(h.x_tags).contiguous(ctx));
  h.W = w.permuted({class_axis, axis}).contiguous(ctx);
  return h;
}

}  // namespace

Tensor Tensor::linearCrossEntropyExt(ExecContext& ctx, const Tensor& weight, const Tensor& labels, Tag axis,
                                     Tag class_axis, const CrossEntropyExtOptions& o) const {
  static constexpr std::string_view op = "linearCrossEntropyExt";
  if (!ops::allF32({this, &weight}))
    return ops::viaF32(ctx, op, {this, &weight}, [&](std::span<const Tensor> f) {
      return f[0].linearCrossEntropyExt(ctx, f[1], labels, axis, class_axis, o);
    });
  if (!ops::isInteger(labels.dtype()))
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": labels must be i32 or i64 (soft targets are crossEntropyExt's), got " +
                                       std::string(name(labels.dtype())));
  LinearHead h = linearHead(ctx, op, *this, weight, axis, class_axis, o.chunk_rows);
  CrossEntropy ce = ceRows(ctx, op, o, class_axis, h.V);
  ce.target = h.folded(ops::readLabels(ctx, op, h.logitsShape(ctx), labels, class_axis, o.ignore_index).values);
  const backend::Kernels& k = backend::kernelsOf(ctx);
  const RawTensor loss = h.rowLosses(ctx, [&](int64_t r0, int64_t n, const RawTensor& logits) {
    CrossEntropy rows = ce;
    rows.target = h.rows(ce.target, r0, n);
    return k.crossEntropyRows(ctx, logits, rows, /*in_place=*/true).loss;
  });
  const Divisor denom =
      o.reduction == Reduction::mean ? k.labelWeightSum(ctx, ce.target, ce.weights, ce.ignore) : Divisor(1.0);
  RawTensor out = reduceRows(ctx, loss, h.row_tags, h.row_shape, o.reduction, denom);
  return ops::finishOp(ctx, op, std::move(out), {this, &weight}, [&] {
    return [h = std::move(h), ce = std::move(ce), reduction = o.reduction, denom](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor f = rowGrads(c, gy, h.row_tags, reduction);
      const RawTensor f_rows = reduction == Reduction::none ? h.folded(f) : f;
      h.backward(c, needs, g, [&](int64_t r0, int64_t n, const RawTensor& logits) {
        CrossEntropy rows = ce;
        rows.target = h.rows(ce.target, r0, n);
        // No saved logsumexps: the rows' log-softmax is recomputed, then overwritten by the gradient.
        return backend::kernelsOf(c)
            .crossEntropyRowsVjp(c, logits, RawTensor(), rows, h.rows(f_rows, r0, n), denom, true, false,
                                 /*in_place=*/true)
            .x;
      });
    };
  }, static_cast<size_t>(6 * h.R * h.V * std::max<int64_t>(1, h.d)));
}

Tensor Tensor::linearDistillExt(ExecContext& ctx, const Tensor& weight, const Tensor& teacher, Tag axis, Tag class_axis,
                                const DistillOptions& o) const {
  static constexpr std::string_view op = "linearDistillExt";
  if (!ops::allF32({this, &weight, &teacher}))
    return ops::viaF32(ctx, op, {this, &weight, &teacher}, [&](std::span<const Tensor> f) {
      return f[0].linearDistillExt(ctx, f[1], f[2], axis, class_axis, o);
    });
  if (!(o.temperature > 0) || !std::isfinite(o.temperature))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": temperature must be finite and > 0, got " + std::to_string(o.temperature));
  if (!(o.alpha >= 0 && o.alpha <= 1))
    fail(ErrorCode::InvalidArgument, std::string(op) + ": alpha must be in [0, 1], got " + std::to_string(o.alpha));
  if (o.alpha > 0 && o.labels == nullptr)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": alpha > 0 mixes in the hard-label loss and needs labels");
  if (teacher.requiresGrad() && isGradEnabled())
    fail(ErrorCode::UnsupportedGradient, std::string(op) + ": the teacher takes no gradient; detach it");
  LinearHead h = linearHead(ctx, op, *this, weight, axis, class_axis, o.chunk_rows);
  if (h.V == 0) fail(ErrorCode::InvalidArgument, std::string(op) + ": the class axis is empty");
  const RawTensor logits = h.logitsShape(ctx);
  const RawTensor& t = teacher.value();
  requireLogitsAxes(op, "the teacher", t, logits);
  const bool hard = o.alpha > 0;
  const backend::Kernels& k = backend::kernelsOf(ctx);
  // The teacher's distribution p at temperature T as [R, V], saved for the backward pass (the
  // teacher is whole already, so chunking it would not lower the peak).
  RawTensor tp = t.permuted(logits.tags()).contiguous(ctx);
  if (!o.teacher_probs) tp = k.temperatureSoftmaxRows(ctx, tp, static_cast<float>(1.0 / o.temperature));
  Distill dist;
  dist.probs = h.folded(tp);
  if (hard) dist.labels = h.folded(ops::readLabels(ctx, op, logits, *o.labels, class_axis, o.ignore_index).values);
  dist.temperature = o.temperature;
  dist.alpha = o.alpha;
  dist.ignore = o.ignore_index;
  if (o.reduction == Reduction::mean) {
    // The mean is in the per-row terms: KD over every row, CE over the counted rows.
    dist.kd_div = static_cast<double>(h.R);
    dist.ce_div = hard ? k.labelWeightSum(ctx, dist.labels, RawTensor(), dist.ignore) : Divisor(0.0);
  }
  const RawTensor loss = h.rowLosses(ctx, [&](int64_t r0, int64_t n, const RawTensor& chunk_logits) {
    Distill rows = dist;
    rows.probs = h.rows(dist.probs, r0, n);
    if (hard) rows.labels = h.rows(dist.labels, r0, n);
    return k.distillRows(ctx, chunk_logits, rows);
  });
  RawTensor out = reduceRows(ctx, loss, h.row_tags, h.row_shape,
                             o.reduction == Reduction::mean ? Reduction::sum : o.reduction, 1.0);
  return ops::finishOp(ctx, op, std::move(out), {this, &weight, &teacher}, [&] {
    return [h = std::move(h), dist = std::move(dist), reduction = o.reduction, hard](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor f = rowGrads(c, gy, h.row_tags, reduction);
      const RawTensor f_rows = reduction == Reduction::none ? h.folded(f) : f;
      h.backward(c, needs, g, [&](int64_t r0, int64_t n, const RawTensor& chunk_logits) {
        Distill rows = dist;
        rows.probs = h.rows(dist.probs, r0, n);
        if (hard) rows.labels = h.rows(dist.labels, r0, n);
        return backend::kernelsOf(c).distillRowsVjp(c, chunk_logits, rows, h.rows(f_rows, r0, n));
      });
    };
  }, static_cast<size_t>(6 * h.R * h.V * std::max<int64_t>(1, h.d)));
}

}  // namespace fucina
