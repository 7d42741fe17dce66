// Gated units: out = U(up)·G(gate) elementwise, where up and gate are either the two halves of one
// tensor along an axis (swiglu, geglu, glu, splitGated) or two tensors with the same axes (gated,
// situ). The gate is data (backend::GateFn, backend/gates.h); the backend's gated forward reads the
// two views, and its VJP writes both gradients, gy·U'(up)·G(gate) and gy·U(up)·G'(gate), straight
// into views of the operands' gradients, so neither makes an intermediate tensor.
#include <cmath>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

using backend::GateAct;
using backend::GateFn;

GateFn gateNamed(std::string_view op, std::string_view act) {
  if (act == "silu") return {GateAct::silu};
  if (act == "gelu") return {GateAct::geluTanh};
  if (act == "geluErf") return {GateAct::geluErf};
  if (act == "sigmoid") return {GateAct::sigmoid};
  if (act == "relu") return {GateAct::relu};
  if (act == "quickGelu") return {GateAct::quickGelu};
  fail(ErrorCode::InvalidArgument, std::string(op) + ": unknown activation '" + std::string(act) +
                                       "' (use one of silu, gelu, geluErf, sigmoid, relu, quickGelu)");
}

// Halves of x along axis: gate first unless gate_second (glu's [a | b] gates with b).
Tensor splitOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, const GateFn& f,
               bool gate_second = false) {
  if (!ops::allF32({&x}))
    return ops::viaF32(ctx, op, {&x}, [&](std::span<const Tensor> t) { return splitOp(ctx, op, t[0], axis, f, gate_second); });
  const RawTensor& a = x.value();
  const int64_t n = a.extent(axis);
  if (n % 2 != 0)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": axis '" + std::string(axis.name()) +
                                         "' must have an even extent to split into halves, got " + a.describe());
  const int64_t h = n / 2;
  const int64_t gate_at = gate_second ? h : 0, up_at = gate_second ? 0 : h;
  const RawTensor gate = a.narrowed(axis, gate_at, h);
  const RawTensor up = a.narrowed(axis, up_at, h);
  RawTensor out = backend::kernelsOf(ctx).gated(ctx, f, up, gate);
  return ops::finishOp(ctx, op, out, {&x}, [&] {
    return [gate, up, a_tags = a.tags(), a_shape = a.shape(), axis, h, gate_at, up_at, f](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor gx = RawTensor::empty(c, a_tags, a_shape);
      backend::kernelsOf(c).gatedVjp(c, f, gy, up, gate, gx.narrowed(axis, up_at, h), gx.narrowed(axis, gate_at, h));
      g[0] = std::move(gx);
    };
  }, static_cast<size_t>(a.numel()) * 2);
}

// up and gate as two tensors with the same axes, in any order.
Tensor pairOp(ExecContext& ctx, std::string_view op, const Tensor& up_t, const Tensor& gate_t, const GateFn& f) {
  if (!ops::allF32({&up_t, &gate_t}))
    return ops::viaF32(ctx, op, {&up_t, &gate_t}, [&](std::span<const Tensor> t) { return pairOp(ctx, op, t[0], t[1], f); });
  const RawTensor& up = up_t.value();
  const RawTensor& gate_raw = gate_t.value();
  bool same = up.rank() == gate_raw.rank();
  for (size_t i = 0; same && i < up.rank(); ++i)
    same = hasTag(gate_raw.tags(), up.tags()[i]) && gate_raw.extent(up.tags()[i]) == up.shape()[i];
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + ": up " + up.describe() + " and gate " + gate_raw.describe() +
                                       " must have the same axes and extents");
  const RawTensor gate = gate_raw.permuted(up.tags());
  RawTensor out = backend::kernelsOf(ctx).gated(ctx, f, up, gate);
  return ops::finishOp(ctx, op, out, {&up_t, &gate_t}, [&] {
    return [up, gate, gate_tags = gate_raw.tags(), gate_shape = gate_raw.shape(), f](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor gu = RawTensor::empty(c, up.tags(), up.shape());
      RawTensor gg = RawTensor::empty(c, gate_tags, gate_shape);
      backend::kernelsOf(c).gatedVjp(c, f, gy, up, gate, gu, gg.permuted(up.tags()));
      g[0] = std::move(gu);
      g[1] = std::move(gg);
    };
  }, static_cast<size_t>(up.numel()) * 2);
}

}  // namespace

Tensor Tensor::swiglu(ExecContext& ctx, Tag axis) const { return splitOp(ctx, "swiglu", *this, axis, {GateAct::silu}); }

Tensor Tensor::geglu(ExecContext& ctx, Tag axis) const { return splitOp(ctx, "geglu", *this, axis, {GateAct::geluErf}); }

Tensor Tensor::glu(ExecContext& ctx, Tag axis) const {
  return splitOp(ctx, "glu", *this, axis, {GateAct::sigmoid}, /*gate_second=*/true);
}

Tensor Tensor::splitGated(ExecContext& ctx, Tag axis, std::string_view act) const {
  return splitOp(ctx, "splitGated", *this, axis, gateNamed("splitGated", act));
}

Tensor Tensor::gated(ExecContext& ctx, const Tensor& gate, std::string_view act) const {
  return pairOp(ctx, "gated", *this, gate, gateNamed("gated", act));
}

Tensor Tensor::situ(ExecContext& ctx, const Tensor& gate, double c) const {
  if (!(c > 0) || !std::isfinite(c))
    fail(ErrorCode::InvalidArgument, "situ: c must be finite and > 0, got " + std::to_string(c));
  return pairOp(ctx, "situ", *this, gate, {GateAct::situ, static_cast<float>(c)});
}

}  // namespace fucina
