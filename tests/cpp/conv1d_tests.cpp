// conv1d, convTranspose1d, the causal convolutions, conv2dRelu, unfold/fold and channelAffine:
// values against naive scalar loops on awkward shapes and layouts, gradcheck of every operand,
// adjointness, bad inputs, and bit-identical results on 1 and 2 threads.
#include <cmath>
#include <random>
#include <string>

#include "test_helpers.h"

using fucina::Conv1dAxes;
using fucina::Conv1dOptions;
using fucina::ConvTranspose1dOptions;
using fucina::ExecContext;
using fucina::Tags;
using fucina::Tensor;
using fucina::UnfoldOptions;

namespace {

std::vector<float> rnd(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

void requireClose(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(want[i]).margin(tol));
  }
}

double dotOf(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

// One 1-D convolution: x [n, c, l], w [oc, c/g, k]; output position t reads x[t·s - left + j·d].
struct C1 {
  int64_t n, c, l, oc, k, s, p, d, g;
};
int64_t outLen(const C1& k) { return (k.l + 2 * k.p - k.d * (k.k - 1) - 1) / k.s + 1; }

std::vector<float> naiveConv1d(const C1& k, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>* bias, int64_t left, int64_t lout) {
  const int64_t cg = k.c / k.g, ocg = k.oc / k.g;
  std::vector<float> y(size_t(k.n * k.oc * lout));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.oc; ++o)
      for (int64_t t = 0; t < lout; ++t) {
        double acc = bias ? (*bias)[size_t(o)] : 0.0;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t j = 0; j < k.k; ++j) {
            const int64_t at = t * k.s - left + j * k.d;
            if (at < 0 || at >= k.l) continue;
            acc += double(x[size_t((n * k.c + o / ocg * cg + ci) * k.l + at)]) * w[size_t((o * cg + ci) * k.k + j)];
          }
        y[size_t((n * k.oc + o) * lout + t)] = float(acc);
      }
  return y;
}

// Transposed: x [n, c, l], w [c, oc/g, k] -> [n, oc, lout]; input i scatters to i·s - p + j·d.
std::vector<float> naiveConvT1d(const C1& k, int64_t op, const std::vector<float>& x, const std::vector<float>& w,
                                const std::vector<float>* bias) {
  const int64_t lout = (k.l - 1) * k.s - 2 * k.p + k.d * (k.k - 1) + op + 1;
  const int64_t cg = k.c / k.g, ocg = k.oc / k.g;
  std::vector<double> y(size_t(k.n * k.oc * lout), 0.0);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.oc; ++o)
      for (int64_t t = 0; t < lout; ++t) y[size_t((n * k.oc + o) * lout + t)] = bias ? (*bias)[size_t(o)] : 0.0;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t ci = 0; ci < k.c; ++ci)
      for (int64_t i = 0; i < k.l; ++i)
        for (int64_t ol = 0; ol < ocg; ++ol)
          for (int64_t j = 0; j < k.k; ++j) {
            const int64_t t = i * k.s - k.p + j * k.d;
            if (t < 0 || t >= lout) continue;
            const int64_t o = ci / cg * ocg + ol;
            y[size_t((n * k.oc + o) * lout + t)] += double(x[size_t((n * k.c + ci) * k.l + i)]) * w[size_t((ci * ocg + ol) * k.k + j)];
          }
  return {y.begin(), y.end()};
}

Conv1dOptions optionsOf(const C1& k) { return {.stride = k.s, .padding = k.p, .dilation = k.d, .groups = k.g}; }

const std::vector<C1>& conv1dConfigs() {
  static const std::vector<C1> cs = {
      // n  c   l oc  k  s  p  d  g
      {1, 1, 1, 1, 1, 1, 0, 1, 1},   // all size 1
      {2, 3, 7, 4, 3, 1, 0, 1, 1},   // odd sizes
      {3, 2, 9, 3, 3, 2, 1, 1, 1},   // stride 2 with padding
      {1, 2, 5, 2, 5, 1, 0, 1, 1},   // kernel as long as the input
      {2, 4, 13, 6, 3, 3, 2, 2, 2},  // dilation, stride, padding, groups 2
      {2, 4, 6, 4, 3, 1, 1, 1, 4},   // depthwise
      {11, 6, 4, 3, 1, 1, 0, 1, 3},  // kernel 1, groups 3, more images than chunks
      {1, 2, 2, 2, 2, 3, 3, 1, 1},   // padding wider than the input
      {3, 3, 10, 3, 3, 2, 2, 2, 3},  // depthwise with stride, padding and dilation
      {2, 3, 5, 6, 2, 1, 0, 1, 3},   // groups = channels, two outputs per channel (not the depthwise rows)
  };
  return cs;
}

}  // namespace

// ---------------------------------------------------------------- conv1d

TEST_CASE("conv1d: values against a direct convolution on awkward shapes, threads and layouts") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    for (size_t ci = 0; ci < conv1dConfigs().size(); ++ci) {
      const C1& k = conv1dConfigs()[ci];
      INFO("config " << ci << ", " << threads << " threads");
      const auto xv = rnd(size_t(k.n * k.c * k.l), 100 + uint32_t(ci));
      const auto wv = rnd(size_t(k.oc * (k.c / k.g) * k.k), 200 + uint32_t(ci));
      const auto bv = rnd(size_t(k.oc), 300 + uint32_t(ci));
      const auto want = naiveConv1d(k, xv, wv, &bv, k.p, outLen(k));
      Tensor x = Tensor::fromSlice(ctx, {"n", "c", "t"}, {k.n, k.c, k.l}, xv);
      Tensor w = Tensor::fromSlice(ctx, {"out", "c", "k"}, {k.oc, k.c / k.g, k.k}, wv);
      Tensor b = Tensor::fromSlice(ctx, {"out"}, {k.oc}, bv);
      Tensor y = x.conv1d(ctx, w, b, optionsOf(k));
      CHECK(y.tags() == Tags{"n", "out", "t"});
      CHECK(y.shape() == fucina::Extents{k.n, k.oc, outLen(k)});
      requireClose(y.toVector(), want);
      // A permuted view of the input and a permuted weight: the result keeps the input's order.
      Tensor wp = Tensor::fromSlice(ctx, {"k", "out", "c"}, {k.k, k.oc, k.c / k.g},
                                    w.permuteTo(ctx, {"k", "out", "c"}).contiguous(ctx).toVector());
      Tensor yp = x.permuteTo(ctx, {"t", "c", "n"}).conv1d(ctx, wp, b, optionsOf(k));
      CHECK(yp.tags() == Tags{"t", "out", "n"});
      requireClose(yp.permuteTo(ctx, {"n", "out", "t"}).toVector(), want);
      // A narrowed view: the same input inside a longer one.
      Tensor wide = Tensor::concat(ctx, std::vector<Tensor>{Tensor::ones(ctx, {"n", "c", "t"}, {k.n, k.c, 2}), x,
                                                            Tensor::ones(ctx, {"n", "c", "t"}, {k.n, k.c, 3})}, "t");
      requireClose(wide.narrow(ctx, "t", 2, k.l).conv1d(ctx, w, b, optionsOf(k)).toVector(), want);
    }
  }
}

TEST_CASE("conv1d: no batch axis, several batch axes, custom axis names, empty batch") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const C1 k{1, 2, 6, 3, 3, 1, 1, 1, 1};
  const auto xv = rnd(12, 1), wv = rnd(18, 2);
  const auto want = naiveConv1d(k, xv, wv, nullptr, 1, 6);
  Tensor w = Tensor::fromSlice(ctx, {"out", "c", "k"}, {3, 2, 3}, wv);
  Tensor y = Tensor::fromSlice(ctx, {"c", "t"}, {2, 6}, xv).conv1d(ctx, w, optionsOf(k));
  CHECK(y.tags() == Tags{"out", "t"});
  requireClose(y.toVector(), want);
  std::vector<float> many;
  for (int i = 0; i < 6; ++i) many.insert(many.end(), xv.begin(), xv.end());
  Tensor ym = Tensor::fromSlice(ctx, {"a", "b", "c", "t"}, {2, 3, 2, 6}, many).conv1d(ctx, w, optionsOf(k));
  CHECK(ym.tags() == Tags{"a", "b", "out", "t"});
  const auto got = ym.toVector();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i % want.size()]).margin(1e-4));
  Conv1dOptions o = optionsOf(k);
  o.channels = "ch", o.length = "time", o.out_channels = "f", o.kernel = "tap";
  Tensor yc = Tensor::fromSlice(ctx, {"time", "ch"}, {6, 2}, Tensor::fromSlice(ctx, {"ch", "time"}, {2, 6}, xv)
                                                             .permuteTo(ctx, {"time", "ch"}).contiguous(ctx).toVector())
                  .conv1d(ctx, Tensor::fromSlice(ctx, {"f", "ch", "tap"}, {3, 2, 3}, wv), o);
  CHECK(yc.tags() == Tags{"time", "f"});
  requireClose(yc.permuteTo(ctx, {"f", "time"}).toVector(), want);
  // An empty batch: an empty result, empty input gradient and a zero weight gradient.
  Tensor xe = Tensor::variableFromSlice(ctx, {"n", "c", "t"}, {0, 2, 6}, std::vector<float>{});
  Tensor wg = Tensor::variable(ctx, w);
  Tensor ye = xe.conv1d(ctx, wg, optionsOf(k));
  CHECK(ye.shape() == fucina::Extents{0, 3, 6});
  ye.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, xe).empty());
  CHECK(test::gradOf(ctx, wg) == std::vector<float>(18, 0.0f));
}

TEST_CASE("conv1d: gradcheck of input, weight and bias") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  for (const C1& k : std::vector<C1>{{2, 2, 7, 3, 3, 1, 0, 1, 1}, {1, 2, 8, 2, 3, 2, 1, 1, 1}, {2, 4, 9, 4, 2, 1, 2, 3, 2},
                                     {1, 3, 5, 3, 3, 1, 1, 1, 3}}) {
    INFO("c" << k.c << " l" << k.l << " k" << k.k << " s" << k.s << " p" << k.p << " d" << k.d << " g" << k.g);
    Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "t"}, {k.n, k.c, k.l}, rnd(size_t(k.n * k.c * k.l), 10));
    Tensor w = Tensor::variableFromSlice(ctx, {"out", "c", "k"}, {k.oc, k.c / k.g, k.k}, rnd(size_t(k.oc * k.c / k.g * k.k), 20));
    Tensor b = Tensor::variableFromSlice(ctx, {"out"}, {k.oc}, rnd(size_t(k.oc), 30));
    Tensor r = Tensor::fromSlice(ctx, {"n", "out", "t"}, {k.n, k.oc, outLen(k)}, rnd(size_t(k.n * k.oc * outLen(k)), 40));
    auto loss = [&](ExecContext& c) {
      return x.permuteTo(c, {"t", "n", "c"}).conv1d(c, w, b, optionsOf(k)).mul(c, r).tanh(c).sumAll(c);
    };
    fucina::gradcheck(ctx, loss, {&x, &w, &b}, {.eps = 1e-2, .abs_tol = 2e-3, .rel_tol = 2e-2});
  }
}

TEST_CASE("conv1d: bad inputs name the axes and numbers") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"n", "c", "t"}, {1, 4, 5});
  Tensor w = Tensor::ones(ctx, {"out", "c", "k"}, {2, 4, 3});
  auto opts = [](auto f) { Conv1dOptions o; f(o); return o; };
  try {
    x.conv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 4, 7}));
    FAIL("expected ShapeMismatch");
  } catch (const fucina::Error& e) {
    CHECK(e.code() == fucina::ErrorCode::ShapeMismatch);
    CHECK_THAT(e.what(), Catch::Contains("conv1d") && Catch::Contains("'k'=7") && Catch::Contains("'t'=5"));
  }
  CHECK_NOTHROW(x.conv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 4, 7}), opts([](Conv1dOptions& o) { o.padding = 1; })));
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, opts([](Conv1dOptions& o) { o.dilation = 3; })), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 2, 3}), opts([](Conv1dOptions& o) { o.groups = 3; })),
                     InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {3, 2, 3}), opts([](Conv1dOptions& o) { o.groups = 2; })),
                     InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, opts([](Conv1dOptions& o) { o.groups = 2; })), ShapeMismatch);  // weight c must be 2
  CHECK_FUCINA_ERROR(x.conv1d(ctx, Tensor::ones(ctx, {"out", "c"}, {2, 4})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, Tensor::ones(ctx, {"out", "c", "k", "kw"}, {2, 4, 3, 1})), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"n", "c"}, {1, 4}).conv1d(ctx, w), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"out", "c", "t"}, {1, 4, 5}).conv1d(ctx, w), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 4, 0})), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, opts([](Conv1dOptions& o) { o.stride = 0; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, opts([](Conv1dOptions& o) { o.padding = -1; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, opts([](Conv1dOptions& o) { o.dilation = 0; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, opts([](Conv1dOptions& o) { o.groups = 0; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, opts([](Conv1dOptions& o) { o.kernel = "t"; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, Tensor::ones(ctx, {"out"}, {3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, w, Tensor::ones(ctx, {"c"}, {2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 4, 3}, fucina::DType::i32)), DTypeMismatch);
}

TEST_CASE("conv2d on one-row images with groups = channels: depthwise rows only where the output has one row") {
  // conv2d of {c, h=1, w} with a 1 x kw kernel is conv1d; with pad_h = 1 it has three output rows,
  // the outer two zero, and must not take the depthwise row loops.
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const auto xv = rnd(2 * 3 * 7, 1), wv = rnd(3 * 3, 2);
  Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {2, 3, 1, 7}, xv);
  Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {3, 1, 1, 3}, wv);
  const auto want = naiveConv1d({2, 3, 7, 3, 3, 1, 1, 1, 3}, xv, wv, nullptr, 1, 7);
  requireClose(x.conv2d(ctx, w, fucina::Conv2dOptions{.pad_w = 1, .groups = 3}).toVector(), want);
  Tensor y3 = x.conv2d(ctx, w, fucina::Conv2dOptions{.pad_h = 1, .pad_w = 1, .groups = 3});
  CHECK(y3.shape() == fucina::Extents{2, 3, 3, 7});
  requireClose(y3.narrow(ctx, "h", 1, 1).contiguous(ctx).toVector(), want);
  const auto edges = y3.narrow(ctx, "h", 0, 1).add(ctx, y3.narrow(ctx, "h", 2, 1).abs(ctx)).abs(ctx).sumAll(ctx).item();
  CHECK(edges == 0.0f);
}

// ---------------------------------------------------------------- convTranspose1d

namespace {
struct T1 {
  C1 k;
  int64_t op;  // output_padding
};
ConvTranspose1dOptions tOptionsOf(const T1& t) {
  return {.stride = t.k.s, .padding = t.k.p, .output_padding = t.op, .dilation = t.k.d, .groups = t.k.g};
}
int64_t tOutLen(const T1& t) { return (t.k.l - 1) * t.k.s - 2 * t.k.p + t.k.d * (t.k.k - 1) + t.op + 1; }
const std::vector<T1>& transposedConfigs() {
  static const std::vector<T1> cs = {
      //  n  c  l oc  k  s  p  d  g  op
      {{1, 1, 1, 1, 1, 1, 0, 1, 1}, 0},
      {{2, 3, 5, 4, 3, 1, 0, 1, 1}, 0},
      {{3, 2, 4, 3, 3, 2, 1, 1, 1}, 1},   // stride 2, output_padding 1
      {{2, 4, 6, 6, 3, 3, 2, 2, 2}, 2},   // groups 2, dilation 2, output_padding 2 < stride 3
      {{1, 2, 3, 2, 2, 1, 0, 3, 1}, 2},   // output_padding 2 >= stride 1 but < dilation 3
      {{11, 4, 7, 4, 4, 1, 1, 1, 4}, 0},  // depthwise, more images than chunks
  };
  return cs;
}
}  // namespace

TEST_CASE("convTranspose1d: values against a direct transposed convolution, threads and layouts") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    for (size_t ci = 0; ci < transposedConfigs().size(); ++ci) {
      const T1& t = transposedConfigs()[ci];
      const C1& k = t.k;
      INFO("config " << ci << ", " << threads << " threads");
      const auto xv = rnd(size_t(k.n * k.c * k.l), 500 + uint32_t(ci));
      const auto wv = rnd(size_t(k.c * (k.oc / k.g) * k.k), 600 + uint32_t(ci));
      const auto bv = rnd(size_t(k.oc), 700 + uint32_t(ci));
      const auto want = naiveConvT1d(k, t.op, xv, wv, &bv);
      Tensor x = Tensor::fromSlice(ctx, {"n", "c", "t"}, {k.n, k.c, k.l}, xv);
      Tensor w = Tensor::fromSlice(ctx, {"c", "out", "k"}, {k.c, k.oc / k.g, k.k}, wv);
      Tensor b = Tensor::fromSlice(ctx, {"out"}, {k.oc}, bv);
      Tensor y = x.convTranspose1d(ctx, w, b, tOptionsOf(t));
      CHECK(y.tags() == Tags{"n", "out", "t"});
      CHECK(y.shape() == fucina::Extents{k.n, k.oc, tOutLen(t)});
      requireClose(y.toVector(), want);
      Tensor yp = x.permuteTo(ctx, {"c", "t", "n"}).convTranspose1d(ctx, w.permuteTo(ctx, {"k", "c", "out"}), b, tOptionsOf(t));
      CHECK(yp.tags() == Tags{"out", "t", "n"});
      requireClose(yp.permuteTo(ctx, {"n", "out", "t"}).toVector(), want);
    }
  }
}

TEST_CASE("convTranspose1d: the adjoint of conv1d (<convT(y), x> == <y, conv(x)>)") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  for (const T1& t : transposedConfigs()) {
    if (t.op >= t.k.s) continue;  // conv1d of the transposed output's length gives back l only then
    const C1& k = t.k;
    // conv1d maps oc channels of length tOutLen to c channels of length l with weight {c, oc/g, k}.
    const auto yv = rnd(size_t(k.n * k.c * k.l), 1), xv = rnd(size_t(k.n * k.oc * tOutLen(t)), 2);
    const auto wv = rnd(size_t(k.c * (k.oc / k.g) * k.k), 3);
    Tensor y = Tensor::fromSlice(ctx, {"n", "c", "t"}, {k.n, k.c, k.l}, yv);
    Tensor x = Tensor::fromSlice(ctx, {"n", "out", "t"}, {k.n, k.oc, tOutLen(t)}, xv);
    const auto ty = y.convTranspose1d(ctx, Tensor::fromSlice(ctx, {"c", "out", "k"}, {k.c, k.oc / k.g, k.k}, wv), tOptionsOf(t));
    Conv1dOptions o{.channels = "out", .out_channels = "c", .stride = k.s, .padding = k.p, .dilation = k.d, .groups = k.g};
    const auto cx = x.conv1d(ctx, Tensor::fromSlice(ctx, {"c", "out", "k"}, {k.c, k.oc / k.g, k.k}, wv), o);
    REQUIRE(cx.shape() == y.shape());
    CHECK(dotOf(ty.toVector(), xv) == Approx(dotOf(yv, cx.toVector())).epsilon(1e-5));
  }
}

TEST_CASE("convTranspose1d: gradcheck of input, weight and bias") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  for (size_t ci = 1; ci < 5; ++ci) {
    const T1& t = transposedConfigs()[ci];
    const C1& k = t.k;
    INFO("config " << ci);
    Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "t"}, {k.n, k.c, k.l}, rnd(size_t(k.n * k.c * k.l), 11));
    Tensor w = Tensor::variableFromSlice(ctx, {"c", "out", "k"}, {k.c, k.oc / k.g, k.k}, rnd(size_t(k.c * k.oc / k.g * k.k), 12));
    Tensor b = Tensor::variableFromSlice(ctx, {"out"}, {k.oc}, rnd(size_t(k.oc), 13));
    Tensor r = Tensor::fromSlice(ctx, {"n", "out", "t"}, {k.n, k.oc, tOutLen(t)}, rnd(size_t(k.n * k.oc * tOutLen(t)), 14));
    auto loss = [&](ExecContext& c) {
      return x.permuteTo(c, {"t", "c", "n"}).convTranspose1d(c, w, b, tOptionsOf(t)).mul(c, r).tanh(c).sumAll(c);
    };
    fucina::gradcheck(ctx, loss, {&x, &w, &b}, {.eps = 1e-2, .abs_tol = 2e-3, .rel_tol = 2e-2});
  }
}

TEST_CASE("convTranspose1d: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"n", "c", "t"}, {1, 4, 5});
  Tensor w = Tensor::ones(ctx, {"c", "out", "k"}, {4, 3, 3});
  auto opts = [](auto f) { ConvTranspose1dOptions o; f(o); return o; };
  CHECK(x.convTranspose1d(ctx, w).shape() == fucina::Extents{1, 3, 7});
  CHECK(x.convTranspose1d(ctx, w, opts([](ConvTranspose1dOptions& o) { o.groups = 2; })).shape() == fucina::Extents{1, 6, 7});
  CHECK_FUCINA_ERROR(x.convTranspose1d(ctx, w, opts([](ConvTranspose1dOptions& o) { o.groups = 3; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.convTranspose1d(ctx, Tensor::ones(ctx, {"c", "out", "k"}, {2, 3, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.convTranspose1d(ctx, Tensor::ones(ctx, {"out", "c", "k2"}, {4, 3, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.convTranspose1d(ctx, w, opts([](ConvTranspose1dOptions& o) { o.output_padding = 1; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.convTranspose1d(ctx, w, opts([](ConvTranspose1dOptions& o) { o.output_padding = -1; })), InvalidArgument);
  CHECK_NOTHROW(x.convTranspose1d(ctx, w, opts([](ConvTranspose1dOptions& o) { o.output_padding = 1, o.stride = 2; })));
  CHECK_FUCINA_ERROR(x.convTranspose1d(ctx, w, opts([](ConvTranspose1dOptions& o) { o.stride = 0; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.convTranspose1d(ctx, w, opts([](ConvTranspose1dOptions& o) { o.padding = 4; })), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.convTranspose1d(ctx, w, Tensor::ones(ctx, {"out"}, {4})), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"n", "c"}, {1, 4}).convTranspose1d(ctx, w), ShapeMismatch);
}

// ---------------------------------------------------------------- causal convolutions

TEST_CASE("causal convolutions: values, and output t sees only inputs up to t") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  struct Cs {
    int64_t n, c, l, oc, k, d, g;
  };
  for (const Cs& q : std::vector<Cs>{{1, 1, 1, 1, 1, 1, 1}, {2, 3, 7, 4, 3, 1, 1}, {2, 4, 9, 6, 3, 2, 2}, {3, 5, 6, 5, 4, 1, 5},
                                     {1, 2, 3, 2, 4, 2, 2} /* kernel reach beyond the input */}) {
    INFO("c" << q.c << " l" << q.l << " k" << q.k << " d" << q.d << " g" << q.g);
    const C1 k{q.n, q.c, q.l, q.oc, q.k, 1, 0, q.d, q.g};
    const auto xv = rnd(size_t(q.n * q.c * q.l), 1), wv = rnd(size_t(q.oc * q.c / q.g * q.k), 2), bv = rnd(size_t(q.oc), 3);
    const auto want = naiveConv1d(k, xv, wv, &bv, (q.k - 1) * q.d, q.l);
    Tensor x = Tensor::fromSlice(ctx, {"n", "c", "t"}, {q.n, q.c, q.l}, xv);
    Tensor w = Tensor::fromSlice(ctx, {"out", "c", "k"}, {q.oc, q.c / q.g, q.k}, wv);
    Tensor b = Tensor::fromSlice(ctx, {"out"}, {q.oc}, bv);
    Tensor y = q.g == 1 ? x.causalConv1d(ctx, w, b, q.d) : x.groupedCausalConv1d(ctx, w, b, q.g, q.d);
    CHECK(y.tags() == Tags{"n", "out", "t"});
    CHECK(y.shape() == fucina::Extents{q.n, q.oc, q.l});
    requireClose(y.toVector(), want);
    requireClose(x.permuteTo(ctx, {"t", "c", "n"}).groupedCausalConv1d(ctx, w, b, q.g, q.d).permuteTo(ctx, {"n", "out", "t"}).toVector(),
                 want);
    if (q.g == q.c && q.d == 1) requireClose(x.causalDepthwiseConv1d(ctx, w, b).toVector(), want);
    // Changing the input at t0 changes no output before t0.
    const int64_t t0 = q.l / 2;
    auto moved = xv;
    for (int64_t n = 0; n < q.n; ++n)
      for (int64_t c = 0; c < q.c; ++c) moved[size_t((n * q.c + c) * q.l + t0)] += 10;
    const auto y2 = Tensor::fromSlice(ctx, {"n", "c", "t"}, {q.n, q.c, q.l}, moved).groupedCausalConv1d(ctx, w, b, q.g, q.d).toVector();
    const auto y1 = y.toVector();
    for (int64_t n = 0; n < q.n; ++n)
      for (int64_t o = 0; o < q.oc; ++o)
        for (int64_t t = 0; t < t0; ++t) REQUIRE(y2[size_t((n * q.oc + o) * q.l + t)] == y1[size_t((n * q.oc + o) * q.l + t)]);
  }
  // Mamba's short convolution: channels on the last axis, custom names, an empty sequence.
  const Conv1dAxes axes{.channels = "d", .length = "l", .out_channels = "e", .kernel = "w"};
  Tensor xs = Tensor::fromSlice(ctx, {"b", "l", "d"}, {1, 3, 2}, {1, 10, 2, 20, 3, 30});
  Tensor ws = Tensor::fromSlice(ctx, {"e", "d", "w"}, {2, 1, 2}, {1, 2, 3, 4});
  Tensor ys = xs.causalDepthwiseConv1d(ctx, ws, axes);
  CHECK(ys.tags() == Tags{"b", "l", "e"});
  // e0 = 1·x[t-1] + 2·x[t] of channel 0; e1 = 3·x[t-1] + 4·x[t] of channel 1.
  CHECK(ys.toVector() == std::vector<float>{2, 40, 5, 110, 8, 180});
  CHECK(Tensor::zeros(ctx, {"b", "l", "d"}, {2, 0, 2}).causalDepthwiseConv1d(ctx, ws, axes).shape() == fucina::Extents{2, 0, 2});
}

TEST_CASE("causal convolutions: gradcheck of input, weight and bias") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"n", "t", "c"}, {2, 6, 4}, rnd(48, 21));
  Tensor b = Tensor::variableFromSlice(ctx, {"out"}, {4}, rnd(4, 22));
  Tensor r = Tensor::fromSlice(ctx, {"n", "out", "t"}, {2, 4, 6}, rnd(48, 23));
  const fucina::GradcheckOptions go{.eps = 1e-2, .abs_tol = 2e-3, .rel_tol = 2e-2};
  Tensor w1 = Tensor::variableFromSlice(ctx, {"out", "c", "k"}, {4, 4, 3}, rnd(48, 24));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.causalConv1d(c, w1, b, 2).mul(c, r).tanh(c).sumAll(c); }, {&x, &w1, &b}, go);
  Tensor w2 = Tensor::variableFromSlice(ctx, {"out", "c", "k"}, {4, 2, 2}, rnd(16, 25));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.groupedCausalConv1d(c, w2, b, 2, 3).mul(c, r).tanh(c).sumAll(c); },
                    {&x, &w2, &b}, go);
  Tensor w3 = Tensor::variableFromSlice(ctx, {"out", "c", "k"}, {4, 1, 4}, rnd(16, 26));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.causalDepthwiseConv1d(c, w3, b).mul(c, r).tanh(c).sumAll(c); },
                    {&x, &w3, &b}, go);
}

TEST_CASE("causal convolutions: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"n", "c", "t"}, {1, 4, 5});
  CHECK_FUCINA_ERROR(x.causalConv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 4, 3}), 0), InvalidArgument);
  CHECK_FUCINA_ERROR(x.causalConv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 3, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.groupedCausalConv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 1, 3}), 3), InvalidArgument);
  CHECK_FUCINA_ERROR(x.groupedCausalConv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {2, 1, 3}), 0), InvalidArgument);
  CHECK_FUCINA_ERROR(x.causalDepthwiseConv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {4, 2, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.causalDepthwiseConv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {6, 1, 3})), InvalidArgument);
  CHECK_FUCINA_ERROR(x.causalDepthwiseConv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {4, 1, 3}), Tensor::ones(ctx, {"c"}, {4})),
                     ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"n", "t"}, {1, 5}).causalDepthwiseConv1d(ctx, Tensor::ones(ctx, {"out", "c", "k"}, {4, 1, 3})),
                     ShapeMismatch);
}

// ---------------------------------------------------------------- conv2dRelu

TEST_CASE("conv2dRelu: relu(conv2d) fused, forward and backward, with the composed ops' values and gradients") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    const fucina::Conv2dOptions o{.stride_h = 2, .pad_w = 1, .groups = 2};
    Tensor x = Tensor::normal(ctx, {"n", "c", "h", "w"}, {3, 4, 7, 5}, 0, 1, 1).permuteTo(ctx, {"h", "n", "w", "c"});
    Tensor w = Tensor::normal(ctx, {"out", "c", "kh", "kw"}, {6, 2, 3, 2}, 0, 1, 2);
    Tensor b = Tensor::normal(ctx, {"out"}, {6}, 0, 1, 3);
    const Tensor want = x.conv2d(ctx, w, b, o).relu(ctx);
    const Tensor got = x.conv2dRelu(ctx, w, b, o);
    CHECK(got.tags() == want.tags());
    CHECK(got.toVector() == want.toVector());  // the same float operations, in the same order
    CHECK(x.conv2dRelu(ctx, w, o).toVector() == x.conv2d(ctx, w, o).relu(ctx).toVector());
    const auto v = got.toVector();
    CHECK(std::count(v.begin(), v.end(), 0.0f) > 0);  // the relu clamps something
    // Variables: a recorded, differentiable result with the same values.
    Tensor xv = Tensor::variable(ctx, x.contiguous(ctx)), wv = Tensor::variable(ctx, w), bv = Tensor::variable(ctx, b);
    Tensor yg = xv.conv2dRelu(ctx, wv, bv, o);
    CHECK(yg.requiresGrad());
    CHECK(yg.toVector() == want.toVector());
    // One VJP (Note [conv2dRelu's VJP]): the gradients of conv2d, add and relu composed, bit for
    // bit, and the sums are not kept (the result is, as relu's mask).
    const Tensor r = Tensor::normal(ctx, want.tags(), want.shape(), 0, 1, 4);
    auto gradsOf = [&](const Tensor& y, bool bias = true) {
      for (const Tensor* t : {&xv, &wv, &bv}) t->zeroGrad();
      y.mul(ctx, r).sumAll(ctx).backward(ctx);
      std::vector<std::vector<float>> grads{xv.grad(ctx).value().toVector(), wv.grad(ctx).value().toVector()};
      if (bias) grads.push_back(bv.grad(ctx).value().toVector());
      return grads;
    };
    auto liveBytesOf = [&](auto make) {  // what a result holds alive: it, and what its VJPs saved
      const size_t before = ctx.memory().live_bytes;
      Tensor y = make();
      return std::pair{y, ctx.memory().live_bytes - before};
    };
    const auto [fused, fused_bytes] = liveBytesOf([&] { return xv.conv2dRelu(ctx, wv, bv, o); });
    const auto [composed, composed_bytes] = liveBytesOf([&] { return xv.conv2d(ctx, wv, o).add(ctx, bv).relu(ctx); });
    CHECK(composed_bytes - fused_bytes == fused.numel() * sizeof(float));  // relu's saved argument
    CHECK(gradsOf(fused) == gradsOf(composed));
    CHECK(gradsOf(xv.conv2dRelu(ctx, wv, o), false) == gradsOf(xv.conv2d(ctx, wv, o).relu(ctx), false));
    // Under noGrad the fused path runs, variables or not.
    fucina::NoGradScope s = fucina::noGrad();
    Tensor yn = xv.conv2dRelu(ctx, wv, bv, o);
    CHECK_FALSE(yn.requiresGrad());
    CHECK(yn.toVector() == want.toVector());
  }
}

// Note [Fused convolution VJP]: channels first the cpu backend computes conv2d's and conv2dRelu's
// gradients in one pass over the images; they are the composed ops' (relu's map, add's sum, the
// two adjoints) bit for bit, on 1 and 2 threads: image chunks of one and several images (9 > 8
// chunks), groups, strides and padding, a W2-sized image, and the shapes that take the composed
// path (one output channel, one output position, no images).
TEST_CASE("conv2dRelu and conv2d channels first: one pass over the images, the composed ops' gradients") {
  struct Case {
    fucina::Extents x, w;
    fucina::Conv2dOptions o;
  };
  const Case cases[] = {{{3, 4, 7, 5}, {6, 2, 3, 2}, {.stride_h = 2, .pad_w = 1, .groups = 2}},
                        {{9, 3, 6, 6}, {5, 3, 3, 3}, {.pad_h = 1, .pad_w = 1}},
                        {{2, 32, 13, 13}, {64, 32, 3, 3}, {}},
                        {{4, 2, 5, 4}, {1, 2, 2, 2}, {}},
                        {{3, 2, 3, 3}, {4, 2, 3, 3}, {}},
                        {{0, 2, 5, 4}, {3, 2, 2, 3}, {}}};
  for (const Case& k : cases) {
    INFO("x " << k.x[0] << "x" << k.x[1] << "x" << k.x[2] << "x" << k.x[3] << " out " << k.w[0]);
    std::vector<std::vector<float>> first;
    for (int threads : {1, 2}) {
      ExecContext ctx(fucina::ExecOptions{.threads = threads});
      Tensor x = Tensor::variable(ctx, Tensor::normal(ctx, {"n", "c", "h", "w"}, k.x, 0, 1, 1));
      Tensor w = Tensor::variable(ctx, Tensor::normal(ctx, {"out", "c", "kh", "kw"}, k.w, 0, 1, 2));
      Tensor b = Tensor::variable(ctx, Tensor::normal(ctx, {"out"}, {k.w[0]}, 0, 1, 3));
      auto gradsOf = [&](const Tensor& y) {
        for (const Tensor* t : {&x, &w, &b}) t->zeroGrad();
        y.mul(ctx, Tensor::normal(ctx, y.tags(), y.shape(), 0, 1, 4)).sumAll(ctx).backward(ctx);
        return std::vector<std::vector<float>>{x.grad(ctx).value().toVector(), w.grad(ctx).value().toVector(),
                                               b.grad(ctx).value().toVector()};
      };
      const auto fused = gradsOf(x.conv2dRelu(ctx, w, b, k.o));
      CHECK(fused == gradsOf(x.conv2d(ctx, w, k.o).add(ctx, b).relu(ctx)));
      const auto plain = gradsOf(x.conv2d(ctx, w, b, k.o));
      CHECK(plain == gradsOf(x.conv2d(ctx, w, k.o).add(ctx, b)));
      if (threads == 1) first = fused;
      else CHECK(fused == first);
    }
  }
}

// Note [Pooled conv2dRelu]: with maxPool, conv2dRelu's result and gradients are conv2dRelu's
// then maxPool2d's, bit for bit, on 1 and 2 threads: pools of 2 and 3 with a floor, chunks of one
// image and of several (9 images), groups, strides and padding, a W2-sized image, windows of
// tied zeros (a negative bias), no bias, and the shapes the composed path serves (one output
// channel, one output position, no images, channels last, no output channels).
TEST_CASE("conv2dRelu with maxPool: pooled in one op, the composed ops' values and gradients") {
  struct Case {
    fucina::Tags x_tags;
    fucina::Extents x, w;
    fucina::Conv2dOptions o;
    float shift = 0;  // added to the bias
  };
  const fucina::Tags nchw{"n", "c", "h", "w"}, nhwc{"n", "h", "w", "c"};
  const Case cases[] = {{nchw, {3, 4, 8, 5}, {6, 2, 3, 2}, {.stride_h = 2, .pad_w = 1, .groups = 2, .max_pool = 2}},
                        {nchw, {9, 3, 8, 8}, {5, 3, 3, 3}, {.pad_h = 1, .pad_w = 1, .max_pool = 3}},
                        {nchw, {2, 32, 13, 13}, {64, 32, 3, 3}, {.max_pool = 2}},
                        {nchw, {2, 3, 6, 7}, {4, 3, 2, 2}, {.max_pool = 2}, -1.5f},
                        {nchw, {4, 2, 5, 4}, {1, 2, 2, 2}, {.max_pool = 2}},
                        {nchw, {3, 2, 3, 3}, {4, 2, 3, 3}, {.max_pool = 1}},
                        {nchw, {0, 2, 5, 4}, {3, 2, 2, 3}, {.max_pool = 2}},
                        {nhwc, {2, 7, 6, 3}, {4, 2, 2, 3}, {.max_pool = 2}},
                        {nhwc, {2, 5, 5, 2}, {0, 2, 2, 2}, {.max_pool = 2}}};
  for (const Case& k : cases) {
    INFO("x " << k.x[0] << "x" << k.x[1] << "x" << k.x[2] << "x" << k.x[3] << " out " << k.w[0] << " pool "
              << k.o.max_pool);
    std::vector<std::vector<float>> first;
    for (int threads : {1, 2}) {
      ExecContext ctx(fucina::ExecOptions{.threads = threads});
      const bool last = k.x_tags == nhwc;
      Tensor x = Tensor::variable(ctx, Tensor::normal(ctx, k.x_tags, k.x, 0, 1, 1));
      Tensor w = Tensor::variable(ctx, Tensor::normal(ctx, last ? fucina::Tags{"out", "kh", "kw", "c"}
                                                                 : fucina::Tags{"out", "c", "kh", "kw"}, k.w, 0, 1, 2));
      Tensor b = Tensor::variable(ctx, Tensor::normal(ctx, {"out"}, {k.w[0]}, k.shift, 1, 3));
      fucina::Conv2dOptions unpooled = k.o;
      unpooled.max_pool = 1;
      const int64_t m = k.o.max_pool;
      auto run = [&](const Tensor& y) {
        for (const Tensor* t : {&x, &w, &b}) t->zeroGrad();
        y.mul(ctx, Tensor::normal(ctx, y.tags(), y.shape(), 0, 1, 4)).sumAll(ctx).backward(ctx);
        return std::vector<std::vector<float>>{y.value().toVector(), x.grad(ctx).value().toVector(),
                                               w.grad(ctx).value().toVector(), b.grad(ctx).value().toVector()};
      };
      const auto fused = run(x.conv2dRelu(ctx, w, b, k.o));
      CHECK(fused == run(x.conv2dRelu(ctx, w, b, unpooled).maxPool2d(ctx, m, m, m, m)));
      if (threads == 1) first = fused;
      else CHECK(fused == first);
      // Without a bias, and without gradients (no argmax kept).
      Tensor y = x.conv2dRelu(ctx, w, k.o);
      CHECK(y.value().toVector() == x.conv2dRelu(ctx, w, unpooled).maxPool2d(ctx, m, m, m, m).value().toVector());
      fucina::NoGradScope no_grad;
      CHECK(x.conv2dRelu(ctx, w, b, k.o).value().toVector() == fused[0]);
    }
  }
}

TEST_CASE("conv2dRelu: gradcheck and bad inputs") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "h", "w"}, {2, 2, 5, 4}, rnd(80, 31));
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "c", "kh", "kw"}, {3, 2, 2, 3}, rnd(36, 32));
  Tensor b = Tensor::variableFromSlice(ctx, {"out"}, {3}, rnd(3, 33));
  Tensor r = Tensor::fromSlice(ctx, {"n", "out", "h", "w"}, {2, 3, 4, 4}, rnd(96, 34));
  const fucina::Conv2dOptions o{.pad_w = 1};
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.conv2dRelu(c, w, b, o).mul(c, r).sumAll(c); }, {&x, &w, &b},
                    {.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 2e-2});
  // Pooled (Note [Pooled conv2dRelu]): the 4x4 result's 2x2 windows.
  const fucina::Conv2dOptions pooled{.pad_w = 1, .max_pool = 2};
  const Tensor rp = r.narrow(ctx, "h", 0, 2).narrow(ctx, "w", 0, 2);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.conv2dRelu(c, w, b, pooled).mul(c, rp).sumAll(c); }, {&x, &w, &b},
                    {.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 2e-2});
  // No images: a zero result, and zero gradients of every operand's shape.
  Tensor xe = Tensor::variable(ctx, Tensor::zeros(ctx, {"n", "c", "h", "w"}, {0, 2, 5, 4}));
  w.zeroGrad();
  b.zeroGrad();
  xe.conv2dRelu(ctx, w, b, o).sumAll(ctx).backward(ctx);
  CHECK(xe.grad(ctx).value().shape() == fucina::Extents{0, 2, 5, 4});
  CHECK(b.grad(ctx).value().toVector() == std::vector<float>(3, 0.0f));
  CHECK(w.grad(ctx).value().toVector() == std::vector<float>(36, 0.0f));
  Tensor xc = Tensor::ones(ctx, {"c", "h", "w"}, {2, 3, 3}), wc = Tensor::ones(ctx, {"out", "c", "kh", "kw"}, {3, 2, 2, 2});
  CHECK_FUCINA_ERROR(xc.conv2dRelu(ctx, wc, Tensor::ones(ctx, {"out"}, {2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(xc.conv2dRelu(ctx, Tensor::ones(ctx, {"out", "c", "kh"}, {3, 2, 2}), Tensor::ones(ctx, {"out"}, {3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(xc.conv2dRelu(ctx, wc, fucina::Conv2dOptions{.groups = 0}), InvalidArgument);
  CHECK_FUCINA_ERROR(xc.conv2dRelu(ctx, wc.to(ctx, fucina::DType::i32)), DTypeMismatch);
  CHECK_FUCINA_ERROR(xc.conv2dRelu(ctx, wc, fucina::Conv2dOptions{.max_pool = 0}), InvalidArgument);
  CHECK_FUCINA_ERROR(xc.conv2dRelu(ctx, wc, fucina::Conv2dOptions{.max_pool = 3}), ShapeMismatch);  // output 2x2
  CHECK_FUCINA_ERROR(xc.conv2d(ctx, wc, fucina::Conv2dOptions{.max_pool = 2}), InvalidArgument);
  CHECK_FUCINA_ERROR(xc.conv2d(ctx, wc, Tensor::ones(ctx, {"out"}, {3}), fucina::Conv2dOptions{.max_pool = 2}),
                     InvalidArgument);
  CHECK_FUCINA_ERROR(fucina::prepareConv2dWeights(ctx, wc, fucina::Conv2dOptions{.max_pool = 2}), InvalidArgument);
  CHECK(xc.conv2dRelu(ctx, wc, fucina::Conv2dOptions{.max_pool = 2}).toVector() == std::vector<float>(3, 8.0f));
  // 16-bit constants compute in f32 and return f16.
  Tensor y16 = xc.to(ctx, fucina::DType::f16).conv2dRelu(ctx, wc.to(ctx, fucina::DType::f16), Tensor::ones(ctx, {"out"}, {3}).to(ctx, fucina::DType::f16));
  CHECK(y16.dtype() == fucina::DType::f16);
  CHECK(y16.toVector() == std::vector<float>(12, 9.0f));
}

// ---------------------------------------------------------------- unfold and fold

namespace {
struct U {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
};
UnfoldOptions uOptionsOf(const U& u) {
  return {.stride_h = u.sh, .stride_w = u.sw, .pad_h = u.ph, .pad_w = u.pw, .dilation_h = u.dh, .dilation_w = u.dw};
}
int64_t outExtent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }
// cols [n, c·kh·kw, oh·ow] of images [n, c, h, w], torch's layout.
std::vector<float> naiveUnfold(const U& u, const std::vector<float>& x) {
  const int64_t oh = outExtent(u.h, u.kh, u.sh, u.ph, u.dh), ow = outExtent(u.w, u.kw, u.sw, u.pw, u.dw);
  std::vector<float> cols;
  for (int64_t n = 0; n < u.n; ++n)
    for (int64_t c = 0; c < u.c; ++c)
      for (int64_t i = 0; i < u.kh; ++i)
        for (int64_t j = 0; j < u.kw; ++j)
          for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t yy = oy * u.sh - u.ph + i * u.dh, xx = ox * u.sw - u.pw + j * u.dw;
              cols.push_back(yy < 0 || yy >= u.h || xx < 0 || xx >= u.w ? 0.0f : x[size_t(((n * u.c + c) * u.h + yy) * u.w + xx)]);
            }
  return cols;
}
// fold sums every column entry into the pixel it came from.
std::vector<float> naiveFold(const U& u, const std::vector<float>& cols) {
  const int64_t oh = outExtent(u.h, u.kh, u.sh, u.ph, u.dh), ow = outExtent(u.w, u.kw, u.sw, u.pw, u.dw);
  std::vector<double> x(size_t(u.n * u.c * u.h * u.w), 0.0);
  size_t e = 0;
  for (int64_t n = 0; n < u.n; ++n)
    for (int64_t c = 0; c < u.c; ++c)
      for (int64_t i = 0; i < u.kh; ++i)
        for (int64_t j = 0; j < u.kw; ++j)
          for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox, ++e) {
              const int64_t yy = oy * u.sh - u.ph + i * u.dh, xx = ox * u.sw - u.pw + j * u.dw;
              if (yy >= 0 && yy < u.h && xx >= 0 && xx < u.w) x[size_t(((n * u.c + c) * u.h + yy) * u.w + xx)] += cols[e];
            }
  return {x.begin(), x.end()};
}
const std::vector<U>& unfoldConfigs() {
  static const std::vector<U> us = {
      // n  c  h  w kh kw sh sw ph pw dh dw
      {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1},
      {2, 3, 5, 4, 2, 3, 1, 1, 0, 0, 1, 1},
      {1, 2, 7, 6, 3, 2, 2, 3, 1, 2, 1, 2},
      {3, 1, 4, 5, 2, 2, 2, 2, 0, 0, 1, 1},  // non-overlapping patches
      {2, 2, 3, 3, 3, 3, 1, 1, 4, 4, 1, 1},  // padding wider than the image
      {40, 3, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1},  // enough images to be split over the pool
  };
  return us;
}
}  // namespace

TEST_CASE("unfold and fold: values against the index formula in torch's layout, threads and layouts") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    for (size_t ui = 0; ui < unfoldConfigs().size(); ++ui) {
      const U& u = unfoldConfigs()[ui];
      INFO("config " << ui << ", " << threads << " threads");
      const int64_t L = outExtent(u.h, u.kh, u.sh, u.ph, u.dh) * outExtent(u.w, u.kw, u.sw, u.pw, u.dw);
      const auto xv = rnd(size_t(u.n * u.c * u.h * u.w), 40 + uint32_t(ui));
      Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {u.n, u.c, u.h, u.w}, xv);
      Tensor cols = x.permuteTo(ctx, {"w", "c", "n", "h"}).unfold(ctx, u.kh, u.kw, uOptionsOf(u));
      CHECK(cols.tags() == Tags{"n", "patch", "l"});
      CHECK(cols.shape() == fucina::Extents{u.n, u.c * u.kh * u.kw, L});
      CHECK(cols.toVector() == naiveUnfold(u, xv));
      const auto cv = rnd(size_t(u.n * u.c * u.kh * u.kw * L), 50 + uint32_t(ui));
      Tensor cin = Tensor::fromSlice(ctx, {"n", "patch", "l"}, {u.n, u.c * u.kh * u.kw, L}, cv);
      Tensor img = cin.permuteTo(ctx, {"l", "n", "patch"}).fold(ctx, u.h, u.w, u.kh, u.kw, uOptionsOf(u));
      CHECK(img.tags() == Tags{"n", "c", "h", "w"});
      requireClose(img.toVector(), naiveFold(u, cv), 1e-5f);
    }
  }
  // No batch axis, two batch axes, custom names.
  ExecContext ctx;
  UnfoldOptions o{.channels = "ch", .height = "y", .width = "x", .patch = "p", .positions = "pos"};
  Tensor x = Tensor::fromSlice(ctx, {"y", "a", "x", "ch", "b"}, {3, 2, 3, 1, 1}, rnd(18, 9));
  Tensor c = x.unfold(ctx, 2, 2, o);
  CHECK(c.tags() == Tags{"a", "b", "p", "pos"});
  CHECK(c.fold(ctx, 3, 3, 2, 2, o).tags() == Tags{"a", "b", "ch", "y", "x"});
  CHECK(Tensor::ones(ctx, {"c", "h", "w"}, {1, 2, 2}).unfold(ctx, 2, 2).toVector() == std::vector<float>{1, 1, 1, 1});
  CHECK(Tensor::ones(ctx, {"patch", "l"}, {2, 4}).fold(ctx, 2, 3, 1, 2).toVector() == std::vector<float>{1, 2, 1, 1, 2, 1});
}

TEST_CASE("unfold and fold: exact adjoints of each other (<fold(y), x> == <y, unfold(x)>)") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  for (const U& u : unfoldConfigs()) {
    const int64_t L = outExtent(u.h, u.kh, u.sh, u.ph, u.dh) * outExtent(u.w, u.kw, u.sw, u.pw, u.dw);
    const auto xv = rnd(size_t(u.n * u.c * u.h * u.w), 1), yv = rnd(size_t(u.n * u.c * u.kh * u.kw * L), 2);
    const auto ux = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {u.n, u.c, u.h, u.w}, xv).unfold(ctx, u.kh, u.kw, uOptionsOf(u));
    const auto fy = Tensor::fromSlice(ctx, {"n", "patch", "l"}, {u.n, u.c * u.kh * u.kw, L}, yv).fold(ctx, u.h, u.w, u.kh, u.kw, uOptionsOf(u));
    CHECK(dotOf(fy.toVector(), xv) == Approx(dotOf(yv, ux.toVector())).epsilon(1e-6));
  }
}

TEST_CASE("unfold and fold: gradients are each other, gradcheck, bad inputs") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const U u = unfoldConfigs()[2];
  const int64_t L = outExtent(u.h, u.kh, u.sh, u.ph, u.dh) * outExtent(u.w, u.kw, u.sw, u.pw, u.dw);
  Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "h", "w"}, {u.n, u.c, u.h, u.w}, rnd(size_t(u.n * u.c * u.h * u.w), 3));
  Tensor y = Tensor::variableFromSlice(ctx, {"n", "patch", "l"}, {u.n, u.c * u.kh * u.kw, L}, rnd(size_t(u.n * u.c * u.kh * u.kw * L), 4));
  const auto gyv = rnd(size_t(y.numel()), 5), gxv = rnd(size_t(x.numel()), 6);
  x.unfold(ctx, u.kh, u.kw, uOptionsOf(u)).backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"n", "patch", "l"}, y.shape(), gyv));
  CHECK(test::gradOf(ctx, x) == Tensor::fromSlice(ctx, {"n", "patch", "l"}, y.shape(), gyv).fold(ctx, u.h, u.w, u.kh, u.kw, uOptionsOf(u)).toVector());
  y.fold(ctx, u.h, u.w, u.kh, u.kw, uOptionsOf(u)).backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, x.shape(), gxv));
  CHECK(test::gradOf(ctx, y) == Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, x.shape(), gxv).unfold(ctx, u.kh, u.kw, uOptionsOf(u)).toVector());
  const fucina::GradcheckOptions go{.eps = 1e-2, .abs_tol = 2e-3, .rel_tol = 2e-2};
  Tensor r = Tensor::fromSlice(ctx, {"n", "patch", "l"}, y.shape(), rnd(size_t(y.numel()), 7));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.permuteTo(c, {"h", "c", "w", "n"}).unfold(c, u.kh, u.kw, uOptionsOf(u)).mul(c, r).tanh(c).sumAll(c); }, {&x}, go);
  Tensor rx = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, x.shape(), rnd(size_t(x.numel()), 8));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return y.fold(c, u.h, u.w, u.kh, u.kw, uOptionsOf(u)).mul(c, rx).tanh(c).sumAll(c); }, {&y}, go);

  Tensor img = Tensor::ones(ctx, {"c", "h", "w"}, {2, 3, 3});
  CHECK_FUCINA_ERROR(img.unfold(ctx, 4, 1), ShapeMismatch);
  CHECK_FUCINA_ERROR(img.unfold(ctx, 0, 1), InvalidArgument);
  CHECK_FUCINA_ERROR(img.unfold(ctx, 2, 2, UnfoldOptions{.stride_w = 0}), InvalidArgument);
  CHECK_FUCINA_ERROR(img.unfold(ctx, 2, 2, UnfoldOptions{.pad_h = -1}), InvalidArgument);
  CHECK_FUCINA_ERROR(img.unfold(ctx, 2, 2, UnfoldOptions{.patch = "h"}), InvalidArgument);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"c", "h"}, {2, 3}).unfold(ctx, 2, 2), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"c", "h", "w", "l"}, {2, 3, 3, 1}).unfold(ctx, 2, 2), ShapeMismatch);
  Tensor cl = Tensor::ones(ctx, {"patch", "l"}, {8, 4});
  CHECK(cl.fold(ctx, 3, 3, 2, 2).shape() == fucina::Extents{2, 3, 3});
  CHECK_FUCINA_ERROR(cl.fold(ctx, 3, 3, 3, 1), ShapeMismatch);  // 8 patch rows are not a multiple of 3
  CHECK_FUCINA_ERROR(cl.fold(ctx, 4, 3, 2, 2), ShapeMismatch);  // 3x2 = 6 positions, not 4
  CHECK_FUCINA_ERROR(cl.fold(ctx, 1, 3, 2, 2), ShapeMismatch);  // kernel taller than the output
  CHECK_FUCINA_ERROR(cl.fold(ctx, -1, 3, 2, 2), InvalidArgument);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"patch"}, {8}).fold(ctx, 3, 3, 2, 2), ShapeMismatch);
  CHECK_FUCINA_ERROR(cl.to(ctx, fucina::DType::i32).fold(ctx, 3, 3, 2, 2), DTypeMismatch);
}

// ---------------------------------------------------------------- channelAffine

TEST_CASE("channelAffine: values on any layout, gradients to all three, gradcheck, bad inputs") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const auto xv = rnd(2 * 3 * 5, 1), sv = rnd(3, 2), bv = rnd(3, 3);
  Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "t"}, {2, 3, 5}, xv);
  Tensor s = Tensor::variableFromSlice(ctx, {"c"}, {3}, sv);
  Tensor b = Tensor::variableFromSlice(ctx, {"c"}, {3}, bv);
  std::vector<float> want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) want[i] = xv[i] * sv[i / 5 % 3] + bv[i / 5 % 3];
  Tensor y = x.channelAffine(ctx, s, b, "c");
  CHECK(y.tags() == Tags{"n", "c", "t"});
  requireClose(y.toVector(), want, 1e-6f);
  // A permuted view with the channel axis last, and a narrowed one with it first.
  Tensor yp = x.permuteTo(ctx, {"t", "n", "c"}).channelAffine(ctx, s, b, "c");
  CHECK(yp.tags() == Tags{"t", "n", "c"});
  requireClose(yp.permuteTo(ctx, {"n", "c", "t"}).toVector(), want, 1e-6f);
  Tensor yn = x.permuteTo(ctx, {"c", "t", "n"}).narrow(ctx, "t", 1, 3).channelAffine(ctx, s, b, "c");
  requireClose(yn.permuteTo(ctx, {"n", "c", "t"}).toVector(),
               Tensor::fromSlice(ctx, {"n", "c", "t"}, {2, 3, 5}, want).narrow(ctx, "t", 1, 3).contiguous(ctx).toVector(), 1e-6f);
  // Gradients: gx = gy·scale, gscale = Σ gy·x, gshift = Σ gy per channel.
  y.sumAll(ctx).backward(ctx);
  std::vector<float> gx(xv.size()), gs(3, 0), gb(3, 0);
  for (size_t i = 0; i < xv.size(); ++i) {
    gx[i] = sv[i / 5 % 3];
    gs[i / 5 % 3] += xv[i];
    gb[i / 5 % 3] += 1;
  }
  CHECK(test::gradOf(ctx, x) == gx);
  requireClose(test::gradOf(ctx, s), gs, 1e-5f);
  CHECK(test::gradOf(ctx, b) == gb);
  Tensor r = Tensor::fromSlice(ctx, {"t", "c", "n"}, {5, 3, 2}, rnd(30, 4));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.permuteTo(c, {"c", "t", "n"}).channelAffine(c, s, b, "c").mul(c, r).tanh(c).sumAll(c); },
                    {&x, &s, &b}, {.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 2e-2});
  // Only the operand that needs a gradient gets one; an empty input.
  Tensor sc = Tensor::fromSlice(ctx, {"c"}, {3}, sv);
  Tensor xe = Tensor::variableFromSlice(ctx, {"c", "t"}, {3, 0}, std::vector<float>{});
  xe.channelAffine(ctx, sc, Tensor::variable(ctx, sc), "c").sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, xe).empty());

  CHECK_FUCINA_ERROR(x.channelAffine(ctx, s, b, "q"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.channelAffine(ctx, Tensor::ones(ctx, {"c"}, {2}), b, "c"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.channelAffine(ctx, s, Tensor::ones(ctx, {"t"}, {3}), "c"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.channelAffine(ctx, Tensor::ones(ctx, {"n", "c"}, {2, 3}), b, "c"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.channelAffine(ctx, Tensor::ones(ctx, {"c"}, {3}, fucina::DType::i32), b, "c"), DTypeMismatch);
}

// ---------------------------------------------------------------- threads

TEST_CASE("conv1d family, unfold/fold and channelAffine: values and gradients bit-identical on 1 and 2 threads") {
  auto run = [](int threads, int op) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    // 11 images (more than conv's chunk count, not a multiple of it), 300 channels (several row chunks).
    Tensor x = Tensor::variable(ctx, Tensor::normal(ctx, {"b", "c", "t"}, {11, 12, 300}, 0, 1, 1));
    std::vector<Tensor> params;
    Tensor y;
    switch (op) {
      case 0: {
        params = {Tensor::variable(ctx, Tensor::normal(ctx, {"out", "c", "k"}, {6, 4, 3}, 0, 1, 2))};
        y = x.conv1d(ctx, params[0], Conv1dOptions{.stride = 2, .padding = 1, .dilation = 2, .groups = 3});
        break;
      }
      case 1: {
        params = {Tensor::variable(ctx, Tensor::normal(ctx, {"c", "out", "k"}, {12, 2, 3}, 0, 1, 3))};
        y = x.convTranspose1d(ctx, params[0], ConvTranspose1dOptions{.stride = 2, .output_padding = 1, .groups = 2});
        break;
      }
      case 2: {
        params = {Tensor::variable(ctx, Tensor::normal(ctx, {"out", "c", "k"}, {12, 1, 4}, 0, 1, 4))};
        y = x.causalDepthwiseConv1d(ctx, params[0]);
        break;
      }
      case 3: {
        y = x.split(ctx, "t", {"h", "w"}, {15, 20}).unfold(ctx, 3, 2, UnfoldOptions{.stride_h = 2, .pad_w = 1})
                .fold(ctx, 15, 20, 3, 2, UnfoldOptions{.stride_h = 2, .pad_w = 1});
        break;
      }
      default: {
        params = {Tensor::variable(ctx, Tensor::normal(ctx, {"t"}, {300}, 0, 1, 5)),
                  Tensor::variable(ctx, Tensor::normal(ctx, {"t"}, {300}, 0, 1, 6))};
        y = x.channelAffine(ctx, params[0], params[1], "t");
      }
    }
    y.mul(ctx, y).sumAll(ctx).backward(ctx);
    std::vector<std::vector<float>> out{y.toVector(), x.grad(ctx)->toVector()};
    for (const Tensor& p : params) out.push_back(p.grad(ctx)->toVector());
    return out;
  };
  for (int op = 0; op < 5; ++op) {
    INFO("op " << op);
    CHECK(run(1, op) == run(2, op));
  }
}
