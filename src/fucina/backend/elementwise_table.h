/// @file
/// The elementwise ops as data (Note [Backends], backend/kernels.h): one row per op, holding
///   - `fwd`: the scalar forward, generic over the element type (f32; f64 for the f64 path of
///     Note [Dtype rules]; the integer types where `integer` is true);
///   - `da` (and `db` for binary rows): the partial derivative times the incoming gradient g,
///     in f32, over (g, a, y) for a unary row and (g, a, b, y) for a binary one;
///   - `da_reads` / `db_reads`: which of a, b, y a partial reads, so a VJP record saves only that;
///   - `simd`: the cpu backend's SIMD twins of the forward and partials, where it has them;
///   - `wgsl`: the webgpu backend's WGSL twins of the forward and partials, where it has them
///     (expressions over a, b, g, y and the parameters pa, pb; backend/webgpu/elementwise.cpp);
///   - `keep`: for a unary row whose partial is g times a costly d(a) (an erf), the cpu backend's
///     SIMD kernel writing y and d(a) in one pass: while gradients are recorded the VJP then keeps
///     d and multiplies, instead of keeping a and computing d again (Note [Kept partials]);
///   - `in_place`: whether backends also compute the forward in place (Kernels::updateInto); off
///     unless an op needs it, as each such form is one more loop per backend in the binary;
///   - `f64` and `partials`: whether backends instantiate the f64 forward and the partials. The
///     rows that only serve a step inside another op (a reduction's, a loss's) turn off what no op
///     calls, for the same reason.
/// A scalar parameter (a scale factor, a slope, clamp's bounds) comes in ElemParams.
/// A new elementwise op is one row here and one entry in FUCINA_ELEMENTWISE_ROWS; every backend
/// then computes it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/backend/activation.h"

namespace fucina::backend {

// What a partial derivative reads besides g (flashlight's rule: a value is saved only when a
// gradient that will be computed needs it).
namespace reads {
enum Reads : unsigned { kNone = 0, kA = 1, kB = 2, kY = 4 };
}

struct ElemParams {
  double a = 0, b = 0;
};

// A row's `keep` kernel: y[i] = fwd(a[i]) and d[i] = da(1, a[i]) for i < n.
using KeepFn = void (*)(int64_t n, const float* a, float* y, float* d);

// The SIMD twin of a form (cpu/vector_ops.h): `op` applied to input x (and y when binary).
struct SimdForm {
  kernels::vec::Op op = kernels::vec::Op::none;
  uint8_t x = 0, y = 1;
};
struct SimdForms {
  SimdForm fwd, da, db;
};

// The WGSL twin of a row's forms: f32 expressions over the operands a and b, the incoming gradient
// g, the forward's result y and ElemParams as pa and pb (f32), with the helpers of the webgpu
// backend's prelude; null where that backend has none (UnsupportedOnDevice).
struct WgslForms {
  const char* fwd = nullptr;
  const char* da = nullptr;
  const char* db = nullptr;
};

enum class Form : uint8_t { fwd, da, db };

namespace rows {

using namespace reads;
using P = ElemParams;
using Op = kernels::vec::Op;
using backend::act::constant;
using backend::act::logistic;

struct Unary {
  static constexpr int arity = 1;
  static constexpr bool integer = false;
  static constexpr bool in_place = false;  // Kernels::updateInto computes it
  static constexpr bool f64 = true;        // mapAs computes the forward in f64
  static constexpr bool partials = true;   // da (and db) exist
  static constexpr SimdForms simd{};
  static constexpr WgslForms wgsl{};
  static constexpr KeepFn keep = nullptr;
};
struct Binary {
  static constexpr int arity = 2;
  static constexpr bool integer = false;
  static constexpr bool in_place = false;
  static constexpr bool f64 = true;
  static constexpr bool partials = true;
  static constexpr unsigned da_reads = kA | kB, db_reads = kA | kB;
  static constexpr SimdForms simd{};
  static constexpr WgslForms wgsl{};
};

// ---------------------------------------------------------------- binary arithmetic (pointwise.cpp)
struct Add : Binary {
  static constexpr bool integer = true;
  static constexpr unsigned da_reads = kNone, db_reads = kNone;
  static auto fwd(auto a, auto b, const P&) { return a + b; }
  static float da(float g, float, float, float, const P&) { return g; }
  static float db(float g, float, float, float, const P&) { return g; }
  static constexpr SimdForms simd{{Op::add}, {Op::copy}, {Op::copy}};
  static constexpr WgslForms wgsl{"a + b", "g", "g"};
};
struct Sub : Binary {
  static constexpr bool integer = true;
  static constexpr unsigned da_reads = kNone, db_reads = kNone;
  static auto fwd(auto a, auto b, const P&) { return a - b; }
  static float da(float g, float, float, float, const P&) { return g; }
  static float db(float g, float, float, float, const P&) { return -g; }
  static constexpr SimdForms simd{{Op::sub}, {Op::copy}, {Op::neg}};
  static constexpr WgslForms wgsl{"a - b", "g", "-g"};
};
struct Mul : Binary {
  static constexpr bool integer = true;
  static constexpr unsigned da_reads = kB, db_reads = kA;
  static auto fwd(auto a, auto b, const P&) { return a * b; }
  static float da(float g, float, float b, float, const P&) { return g * b; }
  static float db(float g, float a, float, float, const P&) { return g * a; }
  static constexpr SimdForms simd{{Op::mul}, {Op::mul, 0, 2}, {Op::mul, 0, 1}};
  static constexpr WgslForms wgsl{"a * b", "g * b", "g * a"};
};
struct Div : Binary {
  static constexpr unsigned da_reads = kB, db_reads = kB | kY;
  static auto fwd(auto a, auto b, const P&) { return a / b; }
  static float da(float g, float, float b, float, const P&) { return g / b; }
  static float db(float g, float, float b, float y, const P&) { return -g * y / b; }
  static constexpr WgslForms wgsl{"a / b", "g / b", "-g * y / b"};
};
// maximum/minimum: on exact ties the gradient is split evenly between the operands.
struct Maximum : Binary {
  static auto fwd(auto a, auto b, const P&) { return a >= b ? a : b; }
  static float da(float g, float a, float b, float, const P&) { return a > b ? g : a == b ? 0.5f * g : 0.0f; }
  static float db(float g, float a, float b, float, const P&) { return b > a ? g : a == b ? 0.5f * g : 0.0f; }
  static constexpr WgslForms wgsl{"select(b, a, a >= b)", "select(select(0.0, 0.5 * g, a == b), g, a > b)", "select(select(0.0, 0.5 * g, a == b), g, b > a)"};
};
struct Minimum : Binary {
  static auto fwd(auto a, auto b, const P&) { return a <= b ? a : b; }
  static float da(float g, float a, float b, float, const P&) { return a < b ? g : a == b ? 0.5f * g : 0.0f; }
  static float db(float g, float a, float b, float, const P&) { return b < a ? g : a == b ? 0.5f * g : 0.0f; }
  static constexpr WgslForms wgsl{"select(b, a, a <= b)", "select(select(0.0, 0.5 * g, a == b), g, a < b)", "select(select(0.0, 0.5 * g, a == b), g, b < a)"};
};
// pow: d/da = b·a^(b-1); d/db = y·ln(a), taken as 0 where a == 0 (torch's convention, so a zero
// base never turns the exponent's gradient into NaN).
struct Pow : Binary {
  static constexpr unsigned da_reads = kA | kB, db_reads = kA | kY;
  static auto fwd(auto a, auto b, const P&) { return std::pow(a, b); }
  static float da(float g, float a, float b, float, const P&) { return b == 0.0f ? 0.0f : g * b * std::pow(a, b - 1.0f); }
  static float db(float g, float a, float, float y, const P&) { return a == 0.0f ? 0.0f : g * y * std::log(a); }
  static constexpr WgslForms wgsl{"pow_(a, b)", "select(g * b * pow_(a, b - 1.0), 0.0, b == 0.0)", "select(g * y * log(a), 0.0, a == 0.0)"};
};
// snake: x + sin²(αx)/α. d/dx = 1 + sin(2αx); d/dα = x·sin(2αx)/α − sin²(αx)/α².
struct Snake : Binary {
  static auto fwd(auto a, auto al, const P&) {
    const auto s = std::sin(al * a);
    return a + s * s / al;
  }
  static float da(float g, float a, float al, float, const P&) { return g * (1.0f + std::sin(2.0f * al * a)); }
  static float db(float g, float a, float al, float, const P&) {
    const float s = std::sin(al * a);
    return g * (a * std::sin(2.0f * al * a) / al - s * s / (al * al));
  }
  static constexpr WgslForms wgsl{"a + sin_(b * a) * sin_(b * a) / b", "g * (1.0 + sin_(2.0 * b * a))",
                                  "g * (a * sin_(2.0 * b * a) / b - sin_(b * a) * sin_(b * a) / (b * b))"};
};
// prelu: max(0, x) + w·min(0, x); at x = 0 the gradient is w (torch: x > 0 ? 1 : w), and w's is min(0, x).
struct Prelu : Binary {
  static constexpr unsigned da_reads = kA | kB, db_reads = kA;
  static auto fwd(auto a, auto w, const P&) { return a > 0 ? a : w * a; }
  static float da(float g, float a, float w, float, const P&) { return a > 0 ? g : g * w; }
  static float db(float g, float a, float, float, const P&) { return a > 0 ? 0.0f : g * a; }
  static constexpr WgslForms wgsl{"select(b * a, a, a > 0.0)", "select(g * b, g, a > 0.0)", "select(g * a, 0.0, a > 0.0)"};
};

// ---------------------------------------------------------------- with a scalar (pointwise.cpp)
// p.a is the scalar; the partials use it rounded to f32.
struct Scale : Unary {
  static constexpr bool in_place = true;
  static constexpr unsigned da_reads = kNone;
  static auto fwd(auto a, const P& p) { return a * static_cast<decltype(a)>(p.a); }
  static float da(float g, float, float, const P& p) { return g * static_cast<float>(p.a); }
  static constexpr WgslForms wgsl{"a * pa", "g * pa"};
};
struct AddScalar : Unary {
  static constexpr unsigned da_reads = kNone;
  static auto fwd(auto a, const P& p) { return a + static_cast<decltype(a)>(p.a); }
  static float da(float g, float, float, const P&) { return g; }
  static constexpr WgslForms wgsl{"a + pa", "g"};
};
struct SubScalar : Unary {
  static constexpr unsigned da_reads = kNone;
  static auto fwd(auto a, const P& p) { return a - static_cast<decltype(a)>(p.a); }
  static float da(float g, float, float, const P&) { return g; }
  static constexpr WgslForms wgsl{"a - pa", "g"};
};
struct DivScalar : Unary {
  static constexpr unsigned da_reads = kNone;
  static auto fwd(auto a, const P& p) { return a / static_cast<decltype(a)>(p.a); }
  static float da(float g, float, float, const P& p) { return g / static_cast<float>(p.a); }
  static constexpr WgslForms wgsl{"a / pa", "g / pa"};
};
struct PowScalar : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P& p) { return std::pow(a, static_cast<decltype(a)>(p.a)); }
  static float da(float g, float a, float, const P& p) {
    const float e = static_cast<float>(p.a);
    return e == 0.0f ? 0.0f : g * e * std::pow(a, e - 1.0f);
  }
  static constexpr WgslForms wgsl{"pow_(a, pa)", "select(g * pa * pow_(a, pa - 1.0), 0.0, pa == 0.0)"};
};

// ---------------------------------------------------------------- unary functions (unary.cpp)
struct Neg : Unary {
  static constexpr bool integer = true;
  static constexpr unsigned da_reads = kNone;
  static auto fwd(auto a, const P&) { return decltype(a)(0) - a; }
  static float da(float g, float, float, const P&) { return -g; }
  static constexpr SimdForms simd{{Op::neg}, {Op::neg}, {}};
  static constexpr WgslForms wgsl{"-a", "-g"};
};
// abs: the subgradient at 0 is 0 (torch's sign(0) = 0).
struct Abs : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return std::fabs(a); }
  static float da(float g, float a, float, const P&) { return a > 0 ? g : a < 0 ? -g : 0.0f; }
  static constexpr WgslForms wgsl{"abs(a)", "select(select(0.0, -g, a < 0.0), g, a > 0.0)"};
};
struct Exp : Unary {
  static constexpr unsigned da_reads = kY;
  static auto fwd(auto a, const P&) { return std::exp(a); }
  static float da(float g, float, float y, const P&) { return g * y; }
  static constexpr WgslForms wgsl{"exp(a)", "g * y"};
};
struct Log : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return std::log(a); }
  static float da(float g, float a, float, const P&) { return g / a; }
  static constexpr WgslForms wgsl{"log(a)", "g / a"};
};
struct Sqrt : Unary {
  static constexpr unsigned da_reads = kY;
  static auto fwd(auto a, const P&) { return std::sqrt(a); }
  static float da(float g, float, float y, const P&) { return g * 0.5f / y; }
  static constexpr WgslForms wgsl{"sqrt(a)", "g * 0.5 / y"};
};
struct Tanh : Unary {
  static constexpr unsigned da_reads = kY;
  static auto fwd(auto a, const P&) { return std::tanh(a); }
  static float da(float g, float, float y, const P&) { return g * (1.0f - y * y); }
  static constexpr WgslForms wgsl{"tanh_(a)", "g * (1.0 - y * y)"};
};
struct Sigmoid : Unary {
  static constexpr unsigned da_reads = kY;
  static auto fwd(auto a, const P&) { return logistic(a); }
  static float da(float g, float, float y, const P&) { return g * y * (1.0f - y); }
  static constexpr WgslForms wgsl{"sigmoid(a)", "g * y * (1.0 - y)"};
};
// relu: gradient 0 at 0, as in torch.
struct Relu : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return a > 0 ? a : decltype(a)(0); }
  static float da(float g, float a, float, const P&) { return a > 0 ? g : 0.0f; }
  static constexpr SimdForms simd{{Op::relu}, {Op::reluGrad, 1, 0}, {}};
  static constexpr WgslForms wgsl{"max(a, 0.0)", "select(0.0, g, a > 0.0)"};
};
// leakyRelu (slope p.a): slope·x for x <= 0; the gradient at 0 is the slope (torch: x > 0 ? 1 : slope).
struct LeakyRelu : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P& p) { return a > 0 ? a : a * static_cast<decltype(a)>(p.a); }
  static float da(float g, float a, float, const P& p) { return a > 0 ? g : g * static_cast<float>(p.a); }
  static constexpr WgslForms wgsl{"select(a * pa, a, a > 0.0)", "select(g * pa, g, a > 0.0)"};
};
// gelu, tanh approximation (backend/activation.h).
struct Gelu : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return backend::act::geluTanh(a); }
  static float da(float g, float a, float, const P&) { return g * backend::act::geluTanhGrad(a); }
  static constexpr WgslForms wgsl{"gelu_tanh(a)", "g * gelu_tanh_grad(a)"};
};
// geluErf, exact: x·Φ(x) (backend/activation.h).
struct GeluErf : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return backend::act::geluErf(a); }
  static float da(float g, float a, float, const P&) { return g * backend::act::geluErfGrad(a); }
  static constexpr SimdForms simd{{Op::geluErf}, {Op::geluErfGrad, 1, 0}, {}};
  static constexpr WgslForms wgsl{"gelu_erf(a)", "g * gelu_erf_grad(a)"};
  static constexpr KeepFn keep = &kernels::vec::geluErfAndGrad;
};
// quickGelu: x·σ(1.702x).
struct QuickGelu : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return a * logistic(constant<decltype(a)>(1.702f, 1.702) * a); }
  static float da(float g, float a, float, const P&) {
    const float s = logistic(1.702f * a);
    return g * (s + 1.702f * a * s * (1.0f - s));
  }
  static constexpr WgslForms wgsl{"a * sigmoid(1.702 * a)", "g * quick_gelu_grad(a)"};
};
// silu (swish): x·σ(x) (backend/activation.h).
struct Silu : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return backend::act::silu(a); }
  static float da(float g, float a, float, const P&) { return g * backend::act::siluGrad(a); }
  static constexpr WgslForms wgsl{"a * sigmoid(a)", "g * silu_grad(a)"};
};
// elu (α = p.a): α·(eˣ − 1) for x <= 0; the gradient at 0 is α (torch: x > 0 ? 1 : α·eˣ).
struct Elu : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P& p) { return a > 0 ? a : static_cast<decltype(a)>(p.a) * std::expm1(a); }
  static float da(float g, float a, float, const P& p) { return a > 0 ? g : g * static_cast<float>(p.a) * std::exp(a); }
  static constexpr WgslForms wgsl{"select(pa * expm1_(a), a, a > 0.0)", "select(g * pa * exp(a), g, a > 0.0)"};
};
struct Log1p : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return std::log1p(a); }
  static float da(float g, float a, float, const P&) { return g / (1.0f + a); }
  static constexpr WgslForms wgsl{"log1p_(a)", "g / (1.0 + a)"};
};
// rsqrt: x^(-1/2); d/dx = −½·y³.
struct Rsqrt : Unary {
  static constexpr unsigned da_reads = kY;
  static auto fwd(auto a, const P&) { return decltype(a)(1) / std::sqrt(a); }
  static float da(float g, float, float y, const P&) { return -0.5f * g * y * y * y; }
  static constexpr WgslForms wgsl{"inverseSqrt(a)", "-0.5 * g * y * y * y"};
};
struct Reciprocal : Unary {
  static constexpr unsigned da_reads = kY;
  static auto fwd(auto a, const P&) { return decltype(a)(1) / a; }
  static float da(float g, float, float y, const P&) { return -g * y * y; }
  static constexpr WgslForms wgsl{"1.0 / a", "-g * y * y"};
};
struct Sin : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return std::sin(a); }
  static float da(float g, float a, float, const P&) { return g * std::cos(a); }
  static constexpr WgslForms wgsl{"sin_(a)", "g * cos_(a)"};
};
struct Cos : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P&) { return std::cos(a); }
  static float da(float g, float a, float, const P&) { return -g * std::sin(a); }
  static constexpr WgslForms wgsl{"cos_(a)", "-g * sin_(a)"};
};
// clamp to [p.a, p.b]: the gradient passes where lo <= x <= hi, boundaries included (as torch).
struct Clamp : Unary {
  static constexpr unsigned da_reads = kA;
  static auto fwd(auto a, const P& p) {
    using T = decltype(a);
    return a < T(p.a) ? T(p.a) : a > T(p.b) ? T(p.b) : a;
  }
  static float da(float g, float a, float, const P& p) {
    return a >= static_cast<float>(p.a) && a <= static_cast<float>(p.b) ? g : 0.0f;
  }
  static constexpr WgslForms wgsl{"clamp_(a, pa, pb)", "select(0.0, g, a >= pa && a <= pb)"};
};
// floor, ceil, round, sign (p.a: 0, 1, 2, 3): piecewise constant, so the gradient is zero
// (torch's convention). round is half to even (std::nearbyint in the default rounding mode), as
// torch.round. One row serves the four (they are seldom hot, and each row costs wasm size).
struct Rounding : Unary {
  enum Mode { kFloor, kCeil, kRound, kSign };
  static constexpr unsigned da_reads = kNone;
  static auto fwd(auto a, const P& p) {
    using T = decltype(a);
    switch (static_cast<int>(p.a)) {
      case kFloor: return std::floor(a);
      case kCeil: return std::ceil(a);
      case kRound: return std::nearbyint(a);
      default: return a > 0 ? T(1) : a < 0 ? T(-1) : a;  // sign keeps ±0 and NaN
    }
  }
  static float da(float, float, float, const P&) { return 0.0f; }
  static constexpr WgslForms wgsl{"rounding(a, pa)", "0.0"};
};
// Lambert's continued fraction for tanh cut after 8 levels, as one ratio x·p(x²)/q(x²). It
// reaches 1 at |x| ~ 6.29 and stays above, so clamping the result to [-1, 1] gives at most 6.9e-6
// from tanh on all reals; clamping x to ±7 first keeps x⁸ far from overflow (NaN passes through).
struct FastTanh : Unary {
  static constexpr unsigned da_reads = kY;
  static auto fwd(auto a, const P&) {
    using T = decltype(a);
    const T x = a < T(-7) ? T(-7) : a > T(7) ? T(7) : a;
    const T z = x * x;
    const T p = (((z + T(990)) * z + T(135135)) * z + T(4729725)) * z + T(34459425);
    const T q = (((T(45) * z + T(13860)) * z + T(945945)) * z + T(16216200)) * z + T(34459425);
    const T y = x * p / q;
    return y < T(-1) ? T(-1) : y > T(1) ? T(1) : y;
  }
  static float da(float g, float, float y, const P&) { return g * (1.0f - y * y); }
  static constexpr WgslForms wgsl{"fast_tanh(a)", "g * (1.0 - y * y)"};
};
// softcap (c = p.a): c·tanh(x/c).
struct Softcap : Unary {
  static constexpr unsigned da_reads = kY;
  static auto fwd(auto a, const P& p) {
    using T = decltype(a);
    const T c = static_cast<T>(static_cast<float>(p.a));
    return c * std::tanh(a / c);
  }
  static float da(float g, float, float y, const P& p) {
    const float t = y / static_cast<float>(p.a);
    return g * (1.0f - t * t);
  }
  static constexpr WgslForms wgsl{"pa * tanh_(a / pa)", "g * (1.0 - (y / pa) * (y / pa))"};
};


// ---------------------------------------------------------------- the rows of reductions' and in-place updates' steps
// Steps of other ops: no f64 forward, and partials only where a VJP reads them.
struct Step : Binary {
  static constexpr bool f64 = false, partials = false;
};
// addScaled (p.a = α): a + α·b, the in-place axpy of addScaledInPlace.
struct AddScaled : Step {
  static constexpr bool in_place = true;
  static auto fwd(auto a, auto b, const P& p) { return a + static_cast<decltype(a)>(p.a) * b; }
  static constexpr WgslForms wgsl{"a + pa * b"};
};
// (a − b)², variance's deviations from the mean; its da is variance's VJP.
struct SquaredDiff : Step {
  static constexpr bool partials = true;
  static auto fwd(auto a, auto b, const P&) { return (a - b) * (a - b); }
  static float da(float g, float a, float b, float, const P&) { return g * 2.0f * (a - b); }
  static float db(float g, float a, float b, float, const P&) { return -(g * 2.0f * (a - b)); }
  static constexpr WgslForms wgsl{"(a - b) * (a - b)", "g * 2.0 * (a - b)", "-(g * 2.0 * (a - b))"};
};
// exp(a − b), 0 where b = −∞: logsumexp's terms against a line's shift; its da is logsumexp's VJP
// g·exp(x − y), where an all −∞ line (y = −∞) has no gradient rather than NaN.
struct ExpShifted : Step {
  static constexpr bool partials = true;
  static auto fwd(auto a, auto b, const P&) {
    using T = decltype(a);
    return b == -std::numeric_limits<T>::infinity() ? T(0) : std::exp(a - b);
  }
  static float da(float g, float a, float b, float, const P&) {
    return b == -std::numeric_limits<float>::infinity() ? 0.0f : g * std::exp(a - b);
  }
  static float db(float g, float a, float b, float y, const P& p) { return -da(g, a, b, y, p); }
  static constexpr WgslForms wgsl{"exp_shifted(a, b)", "g * exp_shifted(a, b)", "-(g * exp_shifted(a, b))"};
};
// log(a) + b: logsumexp's result from a line's sum and shift.
struct LogAdd : Step {
  static auto fwd(auto a, auto b, const P&) { return std::log(a) + b; }
  static constexpr WgslForms wgsl{"log(a) + b"};
};
// a where finite, else 0: logsumexp's shift, so that ±∞ lines give ±∞ rather than NaN.
struct FiniteOrZero : Unary {
  static constexpr bool f64 = false, partials = false;
  static auto fwd(auto a, const P&) { return std::isfinite(a) ? a : decltype(a)(0); }
  static constexpr WgslForms wgsl{"select(0.0, a, is_finite(a))"};
};
// a / b where b > 0, else 0: the 2-norm's VJP g·x/y with torch's subgradient 0 at y = 0.
struct DivPositive : Step {
  static auto fwd(auto a, auto b, const P&) { return b > 0 ? a / b : decltype(a)(0); }
  static constexpr WgslForms wgsl{"select(0.0, a / b, b > 0.0)"};
};

// ---------------------------------------------------------------- pointwise losses l(x, t) (loss.cpp)
// Their partials are g·∂l/∂x and g·∂l/∂t; the mean's 1/n is applied to g beforehand. f32 only (a
// loss of other dtypes computes through f32).
struct Loss : Binary {
  static constexpr bool f64 = false;
};
// huber (δ = p.a, rounded to f32): ½d² for |d| <= δ, else δ(|d| − ½δ); ∂/∂x = clamp(x − t, −δ, δ).
struct HuberLoss : Loss {
  static auto fwd(auto x, auto t, const P& p) {
    using T = decltype(x);
    const T dl = static_cast<T>(static_cast<float>(p.a));
    const T d = std::fabs(x - t);
    return d <= dl ? T(0.5) * d * d : dl * (d - T(0.5) * dl);
  }
  static float grad(float x, float t, const P& p) {
    const auto dl = static_cast<float>(p.a);
    return std::clamp(x - t, -dl, dl);
  }
  static float da(float g, float x, float t, float, const P& p) { return g * grad(x, t, p); }
  static float db(float g, float x, float t, float, const P& p) { return g * -grad(x, t, p); }
  static constexpr WgslForms wgsl{"huber(abs(a - b), pa)", "g * clamp_(a - b, -pa, pa)", "g * -clamp_(a - b, -pa, pa)"};
};
// Binary cross-entropy on probabilities x, each log clamped at −100 as torch's BCELoss.
struct BceLoss : Loss {
  static auto clampedLog(auto v) { return std::max(std::log(v), decltype(v)(-100)); }
  // d/dv of clampedLog: 1/v where the log is not clamped, else 0.
  static float clampedLogGrad(float v) { return std::log(v) > -100.0f ? 1.0f / v : 0.0f; }
  static auto fwd(auto x, auto t, const P&) {
    using T = decltype(x);
    return -(t * clampedLog(x) + (T(1) - t) * clampedLog(T(1) - x));
  }
  static float da(float g, float x, float t, float, const P&) {
    return g * (-t * clampedLogGrad(x) + (1 - t) * clampedLogGrad(1 - x));
  }
  static float db(float g, float x, float, float, const P&) { return g * (clampedLog(1 - x) - clampedLog(x)); }
  static constexpr WgslForms wgsl{"-(b * bce_log(a) + (1.0 - b) * bce_log(1.0 - a))",
                                  "g * (-b * bce_log_grad(a) + (1.0 - b) * bce_log_grad(1.0 - a))",
                                  "g * (bce_log(1.0 - a) - bce_log(a))"};
};
// Binary cross-entropy on logits: max(x, 0) − x·t + log1p(exp(−|x|)); ∂/∂x = sigmoid(x) − t (split
// by sign so exp never overflows), ∂/∂t = −x.
struct BceWithLogitsLoss : Loss {
  static constexpr unsigned db_reads = kA;
  static auto fwd(auto x, auto t, const P&) {
    using T = decltype(x);
    return std::max(x, T(0)) - x * t + std::log1p(std::exp(-std::fabs(x)));
  }
  static float da(float g, float x, float t, float, const P&) {
    const float e = std::exp(-std::fabs(x));
    return g * ((x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e)) - t);
  }
  static float db(float g, float x, float, float, const P&) { return g * -x; }
  static constexpr WgslForms wgsl{"max(a, 0.0) - a * b + log1p_(exp(-abs(a)))", "g * (sigmoid(a) - b)", "g * -a"};
};
// KL divergence of the target from the input's log-probabilities x: t·(log t − x), 0 where t = 0;
// with p.a = 1 the target is a log-probability: exp(t)·(t − x).
struct KlDivLoss : Loss {
  static auto fwd(auto x, auto t, const P& p) {
    using T = decltype(x);
    if (p.a != 0) return std::exp(t) * (t - x);
    return t > 0 ? t * (std::log(t) - x) : T(0);
  }
  static float da(float g, float, float t, float, const P& p) { return g * (p.a != 0 ? -std::exp(t) : -t); }
  static float db(float g, float x, float t, float, const P& p) {
    if (p.a != 0) return g * (std::exp(t) * (t - x + 1));
    return g * (t > 0 ? std::log(t) + 1 - x : -x);
  }
  static constexpr WgslForms wgsl{"kl_div(a, b, pa)", "g * select(-b, -exp(b), pa != 0.0)",
                                  "g * select(select(-a, log(b) + 1.0 - a, b > 0.0), exp(b) * (b - a + 1.0), pa != 0.0)"};
};

}  // namespace rows

// Every row, once: the ElemOp enumerators and each backend's dispatch tables are made from it.
#define FUCINA_ELEMENTWISE_ROWS(X)                                                                    \
  X(Add) X(Sub) X(Mul) X(Div) X(Maximum) X(Minimum) X(Pow) X(Snake) X(Prelu) X(Scale) X(AddScalar)   \
  X(SubScalar) X(DivScalar) X(PowScalar) X(Neg) X(Abs) X(Exp) X(Log) X(Sqrt) X(Tanh) X(Sigmoid)      \
  X(Relu) X(LeakyRelu) X(Gelu) X(GeluErf) X(QuickGelu) X(Silu) X(Elu) X(Log1p) X(Rsqrt)              \
  X(Reciprocal) X(Sin) X(Cos) X(Clamp) X(Rounding) X(FastTanh) X(Softcap) X(AddScaled) X(SquaredDiff)   \
  X(ExpShifted) X(LogAdd) X(FiniteOrZero) X(DivPositive) X(HuberLoss) X(BceLoss) X(BceWithLogitsLoss)   \
  X(KlDivLoss)

enum class ElemOp : uint16_t {
#define FUCINA_ELEM_ENUM(row) row,
  FUCINA_ELEMENTWISE_ROWS(FUCINA_ELEM_ENUM)
#undef FUCINA_ELEM_ENUM
};
#define FUCINA_ELEM_COUNT(row) +1
inline constexpr size_t kElemOpCount = 0 FUCINA_ELEMENTWISE_ROWS(FUCINA_ELEM_COUNT);
#undef FUCINA_ELEM_COUNT

// The ElemOp of a row type.
template <class Row>
constexpr ElemOp elemOpOf();
#define FUCINA_ELEM_OF(row) \
  template <>               \
  constexpr ElemOp elemOpOf<rows::row>() { return ElemOp::row; }
FUCINA_ELEMENTWISE_ROWS(FUCINA_ELEM_OF)
#undef FUCINA_ELEM_OF

// The row's name in the table, for messages and the harness.
const char* name(ElemOp op);

}  // namespace fucina::backend
