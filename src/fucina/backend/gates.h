// The gates of the gated units (swiglu, geglu, glu, gated, splitGated, situ): out = u(up)·g(gate),
// each factor with its derivative. A GateFn names one as data, so a backend can take it; the
// scalar forms here serve both host backends, which differ only in how they walk the elements.
#pragma once

#include <cmath>

#include "fucina/backend/activation.h"

namespace fucina::backend {

// The activation of a plain gate (u the identity), or situ's pair of scaled tanhs.
enum class GateAct { silu, geluTanh, geluErf, sigmoid, relu, quickGelu, situ };

struct GateFn {
  GateAct act;
  float c = 1;  // situ's scale
};

namespace gates {

struct Silu {
  static float f(float x) { return act::silu(x); }
  static float df(float x) { return act::siluGrad(x); }
};
struct GeluTanh {
  static float f(float x) { return act::geluTanh(x); }
  static float df(float x) { return act::geluTanhGrad(x); }
};
struct GeluErf {
  static float f(float x) { return act::geluErf(x); }
  static float df(float x) { return act::geluErfGrad(x); }
};
struct Sigmoid {
  static float f(float x) { return act::logistic(x); }
  static float df(float x) {
    const float s = act::logistic(x);
    return s * (1.0f - s);
  }
};
struct Relu {
  static float f(float x) { return x > 0 ? x : 0.0f; }
  static float df(float x) { return x > 0 ? 1.0f : 0.0f; }
};
struct QuickGelu {
  static float f(float x) { return x * act::logistic(1.702f * x); }
  static float df(float x) {
    const float s = act::logistic(1.702f * x);
    return s + 1.702f * x * s * (1.0f - s);
  }
};

// A plain gate: u = identity, g = Act.
template <class Act>
struct Plain {
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
  float g(float x) const { return u(act::silu(x)); }
  float dg(float x) const { return du(act::silu(x)) * act::siluGrad(x); }
};

// visit(F) with the gate fn names, each inlined into the caller's loop.
template <class Visit>
decltype(auto) withGate(const GateFn& fn, Visit&& visit) {
  switch (fn.act) {
    case GateAct::silu: return visit(Plain<Silu>{});
    case GateAct::geluTanh: return visit(Plain<GeluTanh>{});
    case GateAct::geluErf: return visit(Plain<GeluErf>{});
    case GateAct::sigmoid: return visit(Plain<Sigmoid>{});
    case GateAct::relu: return visit(Plain<Relu>{});
    case GateAct::quickGelu: return visit(Plain<QuickGelu>{});
    case GateAct::situ: break;
  }
  return visit(Situ{fn.c});
}

}  // namespace gates
}  // namespace fucina::backend
