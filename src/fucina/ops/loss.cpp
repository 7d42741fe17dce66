// Losses. crossEntropy and nllLoss work row-wise over the class axis with integer labels and
// fuse their gradients; mseLoss is composed from differentiable primitives (it needs no VJP);
// huber, bce, bceWithLogits and klDiv are fused pointwise kernels, each loss beside its partials.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/cpu/softmax.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/labels.h"
#include "fucina/ops/typed.h"

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
  for (int64_t i = 0; i < out.rows(); ++i) {
    const int64_t label = out[i];
    if ((label < 0 || label >= classes) && label != ignore)
      fail(ErrorCode::IndexOutOfRange, std::string(op) + ": label " + std::to_string(label) +
                                           " at position " + std::to_string(i) + " is outside [0, " +
                                           std::to_string(classes) + ")");
  }
  return out;
}

}  // namespace ops

namespace {

float reductionScale(Reduction r, int64_t rows) {
  return r == Reduction::mean ? 1.0f / static_cast<float>(rows) : 1.0f;
}

// Reduces per-row losses (tags/shape of the rows) as asked.
RawTensor reduceRows(ExecContext& ctx, const Scratch<double>& loss, const Labels& labels, Reduction r) {
  if (r == Reduction::none) {
    RawTensor out = RawTensor::empty(ctx, labels.tags, labels.shape);
    float* o = out.f32();
    for (size_t i = 0; i < loss.size(); ++i) o[i] = static_cast<float>(loss[i]);
    return out;
  }
  double total = 0;
  for (double v : loss) total += v;
  if (r == Reduction::mean) total /= static_cast<double>(loss.size());
  return RawTensor::full(ctx, {}, {}, total);
}

// Per-row upstream gradient factor: gy (a scalar, or one value per row for Reduction::none).
RawTensor rowFactors(ExecContext& ctx, const RawTensor& gy, const Labels& labels, Reduction r, int64_t rows) {
  if (r == Reduction::none) return gy.permuted(labels.tags).contiguous(ctx);
  return RawTensor::full(ctx, {"row"}, {rows}, *gy.contiguous(ctx).f32() * reductionScale(r, rows));
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
  const RawTensor in = kernels::axisLast(ctx, value(), class_axis);
  const int64_t classes = in.extent(class_axis);
  if (classes == 0) fail(ErrorCode::InvalidArgument, "crossEntropy: the class axis is empty");
  Labels lab = readLabels(ctx, "crossEntropy", value(), labels, class_axis);
  const int64_t rows = lab.rows();
  requireRows("crossEntropy", rows, options.reduction);
  RawTensor logp = RawTensor::empty(ctx, in.tags(), in.shape());
  kernels::softmaxRows(ctx, in.f32(), logp.f32(), rows, classes, /*log=*/true);
  const Scratch<double> loss(ctx.account(), static_cast<size_t>(rows));
  const float* lp = logp.f32();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = lp + r * classes;
    double mean_logp = 0;
    if (eps > 0) {
      for (int64_t c = 0; c < classes; ++c) mean_logp += row[c];
      mean_logp /= static_cast<double>(classes);
    }
    loss[static_cast<size_t>(r)] = -((1 - eps) * row[lab[r]] + eps * mean_logp);
  }
  RawTensor out = reduceRows(ctx, loss, lab, options.reduction);
  return ops::finishOp(ctx, "crossEntropy", out, {this, &labels}, [&] {
    // d loss_r / d logits_rc = softmax_rc - target_rc, target = (1-eps)*onehot + eps/C.
    return [logp, lab = std::move(lab), options, classes, rows](ExecContext& c, const RawTensor& gy,
                                                                NeedsGrad needs, Grads g) {
      if (!needs[0]) return;
      const RawTensor factors = rowFactors(c, gy, lab, options.reduction, rows);
      const float* f = factors.f32();
      RawTensor gx = RawTensor::empty(c, logp.tags(), logp.shape());
      const float* lp = logp.f32();
      float* o = gx.f32();
      const auto smooth = static_cast<float>(options.label_smoothing / static_cast<double>(classes));
      const auto keep = static_cast<float>(1 - options.label_smoothing);
      const bool simd = kernels::vec::enabled();
      c.parallelFor(rows, std::max<int64_t>(1, 16384 / classes), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float fr = f[r];
          if (simd) {
            kernels::vec::expShiftScaleRow(lp + r * classes, classes, smooth, fr, o + r * classes);
          } else {
            for (int64_t k = 0; k < classes; ++k) o[r * classes + k] = (std::exp(lp[r * classes + k]) - smooth) * fr;
          }
          o[r * classes + lab[r]] -= keep * fr;
        }
      });
      g[0] = std::move(gx);
    };
  }, static_cast<size_t>(in.numel()) * 4);
}

Tensor Tensor::nllLoss(ExecContext& ctx, const Tensor& labels, Tag class_axis, Reduction reduction) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "nllLoss", {this}, [&](std::span<const Tensor> f) { return f[0].nllLoss(ctx, labels, class_axis, reduction); });
  const RawTensor in = kernels::axisLast(ctx, value(), class_axis);
  const int64_t classes = in.extent(class_axis);
  Labels lab = readLabels(ctx, "nllLoss", value(), labels, class_axis);
  const int64_t rows = lab.rows();
  requireRows("nllLoss", rows, reduction);
  const Scratch<double> loss(ctx.account(), static_cast<size_t>(rows));
  const float* p = in.f32();
  for (int64_t r = 0; r < rows; ++r) loss[static_cast<size_t>(r)] = -p[r * classes + lab[r]];
  RawTensor out = reduceRows(ctx, loss, lab, reduction);
  return ops::finishOp(ctx, "nllLoss", out, {this, &labels}, [&] {
    return [tags = in.tags(), shape = in.shape(), lab = std::move(lab), reduction, classes, rows](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      if (!needs[0]) return;
      const RawTensor factors = rowFactors(c, gy, lab, reduction, rows);
      const float* f = factors.f32();
      RawTensor gx = RawTensor::zeros(c, tags, shape);
      float* o = gx.f32();
      for (int64_t r = 0; r < rows; ++r) o[r * classes + lab[r]] = -f[r];
      g[0] = std::move(gx);
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

// A pointwise loss l(x, t) reduced as asked, fused: the forward is one map (plus a sum), the VJP
// one map per operand that needs a gradient, dx(x, t) and dt(x, t) being the partials of l.
template <class L, class Dx, class Dt>
Tensor pointwiseLoss(ExecContext& ctx, std::string_view op, const Tensor& input, const Tensor& target,
                     Reduction reduction, L loss, Dx dx, Dt dt) {
  if (!ops::allF32({&input, &target}))
    return ops::viaF32(ctx, op, {&input, &target}, [&](std::span<const Tensor> f) { return pointwiseLoss(ctx, op, f[0], f[1], reduction, loss, dx, dt); });
  const RawTensor& x = input.value();
  const RawTensor& t = target.value();
  requireSameAxes(op, x, t);
  if (x.numel() == 0 && reduction == Reduction::mean)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": mean over zero elements");
  RawTensor out = kernels::map2(ctx, op, x, t, loss);
  if (reduction != Reduction::none) {
    double total = 0;
    const float* o = out.f32();  // map2's result is contiguous
    for (int64_t i = 0; i < out.numel(); ++i) total += o[i];
    if (reduction == Reduction::mean) total /= static_cast<double>(x.numel());
    out = RawTensor::full(ctx, {}, {}, total);
  }
  return ops::finishOp(ctx, op, out, {&input, &target}, [&] {
    const float scale = reduction == Reduction::mean ? 1.0f / static_cast<float>(x.numel()) : 1.0f;
    return [x, t, scale, dx, dt](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      // gy is a scalar (sum, mean) or has the loss's axes (none); map broadcasts the scalar.
      const std::array<const RawTensor*, 3> ins{&gy, &x, &t};
      if (needs[0])
        g[0] = kernels::map<3>(c, x.tags(), x.shape(), ins,
                               [=](float gv, float a, float b) { return gv * scale * dx(a, b); });
      if (needs[1])
        g[1] = kernels::map<3>(c, x.tags(), x.shape(), ins,
                               [=](float gv, float a, float b) { return gv * scale * dt(a, b); });
    };
  }, static_cast<size_t>(x.numel()) * 2);
}

constexpr float kLogFloor = -100.0f;  // torch's BCELoss clamp of each log term
inline float clampedLog(float v) { return std::max(std::log(v), kLogFloor); }
// d/dv of clampedLog: 1/v where the log is not clamped, else 0.
inline float clampedLogGrad(float v) { return std::log(v) > kLogFloor ? 1.0f / v : 0.0f; }

}  // namespace

Tensor Tensor::huberLoss(ExecContext& ctx, const Tensor& target, double delta, Reduction reduction) const {
  if (!(delta > 0))
    fail(ErrorCode::InvalidArgument, "huberLoss: delta must be > 0, got " + std::to_string(delta));
  const auto dl = static_cast<float>(delta);
  // dl/dx = clamp(d, -delta, delta); dl/dt = -dl/dx.
  auto grad = [dl](float x, float t) { return std::clamp(x - t, -dl, dl); };
  return pointwiseLoss(ctx, "huberLoss", *this, target, reduction,
                       [dl](float x, float t) {
                         const float d = std::fabs(x - t);
                         return d <= dl ? 0.5f * d * d : dl * (d - 0.5f * dl);
                       },
                       grad, [grad](float x, float t) { return -grad(x, t); });
}

Tensor Tensor::bceLoss(ExecContext& ctx, const Tensor& target, Reduction reduction) const {
  if (!ops::allF32({this, &target}))
    return ops::viaF32(ctx, "bceLoss", {this, &target}, [&](std::span<const Tensor> f) { return f[0].bceLoss(ctx, f[1], reduction); });
  for (float v : dataConst())
    if (!(v >= 0.0f && v <= 1.0f))
      fail(ErrorCode::InvalidArgument, "bceLoss: every input must be a probability in [0, 1], got " +
                                           std::to_string(v) + " in " + value().describe());
  return pointwiseLoss(ctx, "bceLoss", *this, target, reduction,
                       [](float x, float t) { return -(t * clampedLog(x) + (1 - t) * clampedLog(1 - x)); },
                       [](float x, float t) { return -t * clampedLogGrad(x) + (1 - t) * clampedLogGrad(1 - x); },
                       [](float x, float) { return clampedLog(1 - x) - clampedLog(x); });
}

Tensor Tensor::bceWithLogitsLoss(ExecContext& ctx, const Tensor& target, Reduction reduction) const {
  // dl/dx = sigmoid(x) - t (sigmoid split by sign so exp never overflows); dl/dt = -x.
  return pointwiseLoss(ctx, "bceWithLogitsLoss", *this, target, reduction,
                       [](float x, float t) { return std::max(x, 0.0f) - x * t + std::log1p(std::exp(-std::fabs(x))); },
                       [](float x, float t) {
                         const float e = std::exp(-std::fabs(x));
                         return (x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e)) - t;
                       },
                       [](float x, float) { return -x; });
}

Tensor Tensor::klDivLoss(ExecContext& ctx, const Tensor& target, Reduction reduction, bool log_target) const {
  if (log_target)
    return pointwiseLoss(ctx, "klDivLoss", *this, target, reduction,
                         [](float x, float t) { return std::exp(t) * (t - x); },
                         [](float, float t) { return -std::exp(t); },
                         [](float x, float t) { return std::exp(t) * (t - x + 1); });
  return pointwiseLoss(ctx, "klDivLoss", *this, target, reduction,
                       [](float x, float t) { return t > 0 ? t * (std::log(t) - x) : 0.0f; },
                       [](float, float t) { return -t; },
                       [](float x, float t) { return t > 0 ? std::log(t) + 1 - x : -x; });
}

}  // namespace fucina
