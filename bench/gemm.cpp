// W4 (BENCHMARKS.md): times kernels::gemm on the raw GEMM shapes with 1 and 2 threads, the scalar
// gemmRef for comparison and, when the build found them, OpenBLAS and XNNPACK in the same run. Prints the
// median and best time of the repeats and GFLOP/s = 2·M·N·K / median. See bench/README.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include <fucina/fucina.h>
#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/gemm_simd.h"
#include "peak.h"

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#include <wasm_simd128.h>
#else
#include <hwy/targets.h>
#include <immintrin.h>
#endif
#ifdef FUCINA_BENCH_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif
#ifdef FUCINA_BENCH_XNNPACK
#include <pthreadpool.h>
#include <xnnpack.h>
#endif

namespace {

struct Shape {
  const char* name;
  int64_t m, n, k;
  bool trans_a, trans_b;
};

// 64-byte aligned storage, as fucina's tensors have (core/storage.h). With malloc's 16-byte
// alignment, the two threads' halves of C shared a cache line in every row, and the 2-thread rows
// measured that false sharing: W1's forward scaled 1.2–1.5× instead of ~2×.
template <class T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <class U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const Aligned64<U>&) const { return true; }
};
using Floats = std::vector<float, Aligned64<float>>;

struct Timing {
  double median_ms, best_ms, cpu_median_ms;
};


double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Warm-up, then repeats sized to ~0.6 s (at least 5, at most 50); median and best.
Timing timeIt(const std::function<void()>& run) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> wall, cpu;
  auto once = [&] {
    const double c0 = threadCpuMs();
    const auto t0 = Clock::now();
    run();
    wall.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    cpu.push_back(threadCpuMs() - c0);
  };
  once();
  once();
  const int reps = std::clamp(static_cast<int>(600.0 / std::max(wall[0], 1e-3)), 5, 50);
  wall.clear();
  cpu.clear();
  for (int r = 0; r < reps; ++r) once();
  return {median(wall), *std::min_element(wall.begin(), wall.end()), median(cpu)};
}

void report(const Shape& s, const std::string& impl, int threads, const Timing& t) {
  const double gflop = 2.0 * static_cast<double>(s.m * s.n * s.k) * 1e-9;
  std::printf("%-22s %-16s %d %9.3f %9.3f %8.1f", s.name, impl.c_str(), threads, t.median_ms,
              t.best_ms, gflop / (t.median_ms * 1e-3));
  if (threads == 1) std::printf(" %8.1f", gflop / (t.cpu_median_ms * 1e-3));
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

// Thread counts to time: the single-threaded wasm variant cannot start a pool.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
const std::vector<int> kThreadCounts{1};
#else
const std::vector<int> kThreadCounts{1, 2};
#endif

// `--shape MxKxN[:At][:Bt]` times that one shape instead of the list (fucina's kernel only unless
// `--peers`), e.g. `--shape 128x784x256` for one thread's half of W1's forward on two.
bool parseShape(const std::string& text, Shape& s) {
  long long m = 0, k = 0, n = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%n", &m, &k, &n, &used) != 3 || m < 1 || k < 1 || n < 1)
    return false;
  s = {"custom", m, n, k, false, false};
  for (std::string rest = text.substr(static_cast<size_t>(used)); !rest.empty();) {
    if (rest.rfind(":At", 0) == 0) s.trans_a = true;
    else if (rest.rfind(":Bt", 0) == 0) s.trans_b = true;
    else return false;
    rest = rest.substr(3);
  }
  return true;
}

int main(int argc, char** argv) {
  std::vector<Shape> shapes{
      {"1024x1024x1024", 1024, 1024, 1024, false, false},
      {"128x784x512 (W1 fwd)", 128, 512, 784, false, false},  // M=128, K=784, N=512
      {"784x128x512 (dW, At)", 784, 512, 128, true, false},   // dW = Xᵀ·dY
      {"128x512x784 (dX, Bt)", 128, 784, 512, false, true},   // dX = dY·Wᵀ
      {"128x2048x384 (W3 dW)", 128, 384, 2048, true, false},  // W3's qkv weight gradient: split in depth
      // Inference: one token through W3's qkv and a GPT-2-small MLP, W6's first Linear.
      {"1x128x384 (W7 qkv)", 1, 384, 128, false, true},
      {"1x768x3072 (GPT-2 fc)", 1, 3072, 768, false, true},
      {"64x1600x128 (W6 fc1)", 64, 128, 1600, false, true},
  };
  bool peers = true;
  std::string custom_name;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    Shape s;
    if (arg == "--shape" && i + 1 < argc && parseShape(argv[i + 1], s)) {
      custom_name = argv[++i];
      s.name = custom_name.c_str();
      shapes = {s};
      peers = false;
    } else if (arg == "--peers") {
      peers = true;
    } else {
      std::fprintf(stderr, "usage: gemm_bench [--shape MxKxN[:At][:Bt] [--peers]]\n");
      return 2;
    }
  }
#ifdef FUCINA_BENCH_XNNPACK
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "xnn_initialize failed\n");
    return 1;
  }
#endif
#ifndef __EMSCRIPTEN__
  double load[1] = {0};
  getloadavg(load, 1);
  std::printf("# load average (1 min) at start: %.2f\n", load[0]);
#endif
#if !defined(__EMSCRIPTEN__) && defined(__x86_64__)
  if (peers && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    std::printf("# AVX2 FMA peak, one core (thread CPU time): %.1f GFLOP/s\n", fucina_bench::avx2FmaPeakGflops());
  if (peers && __builtin_cpu_supports("avx512f"))
    std::printf("# AVX-512 FMA peak, one core (thread CPU time): %.1f GFLOP/s\n", fucina_bench::avx512FmaPeakGflops());
#endif
#ifdef __EMSCRIPTEN__
  if (peers)
    std::printf("# wasm SIMD128 mul+add peak, one core (process CPU time): %.1f GFLOP/s\n",
              [] {
                double best = 0;
                for (int r = 0; r < 8; ++r) best = std::max(best, fucina_bench::simd128MulAddPeakGflops());
                return best;
              }());
#endif
  std::printf("%-22s %-16s %s %9s %9s %8s %8s\n", "shape (MxKxN)", "impl", "T", "median_ms",
              "best_ms", "GFLOP/s", "cpuGF/s");
  for (const Shape& s : shapes) {
    // Stored layouts: A is [M,K] or, transposed, [K,M]; B is [K,N] or [N,K]; C is [M,N].
    Floats a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n));
    Floats c(static_cast<size_t>(s.m * s.n));
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.1f * static_cast<float>(i));
    for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.3f * static_cast<float>(i));
    const int64_t lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
    auto fucinaRun = [&](fucina::ExecContext& ctx) {
      fucina::kernels::gemm(ctx, s.trans_a, s.trans_b, s.m, s.n, s.k, a.data(), lda, b.data(),
                            ldb, c.data(), s.n, false);
    };
    for (int threads : kThreadCounts) {
      fucina::ExecContext ctx(fucina::ExecOptions{.threads = threads});
      report(s, std::string("fucina ") + fucina::kernels::detail::gemmTargetName(), threads,
             timeIt([&] { fucinaRun(ctx); }));
    }
#ifndef __EMSCRIPTEN__
    // The same kernel restricted to AVX2 (the benchmark machines' best target) when this
    // processor also has AVX-512.
    if (hwy::SupportedTargets() & (HWY_AVX3 | HWY_AVX3_DL)) {
      hwy::DisableTargets(HWY_AVX3 | HWY_AVX3_DL);
      for (int threads : kThreadCounts) {
        fucina::ExecContext ctx(fucina::ExecOptions{.threads = threads});
        report(s, std::string("fucina ") + fucina::kernels::detail::gemmTargetName(), threads,
               timeIt([&] { fucinaRun(ctx); }));
      }
      hwy::DisableTargets(0);
    }
#endif
    // B packed once (packRhs, Note [Packed B]), as inference multiplies by a weight that does not
    // change: the product alone is timed. The packed path reads A's rows in place (no transposed A).
    if (!s.trans_a) {
      for (int threads : kThreadCounts) {
        fucina::ExecContext ctx(fucina::ExecOptions{.threads = threads});
        Floats packed(static_cast<size_t>(fucina::kernels::packedRhsFloats(s.k, s.n)));
        fucina::kernels::packRhs(ctx, s.trans_b, s.k, s.n, b.data(), {}, ldb, packed.data());
        report(s, "fucina packed", threads, timeIt([&] {
                 fucina::kernels::gemmPacked(ctx, s.m, s.n, s.k, a.data(), lda, packed.data(), c.data(), s.n);
               }));
      }
    }
    if (!peers) continue;
#ifdef FUCINA_BENCH_OPENBLAS
    for (int threads : {1, 2}) {
      openblas_set_num_threads(threads);
      report(s, "openblas", threads, timeIt([&] {
               cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                           s.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(s.m),
                           static_cast<int>(s.n), static_cast<int>(s.k), 1.f, a.data(),
                           static_cast<int>(lda), b.data(), static_cast<int>(ldb), 0.f, c.data(),
                           static_cast<int>(s.n));
             }));
    }
#endif
#ifdef FUCINA_BENCH_XNNPACK
    // XNNPACK's fully-connected operator computes C = A·Bᵀ (B as [N,K], or [K,N] with
    // XNN_FLAG_TRANSPOSE_WEIGHTS) and packs B when the operator is created. Two timings:
    // "packed" reuses one operator (inference: constant weights); "+pack" creates it per call, as
    // training must since B changes every step. It has no transposed A: that case pays a copy.
    std::vector<float> a_rows(s.trans_a ? static_cast<size_t>(s.m * s.k) : 0);
    auto rowsOfA = [&]() -> const float* {
      if (!s.trans_a) return a.data();
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t p = 0; p < s.k; ++p) a_rows[i * s.k + p] = a[p * s.m + i];
      return a_rows.data();
    };
    auto createOp = [&] {
      xnn_operator_t op = nullptr;
      if (xnn_create_fully_connected_nc_f32(static_cast<size_t>(s.k), static_cast<size_t>(s.n),
                                            static_cast<size_t>(s.k), static_cast<size_t>(s.n),
                                            b.data(), nullptr, -INFINITY, INFINITY,
                                            s.trans_b ? 0 : XNN_FLAG_TRANSPOSE_WEIGHTS,
                                            &op) != xnn_status_success) {
        std::fprintf(stderr, "xnn_create_fully_connected_nc_f32 failed\n");
        std::exit(1);
      }
      return op;
    };
    auto runOp = [&](xnn_operator_t op, pthreadpool_t pool) {
      xnn_setup_fully_connected_nc_f32(op, static_cast<size_t>(s.m), rowsOfA(), c.data(), pool);
      xnn_run_operator(op, pool);
    };
    for (int threads : {1, 2}) {
      pthreadpool_t pool = threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr;
      xnn_operator_t op = createOp();
      report(s, "xnnpack packed", threads, timeIt([&] { runOp(op, pool); }));
      xnn_delete_operator(op);
      report(s, "xnnpack +pack", threads, timeIt([&] {
               xnn_operator_t fresh = createOp();
               runOp(fresh, pool);
               xnn_delete_operator(fresh);
             }));
      if (pool != nullptr) pthreadpool_destroy(pool);
    }
#endif
    report(s, "gemmRef (scalar)", 1, timeIt([&] {
             fucina::kernels::gemmRef(s.trans_a, s.trans_b, s.m, s.n, s.k, a.data(), lda,
                                      b.data(), ldb, c.data(), s.n, false);
           }));
  }
  return 0;
}
