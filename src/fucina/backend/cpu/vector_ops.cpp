// The SIMD kernels of vector_ops.h, written once with Highway as gemm_simd.cpp is: native builds
// compile this file once per x86 target (foreach_target.h) and dispatch at run time, wasm compiles
// it once for SIMD128 (HWY_COMPILE_ONLY_STATIC). The exp is ExpCore below. Highway (Debian's 1.0.3)
// has no erf: the exact gelu's Φ is NormalOf below, from a relative-error-bounded
// erfc (an absolute-error erf, as Abramowitz & Stegun 7.1.26, loses the negative tail where Φ is
// small, and missed the 1e-6 relative agreement the gelu tests ask of libm's erf).
#ifndef FUCINA_KERNELS_VECTOR_OPS_SHARED
#define FUCINA_KERNELS_VECTOR_OPS_SHARED

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "fucina/backend/cpu/vector_ops.h"

namespace fucina::kernels::vec {
namespace {
std::atomic<bool> g_enabled{true};
}  // namespace
void setEnabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }
bool enabled() { return g_enabled.load(std::memory_order_relaxed); }
}  // namespace fucina::kernels::vec

#endif  // FUCINA_KERNELS_VECTOR_OPS_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fucina/backend/cpu/vector_ops.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace fucina::kernels::vec {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
#include "fucina/backend/cpu/relaxed-inl.h"  // MulAddAcc, IfThenElseLanes

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr int64_t kMaxLanes = static_cast<int64_t>(hn::MaxLanes(D()));

int64_t Lanes() { return static_cast<int64_t>(hn::Lanes(D())); }

// exp(x) for x ≤ 88.7, 0 below −104: exp(r)·2ⁿ with n = round(x/ln 2) from the 1.5·2²³ shifter
// (no float-to-int conversion: V8 lowers one to a saturating sequence of about 8 instructions),
// r = x − n·ln 2 with ln 2 in two parts (n·hi exact), exp(r) = 1 + r + r²·P(r) (P fit by
// scripts/fit-polys.py), and 2ⁿ as two factors, so results underflow gradually. Against Highway's
// Exp, 1.49 → 1.19 ns an element in V8, with the same 8e-8 relative error.
HWY_INLINE V ExpCore(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V shifter = hn::Set(d, 12582912.0f);
  const V k = hn::MulAdd(x, hn::Set(d, 1.44269504088896341f), shifter);  // n + shifter, rounded to nearest
  const auto n = hn::Sub(hn::BitCast(di, k), hn::BitCast(di, shifter));
  const V nf = hn::Sub(k, shifter);
  const V r = hn::NegMulAdd(nf, hn::Set(d, 3.19461833e-05f), hn::NegMulAdd(nf, hn::Set(d, 0.693115234375f), x));
  const V r2 = hn::Mul(r, r);
  const V p01 = hn::MulAdd(hn::Set(d, 0.166666657f), r, hn::Set(d, 0.5f));
  const V p23 = hn::MulAdd(hn::Set(d, 0.00833349768f), r, hn::Set(d, 0.0416662954f));
  const V p45 = hn::MulAdd(hn::Set(d, 0.000197900226f), r, hn::Set(d, 0.00139446999f));
  const V p = hn::MulAdd(p45, hn::Mul(r2, r2), hn::MulAdd(p23, r2, p01));
  const V er = hn::Add(hn::MulAdd(p, r2, r), hn::Set(d, 1.0f));
  const auto half = hn::ShiftRight<1>(n), bias = hn::Set(di, 127);
  const V lo = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(half, bias)));
  const V hi = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::Sub(n, half), bias)));
  return hn::IfThenElseZero(hn::Ge(x, hn::Set(d, -104.0f)), hn::Mul(hn::Mul(er, lo), hi));
}

// exp everywhere: NaN stays NaN, arguments past 88.7 give +inf (and below −104, 0).
HWY_INLINE V ExpAll(D d, V x) {
  V y = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.72283f)), hn::Set(d, std::numeric_limits<float>::infinity()),
                       ExpCore(d, x));
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// Φ(x), the standard normal CDF, and φ(x), its density, from one exp(−x²/2). Φ is ½·erfc(|x|/√2)
// for x < 0, else 1 − ½·erfc(x/√2), with erfc(z) = t·exp(−z²)·Q(t), t = 1/(1 + z/2), Q a degree-9
// polynomial fit to erfc's relative error (scripts/fit-polys.py: 3.9e-8 over the t that |x| ≤ 20
// gives). An erf with an absolute error bound (Abramowitz & Stegun 7.1.26) would lose the negative
// tail, where Φ is small, and float's 1 + erf(x/√2) cancels to nothing there. |x| is capped at 20,
// beyond which φ and Φ's tail are 0 in float (so an infinite x gives no inf − inf). −x²/2 is
// hi + lo: with a fused multiply-add lo is hi's rounding error, and exp(hi)·(1 + lo) keeps Φ's tail
// to a few 1e-7 relative out to |x| = 20; unfused (wasm), lo is 0 and the tail past |x| = 5 is good
// to a few 1e-6 (hi's rounding). The gradient needs both: one exp serves them.
struct Normal {
  V cdf, pdf;
};
HWY_INLINE Normal NormalOf(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V a = hn::Min(hn::Abs(x), hn::Set(d, 20.0f));
  const V aa = hn::Mul(a, a);
  const V minus_half = hn::Set(d, -0.5f);
  const V lo = hn::Mul(minus_half, hn::MulSub(a, a, aa));
  const V e = ExpCore(d, hn::Mul(minus_half, aa));  // 0 below −104, so at |x| = 20
  const V gauss = hn::MulAdd(e, lo, e);            // exp(−x²/2)
  const V t = hn::Div(one, hn::MulAdd(hn::Set(d, 0.35355339059327373f), a, one));  // z/2 = |x|/(2√2)
  V q = hn::Set(d, 0.0027012045f);
  for (const float c : {-0.0731382966f, 0.316132009f, -0.527092934f, 0.309299111f, -0.0422833301f, 0.20769988f,
                        0.242117628f, 0.28248331f, 0.282081395f})
    q = hn::MulAdd(q, t, hn::Set(d, c));
  const V tail = hn::Mul(hn::Mul(hn::Set(d, 0.5f), t), hn::Mul(q, gauss));
  const V cdf = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), tail, hn::Sub(one, tail));
  return {hn::IfThenElse(hn::IsNaN(x), x, cdf), hn::Mul(hn::Set(d, 0.3989422804014327f), gauss)};
}

HWY_INLINE V Apply(D d, Op op, V x, V y) {
  switch (op) {
    case Op::copy: return x;
    case Op::neg: return hn::Neg(x);
    case Op::relu: return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), x);
    case Op::add: return hn::Add(x, y);
    case Op::sub: return hn::Sub(x, y);
    case Op::mul: return hn::Mul(x, y);
    case Op::reluGrad: return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), y);
    case Op::geluErf: return hn::Mul(x, NormalOf(d, x).cdf);
    case Op::geluErfGrad: {  // y·(Φ(x) + x·φ(x))
      const Normal n = NormalOf(d, x);
      return hn::Mul(y, hn::MulAdd(x, n.pdf, n.cdf));
    }
    case Op::none: break;
  }
  return x;
}

// One switch per call, not per vector: the op is a template argument of the loop.
template <Op kOp>
void RunOp(int64_t n, const float* HWY_RESTRICT x, int64_t sx, const float* HWY_RESTRICT y, int64_t sy,
           float* HWY_RESTRICT out) {
  const D d;
  const int64_t L = Lanes();
  const V xs = hn::Set(d, sx == 0 ? x[0] : 0.0f);
  const V ys = hn::Set(d, (isBinary(kOp) && sy == 0) ? y[0] : 0.0f);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V a = sx == 0 ? xs : hn::LoadU(d, x + i);
    const V b = isBinary(kOp) ? (sy == 0 ? ys : hn::LoadU(d, y + i)) : a;
    hn::StoreU(Apply(d, kOp, a, b), d, out + i);
  }
  if (i == n) return;
  // The tail through the same vector code, via padded copies.
  HWY_ALIGN float bx[kMaxLanes] = {}, by[kMaxLanes] = {}, bo[kMaxLanes];
  for (int64_t j = 0; j < n - i; ++j) {
    bx[j] = x[sx * (i + j)];
    if (isBinary(kOp)) by[j] = y[sy * (i + j)];
  }
  hn::Store(Apply(d, kOp, hn::Load(d, bx), hn::Load(d, by)), d, bo);
  for (int64_t j = 0; j < n - i; ++j) out[i + j] = bo[j];
}

void Run(Op op, int64_t n, const float* x, int64_t sx, const float* y, int64_t sy, float* out) {
  switch (op) {
#define FUCINA_VEC_CASE(name) \
  case Op::name: return RunOp<Op::name>(n, x, sx, y, sy, out);
    FUCINA_VEC_CASE(copy)
    FUCINA_VEC_CASE(neg)
    FUCINA_VEC_CASE(relu)
    FUCINA_VEC_CASE(add)
    FUCINA_VEC_CASE(sub)
    FUCINA_VEC_CASE(mul)
    FUCINA_VEC_CASE(reluGrad)
    FUCINA_VEC_CASE(geluErf)
    FUCINA_VEC_CASE(geluErfGrad)
#undef FUCINA_VEC_CASE
    case Op::none: break;
  }
}

void GeluErfAndGrad(int64_t n, const float* HWY_RESTRICT x, float* HWY_RESTRICT y, float* HWY_RESTRICT d) {
  const D dd;
  const int64_t L = Lanes();
  const auto both = [&](V a, float* py, float* pd) {
    const Normal nn = NormalOf(dd, a);
    hn::StoreU(hn::Mul(a, nn.cdf), dd, py);
    hn::StoreU(hn::MulAdd(a, nn.pdf, nn.cdf), dd, pd);
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) both(hn::LoadU(dd, x + i), y + i, d + i);
  if (i == n) return;
  HWY_ALIGN float bx[kMaxLanes] = {}, by[kMaxLanes], bd[kMaxLanes];
  for (int64_t j = 0; j < n - i; ++j) bx[j] = x[i + j];
  both(hn::Load(dd, bx), by, bd);
  for (int64_t j = 0; j < n - i; ++j) {
    y[i + j] = by[j];
    d[i + j] = bd[j];
  }
}

// Lane partials summed in f64, in four independent chains: one chain of 16 dependent adds per
// call (AVX-512) was ~40% of SoftmaxRow's samples on W3's attention rows (≤ 128 floats each).
HWY_INLINE double SumLanes(D d, V v) {
  HWY_ALIGN float lanes[kMaxLanes] = {};
  hn::Store(v, d, lanes);
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t j = 0;
  for (; j + 4 <= Lanes(); j += 4) {
    s0 += lanes[j];
    s1 += lanes[j + 1];
    s2 += lanes[j + 2];
    s3 += lanes[j + 3];
  }
  for (; j < Lanes(); ++j) s0 += lanes[j];
  return (s0 + s1) + (s2 + s3);
}

// f(acc, vector) over a row: full vectors, then the tail padded with `pad`.
template <class F>
HWY_INLINE V Fold(D d, const float* x, int64_t n, float pad, V acc, const F& f) {
  const int64_t L = Lanes();
  int64_t i = 0;
  for (; i + L <= n; i += L) acc = f(acc, hn::LoadU(d, x + i));
  if (i < n) {
    HWY_ALIGN float buf[kMaxLanes] = {};
    for (int64_t j = 0; j < L; ++j) buf[j] = i + j < n ? x[i + j] : pad;
    acc = f(acc, hn::Load(d, buf));
  }
  return acc;
}

// out[i] = f(i-th vector of x, of y) over rows of n, tails padded with zeros.
template <class F>
HWY_INLINE void Zip(D d, const float* x, const float* y, int64_t n, float* out, const F& f) {
  const int64_t L = Lanes();
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(f(hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float bx[kMaxLanes] = {}, by[kMaxLanes] = {}, bo[kMaxLanes];
    for (int64_t j = 0; j < n - i; ++j) {
      bx[j] = x[i + j];
      by[j] = y[i + j];
    }
    hn::Store(f(hn::Load(d, bx), hn::Load(d, by)), d, bo);
    for (int64_t j = 0; j < n - i; ++j) out[i + j] = bo[j];
  }
}

void SoftmaxRow(const float* x, float* y, int64_t n, bool log) {
  const D d;
  const float inf = std::numeric_limits<float>::infinity();
  const V vmax = Fold(d, x, n, -inf, hn::Set(d, -inf), [](V a, V v) { return hn::Max(a, v); });
  float m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  if (!std::isfinite(m)) m = 0;  // all -inf (or empty): avoid inf - inf
  const V vm = hn::Set(d, m);
  // exp(x − m) into y (the softmax case keeps it), lanes summed; padding adds exp(−inf) = 0.
  V acc = hn::Zero(d);
  const int64_t L = Lanes();
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V e = ExpAll(d, hn::Sub(hn::LoadU(d, x + i), vm));
    if (!log) hn::StoreU(e, d, y + i);
    acc = hn::Add(acc, e);
  }
  HWY_ALIGN float tail[kMaxLanes] = {};
  if (i < n) {
    for (int64_t j = 0; j < L; ++j) tail[j] = i + j < n ? x[i + j] : -inf;
    const V e = ExpAll(d, hn::Sub(hn::Load(d, tail), vm));
    hn::Store(e, d, tail);
    acc = hn::Add(acc, e);
  }
  const double sum = SumLanes(d, acc);
  if (log) {
    const V lse = hn::Set(d, static_cast<float>(std::log(sum)));
    Zip(d, x, x, n, y, [&](V a, V) { return hn::Sub(hn::Sub(a, vm), lse); });
    return;
  }
  const V inv = hn::Set(d, static_cast<float>(1.0 / sum));
  for (int64_t k = 0; k < i; k += L) hn::StoreU(hn::Mul(hn::LoadU(d, y + k), inv), d, y + k);
  for (int64_t j = 0; i + j < n; ++j) y[i + j] = tail[j] * hn::GetLane(inv);
}

// Lanewise Σ a·b (tail padded with zeros).
HWY_INLINE V DotLanes(D d, const float* a, const float* b, int64_t n) {
  const int64_t L = Lanes();
  V acc = hn::Zero(d), odd = hn::Zero(d);  // two chains: the FMA latency bound short rows
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    acc = MulAddAcc(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc);
    odd = MulAddAcc(hn::LoadU(d, a + i + L), hn::LoadU(d, b + i + L), odd);
  }
  acc = hn::Add(acc, odd);
  for (; i + L <= n; i += L) acc = MulAddAcc(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc);
  if (i < n) {
    HWY_ALIGN float ba[kMaxLanes] = {}, bb[kMaxLanes] = {};
    for (int64_t j = 0; j < n - i; ++j) {
      ba[j] = a[i + j];
      bb[j] = b[i + j];
    }
    acc = MulAddAcc(hn::Load(d, ba), hn::Load(d, bb), acc);
  }
  return acc;
}

void SoftmaxGradRow(const float* p, float* dr, int64_t n, float scale) {
  const D d;
  const V dot = hn::Set(d, static_cast<float>(SumLanes(d, DotLanes(d, dr, p, n))));
  const V s = hn::Set(d, scale);
  Zip(d, p, dr, n, dr, [&](V pv, V dv) { return hn::Mul(hn::Mul(s, pv), hn::Sub(dv, dot)); });
}

// Four running sums, added together before the rest of the row: with one, each vector waited on
// the add before it (in wasm about a float a cycle: the conv bias gradient's row sums were 8% of
// W2's first convolution).
double SumRow(const float* x, int64_t n) {
  const D d;
  const int64_t L = Lanes();
  V a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    a0 = hn::Add(a0, hn::LoadU(d, x + i));
    a1 = hn::Add(a1, hn::LoadU(d, x + i + L));
    a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * L));
    a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * L));
  }
  const V acc = hn::Add(hn::Add(a0, a1), hn::Add(a2, a3));
  return SumLanes(d, Fold(d, x + i, n - i, 0.0f, acc, [](V a, V v) { return hn::Add(a, v); }));
}

double SumSquaredDeviation(const float* x, int64_t n, float shift) {
  const D d;
  const V s = hn::Set(d, shift);
  // Padding with the shift itself contributes 0.
  return SumLanes(d, Fold(d, x, n, shift, hn::Zero(d), [&](V a, V v) {
                    const V dv = hn::Sub(v, s);
                    return MulAddAcc(dv, dv, a);
                  }));
}

void ShiftScaleRow(const float* x, int64_t n, float shift, float scale, float* y) {
  const D d;
  const V s = hn::Set(d, shift), k = hn::Set(d, scale);
  Zip(d, x, x, n, y, [&](V a, V) { return hn::Mul(hn::Sub(a, s), k); });
}

void SumAndDot(const float* g, const float* y, int64_t n, double* sum_g, double* sum_gy) {
  const D d;
  *sum_g = SumLanes(d, Fold(d, g, n, 0.0f, hn::Zero(d), [](V a, V v) { return hn::Add(a, v); }));
  *sum_gy = SumLanes(d, DotLanes(d, g, y, n));
}

void NormGradRow(const float* g, const float* y, int64_t n, float s, float shift, float k, float* out) {
  const D d;
  const V vs = hn::Set(d, s), vshift = hn::Set(d, shift), vk = hn::Set(d, k);
  Zip(d, g, y, n, out, [&](V gv, V yv) { return hn::Mul(vs, hn::NegMulAdd(yv, vk, hn::Sub(gv, vshift))); });
}

void ExpShiftScaleRow(const float* x, int64_t n, float shift, float scale, float* out) {
  const D d;
  const V s = hn::Set(d, shift), k = hn::Set(d, scale);
  Zip(d, x, x, n, out, [&](V a, V) { return hn::Mul(hn::Sub(ExpAll(d, a), s), k); });
}

void AddToF64(const float* x, int64_t n, double* acc) {
  // Plain loop: the compiler vectorizes the widening add for each target.
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}

// One tap of a max-pooling window against the running maximum: v wins where it is greater, or NaN
// while the maximum is not: NaN propagates, ties keep the first (the order of the scalar
// reference, kernels::maxPool2dPlanes); `at` then takes idx, the tap's in-plane index or its
// offset in the window. Without kTrack no index is kept. The test is not (v <= best) unless best
// is NaN: three operations where the spelled-out condition took five.
template <bool kTrack, class VI>
HWY_INLINE void PoolTap(V v, VI idx, V& best, VI& at) {
  const auto take = hn::AndNot(hn::Le(v, best), hn::Eq(best, best));
  best = IfThenElseLanes(take, v, best);
  if constexpr (kTrack) at = IfThenElseLanes(hn::RebindMask(hn::RebindToSigned<D>(), take), idx, at);
}

// Stores n ≤ L outputs (and, kTrack, their indices widened to int64) at y and ap.
template <bool kTrack, class VI>
HWY_INLINE void StorePooled(V best, VI at, int64_t n, float* y, int64_t* ap) {
  const D d;
  const hn::RebindToSigned<D> di;
  if (n == Lanes()) {
    hn::StoreU(best, d, y);
  } else {
    // A loop of n floats compiled to a memmove call per row: 1.3% of W2's native step (perf).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2  // masked stores, which touch nothing past y[n)
    hn::BlendedStore(best, hn::FirstN(d, static_cast<size_t>(n)), d, y);
#else  // SIMD128's blended store rewrites the whole vector: a race with the next plane's thread
    HWY_ALIGN float best_lanes[kMaxLanes];
    hn::Store(best, d, best_lanes);
    int64_t l = 0;
    for (; l + 2 <= n; l += 2) std::memcpy(y + l, best_lanes + l, 2 * sizeof(float));
    if (l < n) y[l] = best_lanes[l];
#endif
  }
  if constexpr (kTrack) {
#if HWY_TARGET != HWY_SCALAR
    if (n == Lanes()) {  // widened to int64 in registers, not lane by lane through memory
      const hn::Half<decltype(di)> dh;
      const hn::Rebind<int64_t, decltype(dh)> d64;
      hn::StoreU(hn::PromoteTo(d64, hn::LowerHalf(dh, at)), d64, ap);
      hn::StoreU(hn::PromoteTo(d64, hn::UpperHalf(dh, at)), d64, ap + Lanes() / 2);
      return;
    }
#endif
    HWY_ALIGN int32_t at_lanes[kMaxLanes];
    hn::Store(at, di, at_lanes);
    for (int64_t l = 0; l < n; ++l) ap[l] = at_lanes[l];
  }
}

// Note [2x2 pooling without gathers]: a 2x2 window with stride 2 reads two adjacent columns of
// two rows, so L outputs of a row come from two vectors of each input row split into even and
// odd columns (ConcatEven / ConcatOdd). A row's last outputs short of L run as its last L outputs,
// those before them computed and stored again (the same values: every row's 13th output on
// SIMD128, where storing one lane went through memory). A row of fewer than L outputs (W2's rows
// of 13 and 5 outputs on AVX-512) runs the same vectors with n < L lanes stored; their loads read
// on past the row, inside the input, except near its end, where the rows' 2n floats are copied
// into a padded buffer. Gathering each lane's window instead cost wasm 0.96 ms
// for W6's first pooling at batch 64 (SIMD128 has no gather: 4 loads and lane inserts a vector),
// and AVX-512's gathers were 5.8% of W2's native step.
// Every row of one plane; x_end is the end of the input.
template <bool kTrack>
void MaxPool2x2Rows(const float* plane, const float* x_end, int64_t width, int64_t out_h, int64_t out_w, float* yp,
                    int64_t* ap) {
#if HWY_TARGET != HWY_SCALAR
  const D d;
  const hn::RebindToSigned<D> di;
  using VI = hn::Vec<decltype(di)>;
  const int64_t L = Lanes();
  const VI even = hn::Add(hn::Iota(di, 0), hn::Iota(di, 0));  // 0, 2, 4, ...: the windows' first columns
  const VI right = hn::Set(di, 1), below = hn::Set(di, static_cast<int32_t>(width)),
           diagonal = hn::Set(di, static_cast<int32_t>(width + 1));
  HWY_ALIGN float padded[4 * kMaxLanes] = {};  // a short run's two rows, 2·L floats each
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const float* r0 = plane + 2 * oy * width;
    const float* r1 = r0 + width;
    // L outputs at ox, n ≤ L of them stored.
    const auto outputs = [&](int64_t ox, int64_t n) {
      const float *a = r0 + 2 * ox, *b = r1 + 2 * ox;
      if (n < L && x_end - b < 2 * L) {
        std::copy(a, a + 2 * n, padded);
        std::copy(b, b + 2 * n, padded + 2 * L);
        a = padded, b = padded + 2 * L;
      }
      const V a_lo = hn::LoadU(d, a), a_hi = hn::LoadU(d, a + L);
      const V b_lo = hn::LoadU(d, b), b_hi = hn::LoadU(d, b + L);
      // The taps' offsets in their windows are tracked, and the windows' first index added once.
      V best = hn::ConcatEven(d, a_hi, a_lo);
      VI at = hn::Zero(di);
      PoolTap<kTrack>(hn::ConcatOdd(d, a_hi, a_lo), right, best, at);
      PoolTap<kTrack>(hn::ConcatEven(d, b_hi, b_lo), below, best, at);
      PoolTap<kTrack>(hn::ConcatOdd(d, b_hi, b_lo), diagonal, best, at);
      if constexpr (kTrack) at = hn::Add(at, hn::Add(even, hn::Set(di, static_cast<int32_t>(2 * oy * width + 2 * ox))));
      StorePooled<kTrack>(best, at, n, yp + oy * out_w + ox, kTrack ? ap + oy * out_w + ox : nullptr);
    };
    int64_t ox = 0;
    for (; ox + L <= out_w; ox += L) outputs(ox, L);
    if (ox < out_w) {
      if (out_w >= L) outputs(out_w - L, L);  // the row's last L outputs, some again
      else outputs(ox, out_w - ox);
    }
  }
#else
  (void)plane, (void)x_end, (void)width, (void)out_h, (void)out_w, (void)yp, (void)ap;
#endif
}

template <bool kTrack>
void MaxPoolPlanesT(const float* x, int64_t planes, int64_t height, int64_t width, int64_t out_h, int64_t out_w,
                    int64_t kh, int64_t kw, int64_t sh, int64_t sw, float* y, int64_t* argmax) {
  const D d;
  const hn::RebindToSigned<D> di;
  using VI = hn::Vec<decltype(di)>;
  const int64_t L = Lanes(), outs = out_h * out_w;
  if (kh == 2 && kw == 2 && sh == 2 && sw == 2 && HWY_TARGET != HWY_SCALAR) {  // Note [2x2 pooling without gathers]
    for (int64_t p = 0; p < planes; ++p)
      MaxPool2x2Rows<kTrack>(x + p * height * width, x + planes * height * width, width, out_h, out_w, y + p * outs,
                             kTrack ? argmax + p * outs : nullptr);
    return;
  }
  // Other windows: L outputs at a time in row-major order, so narrow planes still fill whole
  // vectors: each lane gathers its own window, from its corner's in-plane index. The table is
  // padded to whole vectors with corner 0 (a valid window, results not stored).
  thread_local std::vector<int32_t> corners;
  corners.clear();
  for (int64_t o = 0; o < outs; ++o) corners.push_back(static_cast<int32_t>(o / out_w * sh * width + o % out_w * sw));
  corners.resize(static_cast<size_t>((outs + L - 1) / L * L), 0);
  for (int64_t p = 0; p < planes; ++p) {
    const float* plane = x + p * height * width;
    for (int64_t o = 0; o < outs; o += L) {
      const VI first = hn::LoadU(di, corners.data() + o);
      V best = hn::GatherIndex(d, plane, first);
      VI at = first;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j)
          if (i != 0 || j != 0)
            PoolTap<kTrack>(hn::GatherIndex(d, plane, hn::Add(first, hn::Set(di, static_cast<int32_t>(i * width + j)))),
                            hn::Add(first, hn::Set(di, static_cast<int32_t>(i * width + j))), best, at);
      StorePooled<kTrack>(best, at, std::min(L, outs - o), y + p * outs + o, kTrack ? argmax + p * outs + o : nullptr);
    }
  }
}

void MaxPoolPlanes(const float* x, int64_t planes, int64_t height, int64_t width, int64_t out_h, int64_t out_w,
                   int64_t kh, int64_t kw, int64_t sh, int64_t sw, float* y, int64_t* argmax) {
  if (argmax) MaxPoolPlanesT<true>(x, planes, height, width, out_h, out_w, kh, kw, sh, sw, y, argmax);
  else MaxPoolPlanesT<false>(x, planes, height, width, out_h, out_w, kh, kw, sh, sw, y, nullptr);
}

void TakeLarger(const float* v, int64_t n, int32_t k, float* best, int32_t* at) {
  const D d;
  const hn::RebindToSigned<D> di;
  const auto kv = hn::Set(di, k);
  const int64_t L = Lanes();
  int64_t l = 0;
  for (; l + L <= n; l += L) {
    V b = hn::LoadU(d, best + l);
    auto a = hn::LoadU(di, at + l);
    PoolTap<true>(hn::LoadU(d, v + l), kv, b, a);
    hn::StoreU(b, d, best + l);
    hn::StoreU(a, di, at + l);
  }
  for (; l < n; ++l)
    if (v[l] > best[l] || (std::isnan(v[l]) && !std::isnan(best[l]))) best[l] = v[l], at[l] = k;
}

void Adam(const AdamStep& s, float* p, const float* g, float* m, float* v, int64_t n) {
  const D d;
  const V b1 = hn::Set(d, s.b1), b2 = hn::Set(d, s.b2), one_b1 = hn::Set(d, s.one_b1), one_b2 = hn::Set(d, s.one_b2);
  const V step = hn::Set(d, s.step_size), inv_bc2 = hn::Set(d, s.inv_sqrt_bc2), eps = hn::Set(d, s.eps);
  const V l2 = hn::Set(d, s.l2), shrink = hn::Set(d, s.shrink);
  const int64_t L = Lanes();
  auto body = [&](float* pp, const float* gp, float* mp, float* vp) {
    const V pv = hn::LoadU(d, pp);
    const V gi = hn::MulAdd(l2, pv, hn::LoadU(d, gp));
    const V mv = hn::MulAdd(one_b1, gi, hn::Mul(b1, hn::LoadU(d, mp)));
    const V vv = hn::MulAdd(hn::Mul(one_b2, gi), gi, hn::Mul(b2, hn::LoadU(d, vp)));
    const V denom = hn::MulAdd(hn::Sqrt(vv), inv_bc2, eps);
    hn::StoreU(mv, d, mp);
    hn::StoreU(vv, d, vp);
    hn::StoreU(hn::NegMulAdd(step, hn::Div(mv, denom), hn::Mul(pv, shrink)), d, pp);
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) body(p + i, g + i, m + i, v + i);
  if (i < n) {
    HWY_ALIGN float bp[kMaxLanes] = {}, bg[kMaxLanes] = {}, bm[kMaxLanes] = {}, bv[kMaxLanes] = {};
    for (int64_t j = 0; j < n - i; ++j) {
      bp[j] = p[i + j];
      bg[j] = g[i + j];
      bm[j] = m[i + j];
      bv[j] = v[i + j];
    }
    body(bp, bg, bm, bv);
    for (int64_t j = 0; j < n - i; ++j) {
      p[i + j] = bp[j];
      m[i + j] = bm[j];
      v[i + j] = bv[j];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fucina::kernels::vec
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fucina::kernels::vec {

HWY_EXPORT(Run);
HWY_EXPORT(GeluErfAndGrad);
HWY_EXPORT(SoftmaxRow);
HWY_EXPORT(SoftmaxGradRow);
HWY_EXPORT(SumRow);
HWY_EXPORT(SumSquaredDeviation);
HWY_EXPORT(ShiftScaleRow);
HWY_EXPORT(SumAndDot);
HWY_EXPORT(NormGradRow);
HWY_EXPORT(ExpShiftScaleRow);
HWY_EXPORT(AddToF64);
HWY_EXPORT(MaxPoolPlanes);
HWY_EXPORT(TakeLarger);
HWY_EXPORT(Adam);

void run(Op op, int64_t n, const float* x, int64_t sx, const float* y, int64_t sy, float* out) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(Run)(op, n, x, sx, y, sy, out);
}
void geluErfAndGrad(int64_t n, const float* x, float* y, float* d) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(GeluErfAndGrad)(n, x, y, d);
}
void softmaxRow(const float* x, float* y, int64_t n, bool log) { HWY_DYNAMIC_DISPATCH(SoftmaxRow)(x, y, n, log); }
void softmaxGradRow(const float* p, float* d, int64_t n, float scale) {
  HWY_DYNAMIC_DISPATCH(SoftmaxGradRow)(p, d, n, scale);
}
double sumRow(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(SumRow)(x, n); }
double sumSquaredDeviation(const float* x, int64_t n, float shift) {
  return HWY_DYNAMIC_DISPATCH(SumSquaredDeviation)(x, n, shift);
}
void shiftScaleRow(const float* x, int64_t n, float shift, float scale, float* y) {
  HWY_DYNAMIC_DISPATCH(ShiftScaleRow)(x, n, shift, scale, y);
}
void sumAndDot(const float* g, const float* y, int64_t n, double* sum_g, double* sum_gy) {
  HWY_DYNAMIC_DISPATCH(SumAndDot)(g, y, n, sum_g, sum_gy);
}
void normGradRow(const float* g, const float* y, int64_t n, float s, float shift, float k, float* out) {
  HWY_DYNAMIC_DISPATCH(NormGradRow)(g, y, n, s, shift, k, out);
}
void expShiftScaleRow(const float* x, int64_t n, float shift, float scale, float* out) {
  HWY_DYNAMIC_DISPATCH(ExpShiftScaleRow)(x, n, shift, scale, out);
}
void addToF64(const float* x, int64_t n, double* acc) { HWY_DYNAMIC_DISPATCH(AddToF64)(x, n, acc); }
void maxPoolPlanes(const float* x, int64_t planes, int64_t height, int64_t width, int64_t out_h, int64_t out_w,
                   int64_t kh, int64_t kw, int64_t sh, int64_t sw, float* y, int64_t* argmax) {
  HWY_DYNAMIC_DISPATCH(MaxPoolPlanes)(x, planes, height, width, out_h, out_w, kh, kw, sh, sw, y, argmax);
}
void takeLarger(const float* v, int64_t n, int32_t k, float* best, int32_t* at) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(TakeLarger)(v, n, k, best, at);
}
void adam(const AdamStep& s, float* p, const float* g, float* m, float* v, int64_t n) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(Adam)(s, p, g, m, v, n);
}

}  // namespace fucina::kernels::vec
#endif  // HWY_ONCE
