// The SIMD kernels of backend/cpu/vector_ops.h against the scalar loops they stand in for, and the
// threading of the ops that use them: every op runs with the kernels off (the scalar reference)
// and on, on 1 and 2 threads, on awkward shapes (size 0 and 1, odd sizes, sizes that are no
// multiple of any vector width, rows longer than a parallel grain, permuted and narrowed views).
// 1 and 2 threads must agree to the bit, with or without the kernels.
#include "test_helpers.h"

#include <cstring>
#include <limits>

#include "fucina/backend/cpu/softmax.h"
#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/backend/activation.h"

using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::Tensor;
using test::wave;
namespace vec = fucina::kernels::vec;

namespace {

using Outputs = std::vector<std::vector<float>>;

// Scalar reference loops for the lifetime of the object.
struct ScalarKernels {
  ScalarKernels() { vec::setEnabled(false); }
  ~ScalarKernels() { vec::setEnabled(true); }
};

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void requireClose(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(want[i])) {
      CHECK(got[i] == want[i]);
    } else {
      CHECK(std::fabs(got[i] - want[i]) <= abs + rel * std::fabs(want[i]));
    }
  }
}

// f(ctx) -> its outputs (values and gradients): SIMD on 1 thread == on 2 threads (bit for bit),
// the scalar path likewise, and SIMD close to scalar.
template <class F>
void compareKernels(const F& f, double rel, double abs) {
  auto run = [&](int threads) {
    ExecContext ctx(ExecOptions{.threads = threads});
    return f(ctx);
  };
  Outputs scalar1, scalar2;
  {
    ScalarKernels off;
    scalar1 = run(1);
    scalar2 = run(2);
  }
  const Outputs simd1 = run(1), simd2 = run(2);
  REQUIRE(simd1.size() == scalar1.size());
  for (size_t k = 0; k < simd1.size(); ++k) {
    INFO("output " << k);
    CHECK(sameBits(scalar1[k], scalar2[k]));
    CHECK(sameBits(simd1[k], simd2[k]));
    requireClose(simd1[k], scalar1[k], rel, abs);
  }
}

// Values with every awkward float among smooth ones.
std::vector<float> awkwardValues(size_t n) {
  std::vector<float> v = wave(n, 4, 0.3f, 0.37f);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 30.0f, -30.0f, 1e-30f, -1e-30f, 1e30f};
  for (size_t i = 0; i < n && i < std::size(specials); ++i) v[(i * 7) % n] = specials[i];
  return v;
}

}  // namespace

TEST_CASE("vec::run matches the scalar functions on every length, stride and awkward value") {
  using Op = vec::Op;
  auto ref = [](Op op, float x, float y) -> float {
    switch (op) {
      case Op::copy: return x;
      case Op::neg: return -x;
      case Op::relu: return x > 0 ? x : 0.0f;
      case Op::add: return x + y;
      case Op::sub: return x - y;
      case Op::mul: return x * y;
      case Op::reluGrad: return x > 0 ? y : 0.0f;
      case Op::geluErf: return fucina::backend::act::geluErf(x);
      case Op::geluErfGrad: return y * fucina::backend::act::geluErfGrad(x);
      case Op::none: break;
    }
    return 0;
  };
  for (Op op : {Op::copy, Op::neg, Op::relu, Op::geluErf, Op::add, Op::sub, Op::mul, Op::reluGrad, Op::geluErfGrad}) {
    for (int64_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 1000}) {
      const auto x = awkwardValues(static_cast<size_t>(std::max<int64_t>(n, 1)));
      const auto y = wave(static_cast<size_t>(std::max<int64_t>(n, 1)), 2, 1.1f, 0.71f);
      for (int64_t sx : {0, 1})
        for (int64_t sy : {0, 1}) {
          INFO("op " << int(op) << " n " << n << " sx " << sx << " sy " << sy);
          std::vector<float> out(static_cast<size_t>(n) + 1, 42.0f), want(static_cast<size_t>(n));
          vec::run(op, n, x.data(), sx, y.data(), sy, out.data());
          CHECK(out[static_cast<size_t>(n)] == 42.0f);  // nothing written past n
          out.pop_back();
          for (int64_t i = 0; i < n; ++i) want[size_t(i)] = ref(op, x[size_t(i * sx)], y[size_t(i * sy)]);
          if (op == Op::geluErf || op == Op::geluErfGrad) requireClose(out, want, 1e-6, 1e-7);  // vector erfc vs libm's erf
          else CHECK(sameBits(out, want));
        }
    }
  }
}

// Against double precision over [-16, 16]: the negative tail, where Φ(x) is tiny, is where an
// absolute-error erf (or float's 1 + erf) fails. ±inf as the scalar ops: gelu(inf) = inf,
// gelu(-inf) = NaN (-inf·0), and NaN gradients (inf·0).
static void checkGeluTails() {
  using Op = vec::Op;
  std::vector<float> x;
  for (int i = -1600; i <= 1600; ++i) x.push_back(0.01f * static_cast<float>(i));
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {-0.0f, 1e-30f, -1e-30f, inf, -inf});
  const std::vector<float> ones(x.size(), 1.0f);
  std::vector<float> value(x.size()), grad(x.size());
  vec::run(Op::geluErf, static_cast<int64_t>(x.size()), x.data(), 1, nullptr, 0, value.data());
  vec::run(Op::geluErfGrad, static_cast<int64_t>(x.size()), x.data(), 1, ones.data(), 1, grad.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const double a = x[i];
    INFO("x = " << x[i] << ": gelu " << value[i] << ", gradient " << grad[i]);
    if (std::isinf(a)) {
      CHECK((a > 0 ? value[i] == inf : std::isnan(value[i])));
      CHECK(std::isnan(grad[i]));
      continue;
    }
    const double cdf = 0.5 * std::erfc(-a / std::sqrt(2.0));
    const double want_value = a * cdf;
    const double want_grad = cdf + a * std::exp(-0.5 * a * a) / std::sqrt(2.0 * M_PI);
    // 1e-6 relative where the values are not tiny; without a fused multiply-add the exponent's
    // rounding gives a few 1e-6 past |x| = 5. Around x = -0.75 the gradient is a difference of two
    // terms near 0.23, each good to a few 1e-8 (erfc's fit 3.9e-8 relative, an ulp of 1.5e-8 each).
    const double rel = std::abs(a) < 5 ? 1e-6 : 1e-5;
    CHECK(std::abs(value[i] - want_value) <= rel * std::abs(want_value) + 1e-37);
    CHECK(std::abs(grad[i] - want_grad) <= rel * std::abs(want_grad) + (std::abs(a) < 2 ? 6e-8 : 1e-37));
  }
}

TEST_CASE("vec geluErf and its gradient keep a small relative error in both tails") { checkGeluTails(); }

// The kernels' exp (ExpCore, through expShiftScaleRow with shift 0 and scale 1) against double
// precision: 2e-7 relative where the result is a normal float, gradual underflow to 0 below it,
// +inf past 88.72, 0 for -inf and below -104, NaN kept.
static void checkExp() {
  std::vector<float> x;
  for (int i = -104000; i <= 88720; i += 7) x.push_back(0.001f * static_cast<float>(i));
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  x.insert(x.end(), {0.0f, -0.0f, 88.7f, 88.8f, 1e30f, inf, -103.9f, -104.5f, -1e30f, -inf, nan});
  std::vector<float> y(x.size());
  vec::expShiftScaleRow(x.data(), static_cast<int64_t>(x.size()), 0.0f, 1.0f, y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("exp(" << x[i] << ") = " << y[i]);
    const double want = std::exp(static_cast<double>(x[i]));
    if (std::isnan(x[i])) CHECK(std::isnan(y[i]));
    else if (x[i] > 88.72f) CHECK(y[i] == inf);
    else if (x[i] < -104.0f) CHECK(y[i] == 0.0f);
    else if (want >= std::numeric_limits<float>::min()) CHECK(std::abs(y[i] - want) <= 2e-7 * want);
    else CHECK(std::abs(y[i] - want) <= 1.5 * std::numeric_limits<float>::denorm_min());  // subnormal: an ulp
  }
}

TEST_CASE("vec exp keeps a small relative error from -104 to 88.7, with inf, NaN and underflow") { checkExp(); }

#ifndef __EMSCRIPTEN__
TEST_CASE("vec exp and geluErf: every SIMD target this processor runs keeps their error") {
  test::forEachSimdTarget([] {  // SSE4's erfc has no FMA to split −x²/2 with
    checkExp();
    checkGeluTails();
  });
}
#endif

// The pass that keeps gelu's partial (Note [Kept partials]) against run's forward and gradient.
static void checkGeluKeep() {
  using Op = vec::Op;
  for (int64_t n : {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 33, 1000}) {
    INFO("n " << n);
    const auto size = static_cast<size_t>(n);
    const std::vector<float> x = awkwardValues(size), ones(size, 1.0f);
    std::vector<float> y(size), d(size), want_y(size), want_d(size);
    vec::geluErfAndGrad(n, x.data(), y.data(), d.data());
    vec::run(Op::geluErf, n, x.data(), 1, nullptr, 0, want_y.data());
    vec::run(Op::geluErfGrad, n, x.data(), 1, ones.data(), 1, want_d.data());
    CHECK(sameBits(y, want_y));
    CHECK(sameBits(d, want_d));
  }
}

TEST_CASE("vec::geluErfAndGrad gives run's geluErf and its gradient at 1, bit for bit") {
  checkGeluKeep();
#ifndef __EMSCRIPTEN__
  test::forEachSimdTarget(checkGeluKeep);
#endif
}

TEST_CASE("geluErf keeps its partial while recording: the values and gradients of the recomputing VJP") {
  // The recomputing VJP's gradient is vec::run's geluErfGrad with the kernels on, the scalar
  // g·geluErfGrad(a) with them off. Kernels on and off, 1 and 2 threads, empty to past a grain.
  using Op = vec::Op;
  for (const bool simd : {true, false}) {
    vec::setEnabled(simd);
    for (const int threads : {1, 2}) {
      for (fucina::Extents shape : {fucina::Extents{0, 3}, {1, 1}, {3, 5}, {7, 10001}}) {
        INFO("simd " << simd << ", " << threads << " threads, shape " << shape[0] << "x" << shape[1]);
        ExecContext ctx(ExecOptions{.threads = threads});
        const auto n = static_cast<size_t>(shape[0] * shape[1]);
        const std::vector<float> xv = awkwardValues(n), rv = wave(n, 2, 0.9f, 0.3f);
        Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, shape, xv);
        const size_t before = ctx.memory().live_bytes;
        const Tensor y = x.geluErf(ctx);
        CHECK(ctx.memory().live_bytes - before == 2 * n * sizeof(float));  // y and the kept partial
        y.mul(ctx, Tensor::fromSlice(ctx, {"a", "b"}, shape, rv)).sumAll(ctx).backward(ctx);
        std::vector<float> want_y(n), want_g(n);
        if (simd) {
          vec::run(Op::geluErf, static_cast<int64_t>(n), xv.data(), 1, nullptr, 0, want_y.data());
          vec::run(Op::geluErfGrad, static_cast<int64_t>(n), xv.data(), 1, rv.data(), 1, want_g.data());
        } else {
          for (size_t i = 0; i < n; ++i) {
            want_y[i] = fucina::backend::act::geluErf(xv[i]);
            want_g[i] = rv[i] * fucina::backend::act::geluErfGrad(xv[i]);
          }
        }
        CHECK(sameBits(y.toVector(), want_y));
        CHECK(sameBits(test::gradOf(ctx, x), want_g));
      }
    }
  }
  vec::setEnabled(true);
}

TEST_CASE("vec::softmaxRow matches the scalar reference, with -inf, NaN and all -inf rows") {
  const float inf = std::numeric_limits<float>::infinity();
  for (bool log : {false, true}) {
    for (int64_t n : {1, 2, 3, 7, 8, 9, 17, 33, 128, 257}) {
      auto x = wave(static_cast<size_t>(n), 6, 0.2f, 0.9f);
      if (n > 2) x[1] = -inf;
      std::vector<float> got(x.size()), want(x.size());
      {
        ScalarKernels off;
        ExecContext ctx(ExecOptions{.threads = 1});
        fucina::kernels::softmaxRows(ctx, x.data(), want.data(), 1, n, log);
      }
      vec::softmaxRow(x.data(), got.data(), n, log);
      INFO("n " << n << " log " << log);
      requireClose(got, want, 2e-6, 1e-7);
      std::vector<float> in_place = x;  // y may alias x
      vec::softmaxRow(in_place.data(), in_place.data(), n, log);
      CHECK(sameBits(in_place, got));
    }
  }
  std::vector<float> all_inf(5, -inf), out(5);
  vec::softmaxRow(all_inf.data(), out.data(), 5, false);
  for (float v : out) CHECK(std::isnan(v));
  std::vector<float> with_nan{1, std::numeric_limits<float>::quiet_NaN(), 2};
  vec::softmaxRow(with_nan.data(), out.data(), 3, false);
  for (int i = 0; i < 3; ++i) CHECK(std::isnan(out[size_t(i)]));
}

TEST_CASE("SIMD elementwise ops match the scalar path on awkward shapes and views, 1 and 2 threads") {
  // 70001 elements: one contiguous row longer than two parallel grains, split mid-row.
  for (fucina::Extents shape : {fucina::Extents{0, 3}, {1, 1}, {1, 7}, {3, 5}, {5, 33}, {7, 10001}}) {
    INFO("shape " << shape[0] << "x" << shape[1]);
    const auto n = static_cast<size_t>(shape[0] * shape[1]);
    compareKernels([&](ExecContext& ctx) {
      Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, shape, awkwardValues(n));
      Tensor w = Tensor::variableFromSlice(ctx, {"b"}, {shape[1]}, wave(static_cast<size_t>(shape[1]), 1.5f, 0.4f, 0.8f));
      Tensor v = Tensor::variableFromSlice(ctx, {"b", "a"}, {shape[1], shape[0]}, wave(n, 2, 0.9f, 0.3f));
      Tensor xt = x.permuteTo(ctx, {"b", "a"});  // non-contiguous
      Tensor y = x.relu(ctx).add(ctx, x.geluErf(ctx)).mul(ctx, w).sub(ctx, v).add(ctx, xt.neg(ctx).mul(ctx, v));
      Tensor narrowed = shape[1] > 2 ? x.narrow(ctx, "b", 1, shape[1] - 2).geluErf(ctx).sumAll(ctx) : x.sumAll(ctx);
      Tensor loss = y.mul(ctx, y.scale(ctx, 0.5)).sumAll(ctx).add(ctx, narrowed);
      loss.backward(ctx);
      return Outputs{y.toVector(), test::gradOf(ctx, x), test::gradOf(ctx, w), test::gradOf(ctx, v)};
    }, 1e-5, 1e-5);
  }
}

TEST_CASE("SIMD norms, softmax, cross-entropy and attention match the scalar path, 1 and 2 threads") {
  for (int64_t m : {1, 3, 8, 17, 128}) {
    for (int64_t rows : {1, 5, 300}) {
      INFO("rows " << rows << " m " << m);
      compareKernels([&](ExecContext& ctx) {
        const auto n = static_cast<size_t>(rows * m);
        Tensor x = Tensor::variableFromSlice(ctx, {"e", "r"}, {m, rows}, wave(n, 3, 0.1f, 0.77f));  // axis not last
        Tensor w = Tensor::fromSlice(ctx, {"r", "e"}, {rows, m}, wave(n, 1, 1.3f, 0.41f));
        Tensor ln = x.layerNorm(ctx, "e");
        Tensor rms = x.rmsNorm(ctx, "e");
        Tensor sm = x.softmax(ctx, "e");
        Tensor lsm = x.logSoftmax(ctx, "e");
        std::vector<int32_t> labels(static_cast<size_t>(rows));
        for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>((i * 5) % static_cast<size_t>(m));
        Tensor lab = Tensor::fromInts(ctx, {"r"}, {rows}, std::vector<int64_t>(labels.begin(), labels.end()), fucina::DType::i32);
        Tensor ce = x.crossEntropy(ctx, lab, "e");
        Tensor loss = ln.mul(ctx, w).add(ctx, rms.mul(ctx, w)).add(ctx, sm.mul(ctx, w)).add(ctx, lsm.mul(ctx, w)).sumAll(ctx).add(ctx, ce);
        loss.backward(ctx);
        return Outputs{ln.toVector(), rms.toVector(), sm.toVector(), lsm.toVector(), ce.toVector(), test::gradOf(ctx, x)};
      }, 2e-5, 2e-5);
    }
  }
  for (auto [t, d] : {std::pair<int64_t, int64_t>{1, 1}, {5, 3}, {19, 8}, {33, 16}}) {
    INFO("attention T " << t << " D " << d);
    compareKernels([&, t = t, d = d](ExecContext& ctx) {  // copies: clang 14 cannot capture bindings
      const auto n = static_cast<size_t>(2 * 2 * t * d);
      Tensor q = Tensor::variableFromSlice(ctx, {"b", "head", "t", "d"}, {2, 2, t, d}, wave(n, 1.5f, 0.1f, 0.53f));
      Tensor k = Tensor::variableFromSlice(ctx, {"b", "t", "head", "d"}, {2, t, 2, d}, wave(n, 1.2f, 0.7f, 0.31f));
      Tensor v = Tensor::variableFromSlice(ctx, {"b", "head", "t", "d"}, {2, 2, t, d}, wave(n, 1, 0.4f, 0.67f));
      Tensor w = Tensor::fromSlice(ctx, {"b", "head", "t", "d"}, {2, 2, t, d}, wave(n, 1, 1.9f, 0.23f));
      fucina::AttentionOptions o;
      Tensor y = Tensor::groupedAttention(ctx, q, k, v, o);
      y.mul(ctx, w).sumAll(ctx).backward(ctx);
      return Outputs{y.toVector(), test::gradOf(ctx, q), test::gradOf(ctx, k), test::gradOf(ctx, v)};
    }, 2e-5, 2e-5);
  }
}

static void checkPooling() {
  struct Case {
    int64_t n, c, h, w, k, stride, pad;
  };
  // 2x2 windows with stride 2 (Note [2x2 pooling without gathers]) on rows of fewer, exactly and
  // more than a vector of outputs (4 lanes in wasm, 8 or 16 natively) with a ragged rest and odd
  // widths and heights; each also runs without a gradient (no indices kept). The images are pooled
  // as planes {n, c, h, w} and as {h, n, w, c}: c after both pooled axes, so channels last
  // (vec::takeLarger over the c lanes; 70 of them cross a block of 64).
  for (const Case& g : {Case{1, 1, 2, 2, 2, 2, 0}, Case{2, 3, 7, 9, 2, 2, 0}, Case{3, 5, 11, 13, 3, 2, 1},
                        Case{2, 4, 6, 5, 3, 1, 1}, Case{16, 8, 26, 26, 2, 2, 0}, Case{2, 2, 4, 8, 2, 2, 0},
                        Case{1, 2, 5, 33, 2, 2, 0}, Case{2, 3, 9, 70, 2, 2, 0}, Case{2, 70, 5, 4, 3, 1, 1},
                        Case{3, 2, 11, 11, 2, 2, 0}, Case{1, 1, 3, 17, 2, 2, 0}, Case{1, 2, 2, 3, 2, 2, 0},
                        Case{1, 1, 3, 2, 2, 2, 0}}) {
    INFO("pool " << g.n << "x" << g.c << "x" << g.h << "x" << g.w << " k" << g.k << " s" << g.stride << " p" << g.pad);
    compareKernels([&](ExecContext& ctx) {
      const auto count = static_cast<size_t>(g.n * g.c * g.h * g.w);
      auto xv = wave(count, 2, 0.3f, 0.61f);
      for (size_t i = 0; i < count; i += 5) xv[i] = xv[(i + 1) % count];  // ties
      if (count > 20) xv[17] = std::numeric_limits<float>::quiet_NaN();
      Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "h", "w"}, {g.n, g.c, g.h, g.w}, xv);
      Tensor p = x.permuteTo(ctx, {"h", "n", "w", "c"}).maxPool2d(ctx, g.k, g.k, g.stride, g.stride, g.pad);
      const auto pn = static_cast<size_t>(p.numel());
      Tensor wp = Tensor::fromSlice(ctx, p.tags(), p.shape(), wave(pn, 1, 0.2f, 0.9f));
      Tensor planar = x.maxPool2d(ctx, g.k, g.k, g.stride, g.stride, g.pad);
      Tensor wq = Tensor::fromSlice(ctx, planar.tags(), planar.shape(), wave(pn, 1, 0.7f, 0.3f));
      p.mul(ctx, wp).sumAll(ctx).add(ctx, planar.mul(ctx, wq).sumAll(ctx)).backward(ctx);
      const auto off = fucina::noGrad();
      Tensor inference = x.permuteTo(ctx, {"h", "n", "w", "c"}).maxPool2d(ctx, g.k, g.k, g.stride, g.stride, g.pad);
      CHECK(sameBits(inference.toVector(), p.toVector()));
      return Outputs{p.toVector(), planar.toVector(), test::gradOf(ctx, x), inference.toVector()};
    }, 0, 0);
  }
}

// Every length from empty to past four vectors of the widest target (its unrolled loop, the whole
// vectors after it, the padded tail), against the sum in double.
static void checkSumRow() {
  const std::vector<float> x = wave(200, 1, 0.3f, 0.1f);
  for (int64_t n = 0; n <= 200; ++n) {
    double want = 0, magnitude = 0;
    for (int64_t i = 0; i < n; ++i) want += x[static_cast<size_t>(i)], magnitude += std::abs(x[static_cast<size_t>(i)]);
    INFO("n " << n);
    REQUIRE(fucina::kernels::vec::sumRow(x.data(), n) == Approx(want).margin(1e-6 * (1 + magnitude)));
  }
}

TEST_CASE("vec::sumRow matches the sum in double on every length") { checkSumRow(); }

#ifndef __EMSCRIPTEN__
TEST_CASE("vec::sumRow: every SIMD target this processor runs") { test::forEachSimdTarget(checkSumRow); }

TEST_CASE("pooling: every SIMD target this processor runs matches the scalar path") {
  // 16 lanes leave W2's rows of 13 and 5 outputs short of a vector; 8 and 4 (SSE4, as wasm) split
  // them into whole vectors and a short rest.
  test::forEachSimdTarget(checkPooling);
}
#endif

TEST_CASE("pooling, convolution and sums match the scalar path on awkward geometries, 1 and 2 threads") {
  checkPooling();
  struct Conv {
    int64_t h, w, k, stride, pad, dilation;
  };
  for (const Conv& g : {Conv{5, 7, 3, 1, 0, 1}, Conv{6, 5, 3, 1, 1, 1}, Conv{9, 8, 3, 1, 2, 2}, Conv{7, 9, 3, 2, 1, 1},
                        Conv{1, 1, 1, 1, 0, 1}, Conv{4, 4, 3, 1, 2, 1}}) {
    INFO("conv " << g.h << "x" << g.w << " k" << g.k << " s" << g.stride << " p" << g.pad << " d" << g.dilation);
    compareKernels([&](ExecContext& ctx) {
      Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "h", "w"}, {3, 2, g.h, g.w}, wave(static_cast<size_t>(6 * g.h * g.w), 1, 0.1f, 0.47f));
      Tensor wt = Tensor::variableFromSlice(ctx, {"out", "c", "kh", "kw"}, {3, 2, g.k, g.k}, wave(static_cast<size_t>(6 * g.k * g.k), 0.5f, 0.8f, 0.9f));
      Tensor b = Tensor::variableFromSlice(ctx, {"out"}, {3}, {0.1f, -0.2f, 0.3f});
      fucina::Conv2dOptions o;
      o.stride_h = o.stride_w = g.stride;
      o.pad_h = o.pad_w = g.pad;
      o.dilation_h = o.dilation_w = g.dilation;
      Tensor y = x.conv2d(ctx, wt, b, o).relu(ctx);
      Tensor wy = Tensor::fromSlice(ctx, y.tags(), y.shape(), wave(static_cast<size_t>(y.numel()), 1, 0.5f, 0.33f));
      y.mul(ctx, wy).sumAll(ctx).backward(ctx);
      return Outputs{y.toVector(), test::gradOf(ctx, x), test::gradOf(ctx, wt), test::gradOf(ctx, b)};
    }, 1e-5, 1e-5);
  }
  for (fucina::Extents shape : {fucina::Extents{1, 1, 1}, {3, 1, 5}, {2, 300, 7}, {64, 33, 121}, {200, 3, 130}}) {
    INFO("sum " << shape[0] << "x" << shape[1] << "x" << shape[2]);
    compareKernels([&](ExecContext& ctx) {
      const auto n = static_cast<size_t>(shape[0] * shape[1] * shape[2]);
      Tensor x = Tensor::fromSlice(ctx, {"a", "b", "c"}, shape, wave(n, 1, 0.3f, 0.1f));
      Tensor xt = x.permuteTo(ctx, {"c", "a", "b"});
      return Outputs{x.sum(ctx, "a").toVector(), x.sum(ctx, "c").toVector(), x.sum(ctx, "b").toVector(),
                     xt.sum(ctx, "b").toVector(), x.sum(ctx, "a").sum(ctx, "c").toVector(), x.sumAll(ctx).toVector()};
      // Sums of up to 256k terms with cancellation, summed in another order per ISA: on AVX2
      // (Zen 3) the SIMD and scalar orders differ by up to ~2e-5 on sums of magnitude 10.
    }, 1e-5, 1e-5);
  }
}

TEST_CASE("SIMD AdamW matches the scalar update, 1 and 2 threads") {
  for (int64_t n : {1, 7, 17, 70001}) {
    INFO("n " << n);
    compareKernels([&](ExecContext& ctx) {
      Tensor p = Tensor::variableFromSlice(ctx, {"i"}, {n}, wave(static_cast<size_t>(n), 1, 0.2f, 0.3f));
      Tensor w = Tensor::fromSlice(ctx, {"i"}, {n}, wave(static_cast<size_t>(n), 2, 0.5f, 0.7f));
      fucina::optim::AdamW opt(std::vector<Tensor>{p});
      for (int step = 0; step < 3; ++step) {
        opt.zeroGrad();
        p.mul(ctx, w).mul(ctx, p).sumAll(ctx).backward(ctx);
        opt.step(ctx);
      }
      return Outputs{p.toVector()};
    }, 1e-5, 1e-6);
  }
}
