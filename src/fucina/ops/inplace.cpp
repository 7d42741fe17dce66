// The in-place and storage-consuming helpers (Note [In-place helpers] in
// docs/design-notes.md): inference-loop conveniences that write into, or take over, a tensor's
// buffer. None records a graph; an operand that requires grad is UnsupportedGradient.
#include <algorithm>
#include <array>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/layout.h"

namespace fucina {

using internal::RawTensor;

namespace {

void refuseGrad(std::string_view op, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    if (t->requiresGrad())
      fail(ErrorCode::UnsupportedGradient,
           std::string(op) + ": an in-place helper takes no operand that requires grad (" + t->value().describe() +
               "); use the differentiable op, or detach it");
}

// The target of an in-place write: f32, no gradient, and the only holder of its storage, so no
// view or value saved for backward sees the write (which would silently change a gradient).
const RawTensor& writable(std::string_view op, const Tensor& x) {
  const RawTensor& v = x.value();
  if (v.dtype() != DType::f32)
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": writes f32 tensors only, got " + v.describe());
  if (v.numel() > 0 && !v.isExclusive())
    fail(ErrorCode::InvalidArgument,
         std::string(op) + ": this tensor shares its storage (a view of it, or a value saved for backward, "
                           "holds it too); write into a copy (to(f32) makes one)");
  return v;
}

// Whether y broadcasts into x without growing it: each axis of y is an axis of x, same extent.
bool within(const RawTensor& x, const RawTensor& y) {
  for (size_t i = 0; i < y.rank(); ++i) {
    const auto at = std::find(x.tags().begin(), x.tags().end(), y.tags()[i]);
    if (at == x.tags().end() || x.shape()[at - x.tags().begin()] != y.shape()[i]) return false;
  }
  return true;
}

// An operand read by the in-place loop: f32 (16-bit ones widened first), axes within x's.
RawTensor readable(ExecContext& ctx, std::string_view op, const Tensor& x, const Tensor& y) {
  const RawTensor& v = y.value();
  if (!within(x.value(), v))
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": the operand " + v.describe() +
                                       " must have axes of this tensor " + x.value().describe() + " with their extents");
  if (v.dtype() != DType::f32 && v.dtype() != DType::f16 && v.dtype() != DType::bf16)
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": the operand must be f32, f16 or bf16, got " + v.describe());
  return v.dtype() == DType::f32 ? v : y.to(ctx, DType::f32).value();
}

const RawTensor& axisVector(std::string_view op, const Tensor& x, Tag axis, const Tensor& v) {
  const RawTensor& r = v.value();
  if (r.tags().size() != 1 || r.tags()[0] != axis || r.shape()[0] != x.extent(axis))
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": v must have the one axis '" + std::string(axis.name()) +
                                       "' of extent " + std::to_string(x.extent(axis)) + ", got " + r.describe());
  return r;
}

// After a write: a cached f32 copy (dataConst of a strided tensor) would be stale.
void written(const Tensor& x) { x.impl()->dropF32Cache(); }

}  // namespace

Tensor Tensor::addAxisVectorInPlace(ExecContext& ctx, Tag axis, const Tensor& v) const {
  constexpr std::string_view op = "addAxisVectorInPlace";
  refuseGrad(op, {this, &v});
  const RawTensor& dst = writable(op, *this);
  axisVector(op, *this, axis, v);
  backend::kernelsOf(ctx).addInto(ctx, dst, readable(ctx, op, *this, v));
  written(*this);
  return *this;
}

Tensor Tensor::addAxisVectorUnaryInPlace(ExecContext& ctx, Tag axis, const Tensor& v, std::string_view act) const {
  constexpr std::string_view op = "addAxisVectorUnaryInPlace";
  refuseGrad(op, {this, &v});
  const RawTensor& dst = writable(op, *this);
  axisVector(op, *this, axis, v);
  const RawTensor vf = readable(ctx, op, *this, v);
  // The op of that name computes the activation (its SIMD twin included), so the values are
  // exactly add(v).unary(act)'s; an unknown name fails before anything is written. The biased
  // values go to a contiguous temporary, not into a strided this: the activation's SIMD and
  // scalar paths differ in the last bit (geluErf), and add's result is contiguous.
  const ops::AlignedShape s = ops::alignShapes(op, dst, vf);
  const std::array<const RawTensor*, 2> in{&dst, &vf};
  const Tensor biased = Tensor::make(
      ctx, backend::kernelsOf(ctx).map(ctx, backend::ElemOp::Add, backend::Form::fwd, s.tags, s.shape, in, {}), nullptr);
  const Tensor y = biased.unary(ctx, act);
  backend::kernelsOf(ctx).copy(ctx, y.value(), dst);
  written(*this);
  return *this;
}

Tensor Tensor::addScaledInPlace(ExecContext& ctx, const Tensor& y, double alpha) const {
  constexpr std::string_view op = "addScaledInPlace";
  refuseGrad(op, {this, &y});
  const RawTensor& dst = writable(op, *this);
  const RawTensor src = readable(ctx, op, *this, y);
  const float a = static_cast<float>(alpha);
  if (a == 1.0f) backend::kernelsOf(ctx).addInto(ctx, dst, src);
  else backend::kernelsOf(ctx).updateInto(ctx, backend::ElemOp::AddScaled, dst, &src, {a});
  written(*this);
  return *this;
}

namespace {

// Runs `in_place` on x's buffer when it can hold the result (f32, its own, the result's shape:
// `same_shape`), else `fresh`; disposes x either way (its every handle).
template <class InPlace, class Fresh>
Tensor consume(ExecContext& ctx, const Tensor& x, bool same_shape, InPlace in_place, Fresh fresh) {
  const RawTensor& v = x.value();
  Tensor out;
  if (same_shape && v.dtype() == DType::f32 && v.isExclusive() && v.numel() > 0) {
    in_place(v);
    out = Tensor::make(ctx, v, nullptr);
  } else {
    out = fresh();
  }
  Tensor(x).dispose();
  return out;
}

}  // namespace

Tensor Tensor::takeAddNoGrad(ExecContext& ctx, const Tensor& y) const {
  constexpr std::string_view op = "takeAddNoGrad";
  refuseGrad(op, {this, &y});
  const DType d = y.dtype();
  const bool fits = within(value(), y.value()) && (d == DType::f32 || d == DType::f16 || d == DType::bf16);
  return consume(ctx, *this, fits,
                 [&](const RawTensor& dst) { backend::kernelsOf(ctx).addInto(ctx, dst, readable(ctx, op, *this, y)); },
                 [&] { return add(ctx, y); });
}

Tensor Tensor::takeScaleNoGrad(ExecContext& ctx, double factor) const {
  refuseGrad("takeScaleNoGrad", {this});
  const float f = static_cast<float>(factor);
  return consume(ctx, *this, true,
                 [&](const RawTensor& dst) { backend::kernelsOf(ctx).updateInto(ctx, backend::ElemOp::Scale, dst, nullptr, {f}); },
                 [&] { return scale(ctx, factor); });
}

SortResult Tensor::routerTopK(ExecContext& ctx, Tag axis, int64_t k) const {
  refuseGrad("routerTopK", {this});
  const int64_t n = extent(axis);
  if (k < 1 || k > n)
    fail(ErrorCode::InvalidArgument, "routerTopK: k must be in [1, " + std::to_string(n) + "] (the experts along '" +
                                         std::string(axis.name()) + "'), got " + std::to_string(k));
  SortResult top = softmax(ctx, axis).topK(ctx, axis, k);
  top.values = top.values.div(ctx, top.values.sum(ctx, axis));
  return top;
}

}  // namespace fucina
