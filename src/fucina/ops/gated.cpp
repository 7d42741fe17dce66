// Gated units: out = U(up)·G(gate) elementwise, where up and gate are either the two halves of one
// tensor along an axis (swiglu, geglu, glu, splitGated) or two tensors with the same axes (gated,
// situ). The forward is one map over two views; the VJP writes both gradients, gy·U'(up)·G(gate)
// and gy·U(up)·G'(gate), in one strided pass, so neither makes an intermediate tensor.
#include <algorithm>
#include <cmath>
#include <string>

#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/cpu/strided.h"
#include "fucina/backend/activation.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// The activations a gate takes by name, each with its derivative.
struct Silu {
  static float f(float x) { return backend::act::silu(x); }
  static float df(float x) { return backend::act::siluGrad(x); }
};
struct GeluTanh {
  static float f(float x) { return backend::act::geluTanh(x); }
  static float df(float x) { return backend::act::geluTanhGrad(x); }
};
struct GeluErf {
  static float f(float x) { return backend::act::geluErf(x); }
  static float df(float x) { return backend::act::geluErfGrad(x); }
};
struct Sigmoid {
  static float f(float x) { return backend::act::logistic(x); }
  static float df(float x) {
    const float s = backend::act::logistic(x);
    return s * (1.0f - s);
  }
};
struct Relu {
  static float f(float x) { return x > 0 ? x : 0.0f; }
  static float df(float x) { return x > 0 ? 1.0f : 0.0f; }
};
struct QuickGelu {
  static float f(float x) { return x * backend::act::logistic(1.702f * x); }
  static float df(float x) {
    const float s = backend::act::logistic(1.702f * x);
    return s + 1.702f * x * s * (1.0f - s);
  }
};

// The factors of out = u(up)·g(gate) and their derivatives: a plain gate has u = identity.
template <class Act>
struct Gate {
  float u(float x) const { return x; }
  float du(float) const { return 1.0f; }
  float g(float x) const { return Act::f(x); }
  float dg(float x) const { return Act::df(x); }
};

// situ: u = c·tanh(up/c), g = c·tanh(silu(gate)/c).
struct Situ {
  float c;
  float u(float x) const { return c * std::tanh(x / c); }
  float du(float x) const {
    const float t = std::tanh(x / c);
    return 1.0f - t * t;
  }
  float g(float x) const { return u(backend::act::silu(x)); }
  float dg(float x) const { return du(backend::act::silu(x)) * backend::act::siluGrad(x); }
};

// A gate chosen by name at run time (gated, splitGated): the activation through function
// pointers, so the kernels are instantiated once for all six, not once per activation (swiglu,
// geglu and glu keep their inlined Gate<Act>).
struct NamedGate {
  float (*act)(float);
  float (*act_grad)(float);
  float u(float x) const { return x; }
  float du(float) const { return 1.0f; }
  float g(float x) const { return act(x); }
  float dg(float x) const { return act_grad(x); }
};

NamedGate gateNamed(std::string_view op, std::string_view act) {
  if (act == "silu") return {Silu::f, Silu::df};
  if (act == "gelu") return {GeluTanh::f, GeluTanh::df};
  if (act == "geluErf") return {GeluErf::f, GeluErf::df};
  if (act == "sigmoid") return {Sigmoid::f, Sigmoid::df};
  if (act == "relu") return {Relu::f, Relu::df};
  if (act == "quickGelu") return {QuickGelu::f, QuickGelu::df};
  fail(ErrorCode::InvalidArgument, std::string(op) + ": unknown activation '" + std::string(act) +
                                       "' (use one of silu, gelu, geluErf, sigmoid, relu, quickGelu)");
}

// out = F.u(up)·F.g(gate) over up's axes (gate is already laid out with them); the VJP writes
// gy·F.du(up)·F.g(gate) into gup and gy·F.u(up)·F.dg(gate) into ggate, views of the gradients.
template <class F>
RawTensor gatedForward(ExecContext& ctx, const RawTensor& up, const RawTensor& gate, const F& f) {
  return kernels::map<2>(ctx, up.tags(), up.shape(), {&up, &gate},
                         [f](float uv, float gv) { return f.u(uv) * f.g(gv); });
}

template <class F>
void gatedBackward(ExecContext& c, const RawTensor& gy, const RawTensor& up, const RawTensor& gate,
                   const RawTensor& gup, const RawTensor& ggate, const F& f) {
  if (up.numel() == 0) return;
  const RawTensor gyv = gy.permuted(up.tags());
  const auto plan = kernels::planStrided<5>(
      up.shape(), {&gyv.strides(), &up.strides(), &gate.strides(), &gup.strides(), &ggate.strides()});
  const float* pg = gyv.f32();
  const float* pu = up.f32();
  const float* pa = gate.f32();
  float* ou = gup.f32();
  float* oa = ggate.f32();
  const int64_t grain = std::max<int64_t>(1, kernels::kElementwiseGrain / plan.inner());
  c.parallelFor(plan.outer(), grain, [&](int64_t begin, int64_t end) {
    kernels::forEachRow(plan, begin, end, [&](const auto& off, int64_t len, const auto& st) {
      for (int64_t i = 0; i < len; ++i) {
        const float gv = pg[off[0] + i * st[0]];
        const float uv = pu[off[1] + i * st[1]];
        const float av = pa[off[2] + i * st[2]];
        ou[off[3] + i * st[3]] = gv * f.du(uv) * f.g(av);
        oa[off[4] + i * st[4]] = gv * f.u(uv) * f.dg(av);
      }
    });
  });
}

// Halves of x along axis: gate first unless gate_second (glu's [a | b] gates with b).
template <class F>
Tensor splitOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, const F& f,
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
  RawTensor out = gatedForward(ctx, up, gate, f);
  return ops::finishOp(ctx, op, out, {&x}, [&] {
    return [gate, up, a_tags = a.tags(), a_shape = a.shape(), axis, h, gate_at, up_at, f](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor gx = RawTensor::empty(c, a_tags, a_shape);
      gatedBackward(c, gy, up, gate, gx.narrowed(axis, up_at, h), gx.narrowed(axis, gate_at, h), f);
      g[0] = std::move(gx);
    };
  }, static_cast<size_t>(a.numel()) * 2);
}

// up and gate as two tensors with the same axes, in any order.
template <class F>
Tensor pairOp(ExecContext& ctx, std::string_view op, const Tensor& up_t, const Tensor& gate_t, const F& f) {
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
  RawTensor out = gatedForward(ctx, up, gate, f);
  return ops::finishOp(ctx, op, out, {&up_t, &gate_t}, [&] {
    return [up, gate, gate_tags = gate_raw.tags(), gate_shape = gate_raw.shape(), f](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor gu = RawTensor::empty(c, up.tags(), up.shape());
      RawTensor gg = RawTensor::empty(c, gate_tags, gate_shape);
      gatedBackward(c, gy, up, gate, gu, gg.permuted(up.tags()), f);
      g[0] = std::move(gu);
      g[1] = std::move(gg);
    };
  }, static_cast<size_t>(up.numel()) * 2);
}

}  // namespace

Tensor Tensor::swiglu(ExecContext& ctx, Tag axis) const { return splitOp(ctx, "swiglu", *this, axis, Gate<Silu>{}); }

Tensor Tensor::geglu(ExecContext& ctx, Tag axis) const { return splitOp(ctx, "geglu", *this, axis, Gate<GeluErf>{}); }

Tensor Tensor::glu(ExecContext& ctx, Tag axis) const {
  return splitOp(ctx, "glu", *this, axis, Gate<Sigmoid>{}, /*gate_second=*/true);
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
  return pairOp(ctx, "situ", *this, gate, Situ{static_cast<float>(c)});
}

}  // namespace fucina
