// SIMD twins of the scalar loops behind the hot non-GEMM ops (vector_ops.cpp, Highway: one source
// for AVX2/AVX-512, dispatched at run time natively, and SIMD128 in wasm). Each function works on
// contiguous rows and treats every element or row the same wherever it falls in a buffer (tails
// go through the vector code too), so how callers split the work over threads never changes a
// result. The scalar loops stay in the ops as the reference the tests compare these with.
#pragma once

#include <cstdint>

#include "fucina/backend/optim_steps.h"

namespace fucina::kernels::vec {

// Whether ops use these kernels (default on). Off, every op runs its scalar reference loop: for
// tests comparing the two, and benchmarks. Not meant to be flipped while ops run on other threads.
void setEnabled(bool on);
bool enabled();

// --- elementwise: out[i] = f(x[i·sx], y[i·sy]) with strides 0 (a broadcast scalar) or 1 ---
enum class Op : uint8_t {
  none,
  // unary: f(x)
  copy, neg, relu,
  geluErf,      // x·Φ(x), Φ from a vector erfc with a relative error bound (vector_ops.cpp)
  // binary: f(x, y)
  add, sub, mul,
  reluGrad,     // x > 0 ? y : 0  (x the input, y the incoming gradient)
  geluErfGrad,  // y·(Φ(x) + x·φ(x))
};
constexpr bool isBinary(Op op) { return op >= Op::add; }

void run(Op op, int64_t n, const float* x, int64_t sx, const float* y, int64_t sy, float* out);

// y = x·Φ(x) and d = Φ(x) + x·φ(x), the exact gelu and its derivative, from one evaluation of Φ
// and φ: the values of run(Op::geluErf) and of run(Op::geluErfGrad) with a gradient of 1, bit for
// bit. The forward of a gelu whose VJP keeps its partial (Note [Kept partials]).
void geluErfAndGrad(int64_t n, const float* x, float* y, float* d);

// --- rows ---
// softmax (or log_softmax) of one row of n elements; y may alias x. Max subtracted; an all -inf
// row gives NaN (softmax) as the scalar reference does.
void softmaxRow(const float* x, float* y, int64_t n, bool log);
// The softmax VJP of one row, scaled: d = scale·p∘(d − Σ d∘p) (attention's dS, in place).
void softmaxGradRow(const float* p, float* d, int64_t n, float scale);
// Σ x and Σ (x − shift)², accumulated in f32 lanes and summed in f64.
double sumRow(const float* x, int64_t n);
double sumSquaredDeviation(const float* x, int64_t n, float shift);
// y = (x − shift)·scale.
void shiftScaleRow(const float* x, int64_t n, float shift, float scale, float* y);
// Σ g and Σ g·y.
void sumAndDot(const float* g, const float* y, int64_t n, double* sum_g, double* sum_gy);
// out = s·(g − shift − y·k): the normalization VJP.
void normGradRow(const float* g, const float* y, int64_t n, float s, float shift, float k, float* out);
// out = (exp(x) − shift)·scale: cross-entropy's gradient from log-probabilities.
void expShiftScaleRow(const float* x, int64_t n, float shift, float scale, float* out);
// acc[i] += x[i] in f64 (column sums of a reduction).
void addToF64(const float* x, int64_t n, double* acc);

// --- pooling ---
// Max pooling of `planes` contiguous [height, width] planes without padding (every window inside
// its plane), as kernels::maxPool2dPlanes: y [planes, out_h, out_w] and, per output, the in-plane
// index of its window's first maximum (NaN wins), unless argmax is null. Branch-free; planes below
// 2^31 elements.
void maxPoolPlanes(const float* x, int64_t planes, int64_t height, int64_t width, int64_t out_h, int64_t out_w,
                   int64_t kh, int64_t kw, int64_t sh, int64_t sw, float* y, int64_t* argmax);
// Channels-last max pooling's tap (kernels::maxPool2dPlanes): best[l], at[l] = v[l], k for each of
// n lanes where v[l] is larger than best[l] or NaN over a number.
void takeLarger(const float* v, int64_t n, int32_t k, float* best, int32_t* at);

// --- optimizer ---
using AdamStep = backend::AdamStep;
// The Adam/AdamW update of n parameters, as the cpu backend's scalar loop (cpu/optim.cpp).
void adam(const AdamStep& s, float* p, const float* g, float* m, float* v, int64_t n);

}  // namespace fucina::kernels::vec
