// conv_bench: the Fashion-MNIST CNN's two convolutions (W2/W6: 1 -> 32 channels on 28x28, 32 ->
// 64 on 13x13, 3x3, no padding, bias + relu) at inference, batch 1 and 64, on one thread:
//   conv2dRelu            the training path (im2col + GEMM, the weight re-laid-out per call)
//   conv2dPreparedRelu    the prepared path (Winograd F(2x2, 3x3), weights transformed once)
//   xnnpack-nhwc          XNNPACK's convolution operator (Debian's build), created once and run
//                         many times, on NHWC images (when installed: FUCINA_BENCH_XNNPACK)
//   xnnpack+layout        the same as conv2dPreparedRelu's callers would get it: the NCHW images
//                         transposed to NHWC, the operator set up for them (its indirection
//                         buffer follows the input pointer) and run, the result transposed back
// Prints the median and best of repeats (thread CPU time, ms per call) and images/s from the
// median, after checking that every path gives the same values. bench/README.md has figures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <vector>

#include <fucina/fucina.h>

#ifdef FUCINA_BENCH_XNNPACK
#include <pthreadpool.h>
#include <xnnpack.h>
#endif

using fucina::Tensor;

namespace {

double threadMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

struct Timing {
  double median_ms, best_ms;
};

// Warm-up, then repeats sized to ~0.5 s (5 to 200).
Timing timeIt(const std::function<void()>& f) {
  f();
  const double t0 = threadMs();
  f();
  const double once = std::max(1e-3, threadMs() - t0);
  const int reps = std::clamp(static_cast<int>(500 / once), 5, 200);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const double s = threadMs();
    f();
    ms.push_back(threadMs() - s);
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

struct Shape {
  const char* name;
  int64_t n, c, hw, oc;
};

void report(const Shape& s, const char* impl, const Timing& t) {
  std::printf("%-14s %-20s %9.3f %9.3f %10.0f\n", s.name, impl, t.median_ms, t.best_ms, s.n / (t.median_ms * 1e-3));
}

// dst[n][j][i] = src[n][i][j] for n planes of rows x cols: NCHW <-> NHWC with (rows, cols) =
// (c, h*w) one way and (h*w, c) the other.
void transposePlanes(const float* src, float* dst, int64_t n, int64_t rows, int64_t cols) {
  for (int64_t p = 0; p < n; ++p, src += rows * cols, dst += rows * cols)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * cols + j];
}

float maxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float d = a.size() == b.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

}  // namespace

int main() {
  fucina::ExecContext ctx(fucina::ExecOptions{.threads = 1});
  auto off = fucina::noGrad();
#ifdef FUCINA_BENCH_XNNPACK
  if (xnn_initialize(nullptr) != xnn_status_success) {
    std::fprintf(stderr, "xnn_initialize failed\n");
    return 1;
  }
#endif
  std::printf("%-14s %-20s %9s %9s %10s\n", "shape", "impl", "median_ms", "best_ms", "images/s");
  for (const Shape& s : {Shape{"conv1 b1", 1, 1, 28, 32}, Shape{"conv1 b64", 64, 1, 28, 32}, Shape{"conv2 b1", 1, 32, 13, 64},
                         Shape{"conv2 b64", 64, 32, 13, 64}}) {
    const Tensor x = Tensor::uniform(ctx, {"n", "c", "h", "w"}, {s.n, s.c, s.hw, s.hw}, -1, 1, 1);
    const Tensor w = Tensor::uniform(ctx, {"out", "c", "kh", "kw"}, {s.oc, s.c, 3, 3}, -0.3, 0.3, 2);
    const Tensor b = Tensor::uniform(ctx, {"out"}, {s.oc}, -0.1, 0.1, 3);
    const std::vector<float> want = x.conv2dRelu(ctx, w, b).toVector();
    report(s, "conv2dRelu", timeIt([&] { fucina::ExecScope scope(ctx); x.conv2dRelu(ctx, w, b); }));
    const fucina::PreparedConv2d p = fucina::prepareConv2dWeights(ctx, w, b);
    std::printf("%-14s %-20s max |diff| %.2g\n", s.name, "  prepared check", maxDiff(x.conv2dPreparedRelu(ctx, p).toVector(), want));
    report(s, "conv2dPreparedRelu", timeIt([&] { fucina::ExecScope scope(ctx); x.conv2dPreparedRelu(ctx, p); }));
#ifdef FUCINA_BENCH_XNNPACK
    // NHWC images and an [out, kh, kw, c] kernel, as XNNPACK takes them; relu as output_min 0.
    const std::vector<float> x_nhwc = x.permuteTo(ctx, {"n", "h", "w", "c"}).contiguous(ctx).toVector();
    const std::vector<float> w_ohwi = w.permuteTo(ctx, {"out", "kh", "kw", "c"}).contiguous(ctx).toVector();
    const std::vector<float> bias = b.toVector();
    const int64_t out_hw = s.hw - 2;
    std::vector<float> y(static_cast<size_t>(s.n * out_hw * out_hw * s.oc));
    xnn_operator_t op = nullptr;
    if (xnn_create_convolution2d_nhwc_f32(0, 0, 0, 0, 3, 3, 1, 1, 1, 1, 1, static_cast<size_t>(s.c), static_cast<size_t>(s.oc),
                                          static_cast<size_t>(s.c), static_cast<size_t>(s.oc), w_ohwi.data(), bias.data(), 0.0f,
                                          INFINITY, 0, &op) != xnn_status_success ||
        xnn_setup_convolution2d_nhwc_f32(op, static_cast<size_t>(s.n), static_cast<size_t>(s.hw), static_cast<size_t>(s.hw),
                                         x_nhwc.data(), y.data(), nullptr) != xnn_status_success) {
      std::fprintf(stderr, "XNNPACK convolution setup failed\n");
      return 1;
    }
    xnn_run_operator(op, nullptr);
    const Tensor y_nchw = Tensor::fromSlice(ctx, {"n", "h", "w", "out"}, {s.n, out_hw, out_hw, s.oc}, y)
                              .permuteTo(ctx, {"n", "out", "h", "w"});
    std::printf("%-14s %-20s max |diff| %.2g\n", s.name, "  xnnpack check", maxDiff(y_nchw.contiguous(ctx).toVector(), want));
    report(s, "xnnpack-nhwc", timeIt([&] { xnn_run_operator(op, nullptr); }));
    const std::vector<float> x_nchw = x.toVector();
    std::vector<float> x_in(x_nchw.size()), y_out(y.size());
    const auto layout = [&] {
      transposePlanes(x_nchw.data(), x_in.data(), s.n, s.c, s.hw * s.hw);
      xnn_setup_convolution2d_nhwc_f32(op, static_cast<size_t>(s.n), static_cast<size_t>(s.hw), static_cast<size_t>(s.hw),
                                       x_in.data(), y.data(), nullptr);
      xnn_run_operator(op, nullptr);
      transposePlanes(y.data(), y_out.data(), s.n, out_hw * out_hw, s.oc);
    };
    layout();
    std::printf("%-14s %-20s max |diff| %.2g\n", s.name, "  layout check", maxDiff(y_out, want));
    report(s, "xnnpack+layout", timeIt(layout));
    xnn_delete_operator(op);
#endif
  }
}
