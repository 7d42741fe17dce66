#include "fucina/backend/kernels.h"

#include <array>
#include <cmath>
#include <string>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend {

const Kernels& kernelsFor(Backend backend) {
  switch (backend) {
    case Backend::reference: return referenceKernels();
    case Backend::webgpu: return webgpuKernels();
    case Backend::cpu: break;
  }
  return cpuKernels();
}

const Kernels& kernelsOf(const ExecContext& ctx) { return kernelsFor(ctx.backend()); }

double Kernels::Divisor::host() const {
  if (tensor.valid()) fail(ErrorCode::DeviceMismatch, "a loss divisor on a device reached a host backend");
  return value;
}

RawTensor Kernels::moveSlices(ExecContext& ctx, SliceMove how, const RawTensor& src, Tag axis, Tag by_axis,
                              const RawTensor& shifts, bool adjoint) const {
  const std::vector<int64_t> k = readI64(ctx, shifts);
  RawTensor out = RawTensor::empty(ctx, src.tags(), src.shape(), src.dtype());
  const int64_t n = src.extent(axis);
  for (size_t b = 0; b < k.size(); ++b) {
    const auto i = static_cast<int64_t>(b);
    const RawTensor from = src.narrowed(by_axis, i, 1), to = out.narrowed(by_axis, i, 1);
    if (how == SliceMove::roll) {
      const int64_t w = wrapShift(k[b], n);
      rollInto(ctx, from, to, axis, adjoint ? wrapShift(n - w, n) : w);
    } else {
      const int64_t m = clampShift(k[b], n);
      shiftInto(ctx, from, to, axis, adjoint ? -m : m);
    }
  }
  return out;
}

RawTensor flatView(const RawTensor& t, Tag tag) {
  return RawTensor::view(t.storage(), t.dtype(), {tag}, {t.numel()}, {1}, t.offset());
}

namespace {
constexpr const char* kPosition = "position";
}  // namespace

Kernels::MaskedScatter Kernels::maskedScatter(ExecContext& ctx, const RawTensor& a, const RawTensor& mask,
                                              const RawTensor& src) const {
  RawTensor pos = maskPositions(ctx, mask, kPosition);
  if (src.numel() < pos.numel())
    fail(ErrorCode::ShapeMismatch, "maskedScatter: the mask sets " + std::to_string(pos.numel()) +
                                       " elements but the source " + src.describe() + " has only " +
                                       std::to_string(src.numel()));
  RawTensor out = a.clone(ctx);
  // The source's first count elements, in order.
  updateRows(ctx, flatView(out, kPosition), kPosition, pos, flatView(src, kPosition).narrowed(kPosition, 0, pos.numel()),
             RowUpdate::assign);
  return {std::move(out), std::move(pos)};
}

Kernels::MaskedScatterGrads Kernels::maskedScatterVjp(ExecContext& ctx, const RawTensor& where, const RawTensor& gy,
                                                      const Tags& src_tags, const Extents& src_shape, bool need_a,
                                                      bool need_src) const {
  MaskedScatterGrads g;
  if (need_a) {
    g.a = gy.clone(ctx);
    updateRows(ctx, flatView(g.a, kPosition), kPosition, where, RawTensor(), RowUpdate::zero);
  }
  if (need_src) {
    g.src = RawTensor::zeros(ctx, src_tags, src_shape);
    // gy at the positions, added into the zeros of the source's first elements (a copy but for
    // the sign of a zero).
    addInto(ctx, flatView(g.src, kPosition).narrowed(kPosition, 0, where.numel()),
            selectRows(ctx, flatView(gy.contiguous(ctx), kPosition), kPosition, where));
  }
  return g;
}

Kernels::ConvGrads Kernels::conv2dVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& relu_y, const RawTensor& x,
                                      const RawTensor& w, const ConvPlan& p, const ConvGradLayout& layout,
                                      bool bias) const {
  const std::array<const RawTensor*, 3> masked{&gy, &relu_y, &relu_y};  // relu's (g, a, y): a > 0 iff y > 0
  const RawTensor g = relu_y.valid() ? map(ctx, ElemOp::Relu, Form::da, gy.tags(), gy.shape(), masked, {}) : gy;
  ConvGrads r;
  if (bias) r.bias = sumTo(ctx, g, layout.b_tags, layout.b_shape);
  if (g.numel() == 0) {  // as in the forward: zeros, without a loop over the images
    if (w.valid()) r.x = RawTensor::zeros(ctx, layout.x_tags, layout.x_shape);
    if (x.valid()) r.w = RawTensor::zeros(ctx, layout.w_tags, layout.w_shape);
    return r;
  }
  if (w.valid()) r.x = conv2dInputGrad(ctx, g, w, p, layout.x_tags, layout.x_shape);
  if (x.valid()) r.w = conv2dWeightGrad(ctx, x, g, p, layout.w_tags, layout.w_shape);
  return r;
}

Kernels::Pooled Kernels::conv2dReluPool(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p,
                                        const Tags& tags, const Extents& shape, const RawTensor& bias,
                                        const Conv2dGeometry& pool, size_t trailing, bool argmax) const {
  return pool2d(ctx, Pool::max, conv2d(ctx, x, w, p, tags, shape, bias, true), pool, trailing, argmax);
}

Kernels::ConvGrads Kernels::conv2dReluPoolVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& pooled,
                                              const RawTensor& argmax, const RawTensor& x, const RawTensor& w,
                                              const ConvPlan& p, const Conv2dGeometry& pool, size_t trailing,
                                              const ConvGradLayout& layout, bool bias) const {
  const std::array<const RawTensor*, 3> masked{&gy, &pooled, &pooled};  // as conv2dVjp's relu mask
  const RawTensor g = map(ctx, ElemOp::Relu, Form::da, gy.tags(), gy.shape(), masked, {});
  return conv2dVjp(ctx, pool2dVjp(ctx, Pool::max, g, argmax, pool, trailing), RawTensor(), x, w, p, layout, bias);
}

void rollInto(ExecContext& ctx, const RawTensor& src, const RawTensor& dst, Tag axis, int64_t s) {
  const int64_t n = src.extent(axis);
  const Kernels& b = kernelsOf(ctx);
  b.copy(ctx, src.narrowed(axis, 0, n - s), dst.narrowed(axis, s, n - s));
  b.copy(ctx, src.narrowed(axis, n - s, s), dst.narrowed(axis, 0, s));
}

void shiftInto(ExecContext& ctx, const RawTensor& src, const RawTensor& dst, Tag axis, int64_t k) {
  const int64_t n = src.extent(axis);
  const int64_t kept = n - (k < 0 ? -k : k);
  const Kernels& b = kernelsOf(ctx);
  b.copy(ctx, src.narrowed(axis, k < 0 ? -k : 0, kept), dst.narrowed(axis, k < 0 ? 0 : k, kept));
  b.fill(ctx, dst.narrowed(axis, k < 0 ? kept : 0, n - kept), 0.0);
}

int64_t wrapShift(int64_t shift, int64_t n) {
  if (n == 0) return 0;
  const int64_t r = shift % n;
  return r < 0 ? r + n : r;
}

int64_t clampShift(int64_t shift, int64_t n) { return shift > n ? n : shift < -n ? -n : shift; }

Kernels::GradNorm Kernels::gradNorm(ExecContext& ctx, std::span<const RawTensor> grads, double max_norm) const {
  double sum_sq = 0;
  for (const RawTensor& g : grads) sum_sq += sumSquares(ctx, g);
  const double total = std::sqrt(sum_sq);
  GradNorm r{RawTensor::empty(ctx, {}, {}), RawTensor::empty(ctx, {}, {})};
  r.norm.f32()[0] = static_cast<float>(total);
  r.factor.f32()[0] = clipFactor(total, max_norm);
  return r;
}

const char* name(ElemOp op) {
  static constexpr std::array<const char*, kElemOpCount> kNames{
#define FUCINA_ELEM_NAME(row) #row,
      FUCINA_ELEMENTWISE_ROWS(FUCINA_ELEM_NAME)
#undef FUCINA_ELEM_NAME
  };
  return kNames[static_cast<size_t>(op)];
}

RawTensor sumTo(ExecContext& ctx, const RawTensor& a, const Tags& tags, const Extents& shape) {
  Tags reduced;
  for (Tag tag : a.tags())
    if (!hasTag(tags, tag)) reduced.push_back(tag);
  for (size_t i = 0; i < tags.size(); ++i) {
    if (!hasTag(a.tags(), tags[i]) || a.extent(tags[i]) != shape[i])
      fail(ErrorCode::ShapeMismatch, "cannot reduce " + a.describe() + " to " +
                                         describe(tags, shape));
  }
  RawTensor s = reduced.empty() ? a : kernelsOf(ctx).sumAxes(ctx, a, reduced);
  if (s.tags() == tags && s.isContiguous()) return s;
  return s.permuted(tags).contiguous(ctx);
}

std::pair<Tags, Extents> withIndexAxes(const RawTensor& t, size_t p, const RawTensor& ix) {
  Tags tags;
  Extents shape;
  for (size_t i = 0; i < t.rank(); ++i) {
    if (i == p) {
      tags.insert(tags.end(), ix.tags().begin(), ix.tags().end());
      shape.insert(shape.end(), ix.shape().begin(), ix.shape().end());
    } else {
      tags.push_back(t.tags()[i]);
      shape.push_back(t.shape()[i]);
    }
  }
  return {std::move(tags), std::move(shape)};
}

RowLayout rowLayout(const RawTensor& t) {
  const int64_t n = t.rank() == 0 ? 1 : t.shape().back();
  return {n == 0 ? 0 : t.numel() / n, n};
}

RowLayout recurrenceLayout(const RawTensor& x, const RawTensor& h0) {
  return {h0.numel(), x.rank() == 0 ? 1 : x.shape().back()};
}

void failNoForm(ElemOp op, Form form) {
  fail(ErrorCode::InvalidArgument, std::string("elementwise row ") + name(op) + " has no form " +
                                       std::to_string(static_cast<int>(form)));
}

void failNotInPlace(ElemOp op) {
  fail(ErrorCode::InvalidArgument, std::string("elementwise row ") + name(op) + " is not computed in place");
}

void failNoDTypeForm(ElemOp op, DType dtype) {
  fail(ErrorCode::DTypeMismatch, std::string("elementwise row ") + name(op) + " has no forward in " +
                                     std::string(fucina::name(dtype)));
}

}  // namespace fucina::backend
