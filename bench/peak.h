// The multiply-add ceilings of one core that the benchmarks quote their GFLOP/s against: the FMA
// peak of the native ISA the GEMM dispatches to (AVX2 or AVX-512) and, in wasm, baseline SIMD128's
// mul+add peak (no fused multiply-add). Each runs 12 independent accumulator chains, enough to
// hide the FMA latency on two pipes, and is timed in threadCpuMs() so that a shared machine's
// load does not lower the ceiling. bench/peak.mjs measures the wasm ceiling from
// JavaScript for the npm package's runs; bench/gemm.cpp and bench/bench.cpp include this.
#pragma once

#include <cstdint>
#include <cstdio>

#if defined(__EMSCRIPTEN__)
#include <emscripten.h>
#include <wasm_simd128.h>
#else
#include <ctime>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#endif

// CPU time of the calling thread, in ms: on a shared, overloaded machine the wall clock also counts
// time slices given to other processes. wasm has no thread CPU clock; Node's process.cpuUsage()
// stands in (the other threads are idle during a run).
#ifdef __EMSCRIPTEN__
EM_JS(double, threadCpuMs, (), {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
});
#else
inline double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}
#endif

namespace fucina_bench {

constexpr int kPeakChains = 12;

// Keeps the chains live without printing anything in practice.
inline void peakSink(float s) {
  if (s == 12345.f) std::printf(" ");
}

#if !defined(__EMSCRIPTEN__) && defined(__x86_64__)
// The AVX2 and AVX-512 loops differ only in their intrinsics: one template cannot carry both target
// attributes, which the intrinsics need in the function they are inlined into.
__attribute__((target("avx2,fma"), noinline)) inline double avx2FmaPeakGflops() {
  constexpr int64_t kIters = 50'000'000;
  __m256 acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-7f);
  const double c0 = threadCpuMs();
  for (int64_t it = 0; it < kIters; ++it)
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], mul, add);
  const double ms = threadCpuMs() - c0;
  float sink = 0;
  for (int i = 0; i < kPeakChains; ++i) sink += _mm256_cvtss_f32(acc[i]);
  peakSink(sink);
  return 2.0 * 8 * kPeakChains * static_cast<double>(kIters) / (ms * 1e-3) * 1e-9;
}

__attribute__((target("avx512f"), noinline)) inline double avx512FmaPeakGflops() {
  constexpr int64_t kIters = 25'000'000;
  __m512 acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 mul = _mm512_set1_ps(0.999999f), add = _mm512_set1_ps(1e-7f);
  const double c0 = threadCpuMs();
  for (int64_t it = 0; it < kIters; ++it)
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], mul, add);
  const double ms = threadCpuMs() - c0;
  float sink = 0;
  for (int i = 0; i < kPeakChains; ++i) sink += _mm512_cvtss_f32(acc[i]);
  peakSink(sink);
  return 2.0 * 16 * kPeakChains * static_cast<double>(kIters) / (ms * 1e-3) * 1e-9;
}

#endif

#ifdef __EMSCRIPTEN__
// V8 first runs a function from its baseline compiler (Liftoff) at a quarter of the speed and swaps
// in TurboFan's code in the background: callers take the best of several calls.
__attribute__((noinline)) inline double simd128MulAddPeakGflops() {
  constexpr int64_t kIters = 5'000'000;
  v128_t acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = wasm_f32x4_splat(static_cast<float>(i) * 1e-3f);
  const v128_t mul = wasm_f32x4_splat(0.999999f), add = wasm_f32x4_splat(1e-7f);
  const double c0 = threadCpuMs();
  for (int64_t it = 0; it < kIters; ++it)
#pragma clang loop unroll(full)  // the chains must live in registers, not in the array
    for (int i = 0; i < kPeakChains; ++i) acc[i] = wasm_f32x4_add(wasm_f32x4_mul(acc[i], mul), add);
  const double ms = threadCpuMs() - c0;
  float sink = 0;
  for (int i = 0; i < kPeakChains; ++i) sink += wasm_f32x4_extract_lane(acc[i], 0);
  peakSink(sink);
  return 2.0 * 4 * kPeakChains * static_cast<double>(kIters) / (ms * 1e-3) * 1e-9;
}
#endif

}  // namespace fucina_bench
