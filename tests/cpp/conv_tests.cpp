// conv2d, maxPool2d, avgPool2d and upsample2xNearest: values against naive direct loops on awkward
// shapes and layouts, gradcheck of every operand, and bad inputs naming the axes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "test_helpers.h"

#include "fucina/backend/cpu/conv.h"

using fucina::Conv2dOptions;
using fucina::ExecContext;
using fucina::Tensor;

namespace {

std::vector<float> rnd(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Distinct values (a shuffled ramp with gaps of `step`), so max pooling has no ties.
std::vector<float> distinct(size_t n, uint32_t seed, float step = 0.1f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = step * (static_cast<float>(i) - static_cast<float>(n) / 2);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

struct Cfg {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups;
};

Conv2dOptions optionsOf(const Cfg& k) {
  Conv2dOptions o;
  o.stride_h = k.sh, o.stride_w = k.sw, o.pad_h = k.ph, o.pad_w = k.pw;
  o.dilation_h = k.dh, o.dilation_w = k.dw, o.groups = k.groups;
  return o;
}

int64_t outExtent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

// Direct convolution: x [n, c, h, w], w [oc, c/groups, kh, kw] -> [n, oc, oh, ow].
std::vector<float> naiveConv(const Cfg& k, const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>* bias = nullptr) {
  const int64_t oh = outExtent(k.h, k.kh, k.sh, k.ph, k.dh), ow = outExtent(k.w, k.kw, k.sw, k.pw, k.dw);
  const int64_t cg = k.c / k.groups, ocg = k.oc / k.groups;
  std::vector<float> y(static_cast<size_t>(k.n * k.oc * oh * ow));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.oc; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = bias ? (*bias)[size_t(o)] : 0.0;
          const int64_t g = o / ocg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t yy = oy * k.sh - k.ph + i * k.dh, xx = ox * k.sw - k.pw + j * k.dw;
                if (yy < 0 || yy >= k.h || xx < 0 || xx >= k.w) continue;
                s += double(x[size_t(((n * k.c + g * cg + ci) * k.h + yy) * k.w + xx)]) *
                     w[size_t(((o * cg + ci) * k.kh + i) * k.kw + j)];
              }
          y[size_t(((n * k.oc + o) * oh + oy) * ow + ox)] = float(s);
        }
  return y;
}

void requireClose(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-4f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(want[i]).margin(tol));
  }
}

const std::vector<Cfg>& configs() {
  static const std::vector<Cfg> cs = {
      //  n  c  h  w oc kh kw sh sw ph pw dh dw g
      {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},   // all size 1
      {2, 3, 7, 5, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1},   // odd sizes
      {1, 2, 7, 6, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1},   // stride 2 with padding
      {3, 1, 5, 5, 2, 5, 5, 1, 1, 0, 0, 1, 1, 1},   // kernel as large as the input
      {2, 4, 9, 8, 6, 3, 2, 1, 2, 2, 1, 2, 3, 2},   // dilation, asymmetric stride/pad, groups 2
      {1, 4, 6, 6, 4, 3, 3, 2, 1, 1, 0, 1, 1, 4},   // depthwise
      {2, 6, 5, 4, 3, 1, 1, 1, 1, 0, 0, 1, 1, 3},   // 1x1, groups 3
      {1, 2, 4, 3, 2, 2, 2, 3, 3, 2, 2, 1, 1, 1},   // padding wider than stride coverage
  };
  return cs;
}

}  // namespace

TEST_CASE("conv2d: values against a direct convolution on awkward shapes, threads and layouts") {
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    for (size_t ci = 0; ci < configs().size(); ++ci) {
      const Cfg& k = configs()[ci];
      INFO("config " << ci << ", " << threads << " threads");
      const auto xv = rnd(size_t(k.n * k.c * k.h * k.w), 100 + uint32_t(ci));
      const auto wv = rnd(size_t(k.oc * (k.c / k.groups) * k.kh * k.kw), 200 + uint32_t(ci));
      const auto bv = rnd(size_t(k.oc), 300 + uint32_t(ci));
      Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {k.n, k.c, k.h, k.w}, xv);
      Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {k.oc, k.c / k.groups, k.kh, k.kw}, wv);
      Tensor b = Tensor::fromSlice(ctx, {"out"}, {k.oc}, bv);
      const auto want = naiveConv(k, xv, wv, &bv);
      Tensor y = x.conv2d(ctx, w, b, optionsOf(k));
      CHECK(y.tags() == fucina::Tags{"n", "out", "h", "w"});
      CHECK(y.shape() == fucina::Extents{k.n, k.oc, outExtent(k.h, k.kh, k.sh, k.ph, k.dh), outExtent(k.w, k.kw, k.sw, k.pw, k.dw)});
      requireClose(y.toVector(), want);
      // The same convolution with both operands in other physical orders: the output keeps the
      // input's order (with c renamed out) and the same values.
      Tensor xp = Tensor::fromSlice(ctx, {"w", "n", "h", "c"}, {k.w, k.n, k.h, k.c},
                                    x.permuteTo(ctx, {"w", "n", "h", "c"}).contiguous(ctx).toVector());
      Tensor wp = Tensor::fromSlice(ctx, {"kw", "c", "out", "kh"}, {k.kw, k.c / k.groups, k.oc, k.kh},
                                    w.permuteTo(ctx, {"kw", "c", "out", "kh"}).contiguous(ctx).toVector());
      Tensor yp = xp.conv2d(ctx, wp, b, optionsOf(k));
      CHECK(yp.tags() == fucina::Tags{"w", "n", "h", "out"});
      requireClose(yp.permuteTo(ctx, {"n", "out", "h", "w"}).toVector(), want);
      // A strided (permuted view) input without copying it first.
      requireClose(xp.permuteTo(ctx, {"h", "c", "n", "w"}).conv2d(ctx, w, b, optionsOf(k))
                       .permuteTo(ctx, {"n", "out", "h", "w"}).toVector(), want);
    }
  }
}

TEST_CASE("im2col and col2imAdd: every entry against the index formula, awkward geometries") {
  // Taps that fall wholly or partly in the padding, strides wider than the kernel, dilation, and
  // output rows and columns with no in-bounds tap: each bound is worked out once per tap.
  for (const Cfg& k : std::vector<Cfg>{
           {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},
           {1, 2, 13, 13, 1, 3, 3, 1, 1, 0, 0, 1, 1, 1},  // W2's shape, smaller
           {1, 3, 7, 5, 1, 3, 3, 1, 1, 2, 1, 1, 1, 1},
           {1, 2, 4, 3, 1, 2, 2, 3, 3, 2, 2, 1, 1, 1},
           {1, 2, 9, 8, 1, 3, 2, 2, 3, 3, 4, 2, 3, 1},
           {1, 1, 3, 3, 1, 3, 3, 1, 1, 5, 5, 1, 1, 1},   // padding wider than the plane
           {1, 1, 6, 17, 1, 1, 5, 1, 1, 0, 2, 1, 4, 1},
       }) {
    const fucina::kernels::Conv2dGeometry g{k.c, k.h, k.w, k.kh, k.kw, k.sh, k.sw, k.ph, k.pw, k.dh, k.dw,
                                            outExtent(k.h, k.kh, k.sh, k.ph, k.dh), outExtent(k.w, k.kw, k.sw, k.pw, k.dw)};
    INFO("c" << k.c << " " << k.h << "x" << k.w << " k" << k.kh << "x" << k.kw << " s" << k.sh << "," << k.sw << " p"
             << k.ph << "," << k.pw << " d" << k.dh << "," << k.dw);
    const int64_t positions = g.out_h * g.out_w, rows = k.c * k.kh * k.kw;
    const auto x = rnd(size_t(k.c * k.h * k.w), 7);
    std::vector<float> cols(size_t(rows * positions), std::numeric_limits<float>::quiet_NaN());
    fucina::kernels::im2col(g, x.data(), cols.data());
    const auto back = rnd(cols.size(), 8);
    std::vector<double> want_x(x.size(), 0.5);
    std::vector<float> got_x(x.size(), 0.5f);
    fucina::kernels::col2imAdd(g, back.data(), got_x.data());
    for (int64_t c = 0; c < k.c; ++c)
      for (int64_t i = 0; i < k.kh; ++i)
        for (int64_t j = 0; j < k.kw; ++j)
          for (int64_t oy = 0; oy < g.out_h; ++oy)
            for (int64_t ox = 0; ox < g.out_w; ++ox) {
              const int64_t yy = oy * k.sh - k.ph + i * k.dh, xx = ox * k.sw - k.pw + j * k.dw;
              const bool inside = yy >= 0 && yy < k.h && xx >= 0 && xx < k.w;
              const auto e = size_t(((c * k.kh + i) * k.kw + j) * positions + oy * g.out_w + ox);
              const auto at = size_t((c * k.h + yy) * k.w + xx);
              REQUIRE(cols[e] == (inside ? x[at] : 0.0f));
              if (inside) want_x[at] += back[e];
            }
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(got_x[i] == Approx(want_x[i]).margin(1e-5));
  }
}

TEST_CASE("conv2d: no batch axis, several batch axes, custom axis names") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const Cfg k{1, 2, 5, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  const auto xv = rnd(40, 1), wv = rnd(54, 2);
  const auto want = naiveConv(k, xv, wv);
  Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {3, 2, 3, 3}, wv);
  Tensor y = Tensor::fromSlice(ctx, {"c", "h", "w"}, {2, 5, 4}, xv).conv2d(ctx, w, optionsOf(k));
  CHECK(y.tags() == fucina::Tags{"out", "h", "w"});
  requireClose(y.toVector(), want);
  // Two batch axes a, b (2 x 3 images): each image equals the single-image convolution.
  std::vector<float> many;
  for (int i = 0; i < 6; ++i) many.insert(many.end(), xv.begin(), xv.end());
  Tensor ym = Tensor::fromSlice(ctx, {"a", "b", "c", "h", "w"}, {2, 3, 2, 5, 4}, many).conv2d(ctx, w, optionsOf(k));
  CHECK(ym.tags() == fucina::Tags{"a", "b", "out", "h", "w"});
  const auto got = ym.toVector();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i % want.size()]).margin(1e-4));
  // Custom names for every axis.
  Conv2dOptions o = optionsOf(k);
  o.channels = "ch", o.height = "y", o.width = "x", o.out_channels = "f", o.kernel_h = "ky", o.kernel_w = "kx";
  Tensor yc = Tensor::fromSlice(ctx, {"ch", "y", "x"}, {2, 5, 4}, xv)
                  .conv2d(ctx, Tensor::fromSlice(ctx, {"f", "ch", "ky", "kx"}, {3, 2, 3, 3}, wv), o);
  CHECK(yc.tags() == fucina::Tags{"f", "y", "x"});
  requireClose(yc.toVector(), want);
}

TEST_CASE("conv2d: gradcheck of input, weight and bias") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const std::vector<Cfg> cs = {
      {2, 2, 5, 4, 3, 3, 2, 1, 1, 0, 0, 1, 1, 1},
      {1, 2, 6, 5, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1},
      {2, 4, 6, 6, 4, 2, 3, 1, 2, 1, 0, 2, 1, 2},
      {1, 3, 4, 5, 3, 3, 1, 1, 1, 1, 0, 1, 1, 3},
  };
  for (size_t ci = 0; ci < cs.size(); ++ci) {
    const Cfg& k = cs[ci];
    INFO("config " << ci);
    Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "h", "w"}, {k.n, k.c, k.h, k.w}, rnd(size_t(k.n * k.c * k.h * k.w), 10 + uint32_t(ci)));
    Tensor w = Tensor::variableFromSlice(ctx, {"out", "c", "kh", "kw"}, {k.oc, k.c / k.groups, k.kh, k.kw},
                                         rnd(size_t(k.oc * (k.c / k.groups) * k.kh * k.kw), 20 + uint32_t(ci)));
    Tensor b = Tensor::variableFromSlice(ctx, {"out"}, {k.oc}, rnd(size_t(k.oc), 30 + uint32_t(ci)));
    const int64_t oh = outExtent(k.h, k.kh, k.sh, k.ph, k.dh), ow = outExtent(k.w, k.kw, k.sw, k.pw, k.dw);
    Tensor r = Tensor::fromSlice(ctx, {"n", "out", "h", "w"}, {k.n, k.oc, oh, ow}, rnd(size_t(k.n * k.oc * oh * ow), 40 + uint32_t(ci)));
    auto loss = [&](ExecContext& c) {
      // A permuted input view, so the gradient is also routed back through a layout change.
      return x.permuteTo(c, {"h", "n", "w", "c"}).conv2d(c, w, b, optionsOf(k)).mul(c, r).tanh(c).sumAll(c);
    };
    fucina::gradcheck(ctx, loss, {&x, &w, &b}, {.eps = 1e-2, .abs_tol = 2e-3, .rel_tol = 2e-2});
  }
}

TEST_CASE("conv2d: only the operands that need gradients get them") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"c", "h", "w"}, {1, 3, 3}, rnd(9, 5));
  Tensor w = Tensor::fromSlice(ctx, {"out", "c", "kh", "kw"}, {1, 1, 2, 2}, {1, 2, 3, 4});
  x.conv2d(ctx, w).sumAll(ctx).backward(ctx);
  // Each input element is summed once per window covering it, times the tap it meets.
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 3, 2, 4, 10, 6, 3, 7, 4});
  Tensor wv = Tensor::variableFromSlice(ctx, {"out", "c", "kh", "kw"}, {1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor xc = Tensor::fromSlice(ctx, {"c", "h", "w"}, {1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  xc.conv2d(ctx, wv).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, wv) == std::vector<float>{12, 16, 24, 28});
}

TEST_CASE("conv2d: bad inputs name the axes and extents") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"n", "c", "h", "w"}, {1, 4, 5, 5});
  Tensor w = Tensor::ones(ctx, {"out", "c", "kh", "kw"}, {2, 4, 3, 3});
  auto opts = [](auto f) { Conv2dOptions o; f(o); return o; };
  try {
    x.conv2d(ctx, Tensor::ones(ctx, {"out", "c", "kh", "kw"}, {2, 4, 7, 3}));
    FAIL("expected ShapeMismatch");
  } catch (const fucina::Error& e) {
    CHECK(e.code() == fucina::ErrorCode::ShapeMismatch);
    CHECK_THAT(e.what(), Catch::Contains("'kh'=7") && Catch::Contains("'h'=5"));
  }
  CHECK_FUCINA_ERROR(x.conv2d(ctx, w, opts([](Conv2dOptions& o) { o.dilation_h = 3; })), ShapeMismatch);
  CHECK_NOTHROW(x.conv2d(ctx, Tensor::ones(ctx, {"out", "c", "kh", "kw"}, {2, 4, 7, 3}), opts([](Conv2dOptions& o) { o.pad_h = 1; })));
  try {
    x.conv2d(ctx, Tensor::ones(ctx, {"out", "c", "kh", "kw"}, {2, 2, 3, 3}), opts([](Conv2dOptions& o) { o.groups = 3; }));
    FAIL("expected InvalidArgument");
  } catch (const fucina::Error& e) {
    CHECK(e.code() == fucina::ErrorCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("groups=3") && Catch::Contains("'c'=4"));
  }
  CHECK_FUCINA_ERROR(x.conv2d(ctx, Tensor::ones(ctx, {"out", "c", "kh", "kw"}, {3, 2, 3, 3}), opts([](Conv2dOptions& o) { o.groups = 2; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv2d(ctx, w, opts([](Conv2dOptions& o) { o.groups = 2; })), ShapeMismatch);  // weight c must be 2
  CHECK_FUCINA_ERROR(x.conv2d(ctx, Tensor::ones(ctx, {"out", "c", "kh"}, {2, 4, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv2d(ctx, Tensor::ones(ctx, {"out", "c", "kh", "q"}, {2, 4, 3, 3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"n", "c", "h"}, {1, 4, 5}).conv2d(ctx, w), ShapeMismatch);
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"out", "c", "h", "w"}, {1, 4, 5, 5}).conv2d(ctx, w), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv2d(ctx, w, opts([](Conv2dOptions& o) { o.stride_w = 0; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv2d(ctx, w, opts([](Conv2dOptions& o) { o.pad_h = -1; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv2d(ctx, w, opts([](Conv2dOptions& o) { o.width = "h"; })), InvalidArgument);
  CHECK_FUCINA_ERROR(x.conv2d(ctx, w, Tensor::ones(ctx, {"out"}, {3})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv2d(ctx, w, Tensor::ones(ctx, {"c"}, {2})), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.conv2d(ctx, Tensor::ones(ctx, {"out", "c", "kh", "kw"}, {2, 4, 3, 3}, fucina::DType::i32)), DTypeMismatch);
}

// ---------------------------------------------------------------- pooling

namespace {
// Direct pooling of planes [p, h, w].
std::vector<float> naivePool(bool max, const std::vector<float>& x, int64_t p, int64_t h, int64_t w, int64_t kh,
                             int64_t kw, int64_t sh, int64_t sw, int64_t pad) {
  const int64_t oh = outExtent(h, kh, sh, pad, 1), ow = outExtent(w, kw, sw, pad, 1);
  std::vector<float> y;
  for (int64_t q = 0; q < p; ++q)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t yy = oy * sh - pad + i, xx = ox * sw - pad + j;
            if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
            const double v = x[size_t((q * h + yy) * w + xx)];
            acc = max ? std::max(acc, v) : acc + v;
          }
        y.push_back(float(max ? acc : acc / double(kh * kw)));
      }
  return y;
}
}  // namespace

TEST_CASE("pooling: values against direct loops, any layout") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  struct P { int64_t kh, kw, sh, sw, pad; };
  for (auto [kh, kw, sh, sw, pad] : std::vector<P>{{2, 2, 2, 2, 0}, {3, 3, 2, 2, 1}, {3, 2, 1, 2, 1}, {1, 1, 1, 1, 0}, {5, 4, 1, 1, 2}}) {
    INFO("kernel " << kh << "x" << kw << " stride " << sh << "," << sw << " pad " << pad);
    const int64_t n = 2, c = 3, h = 7, w = 5;
    const auto xv = distinct(size_t(n * c * h * w), 7);
    Tensor x = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {n, c, h, w}, xv);
    for (bool max : {true, false}) {
      const auto want = naivePool(max, xv, n * c, h, w, kh, kw, sh, sw, pad);
      Tensor y = max ? x.maxPool2d(ctx, kh, kw, sh, sw, pad) : x.avgPool2d(ctx, kh, kw, sh, sw, pad);
      CHECK(y.tags() == fucina::Tags{"n", "c", "h", "w"});
      requireClose(y.toVector(), want, 1e-5f);
      // Input in another order, custom axis names: same values, output in the input's order.
      Tensor xp = x.withTags(ctx, {"n", "c", "y", "x"}).permuteTo(ctx, {"x", "c", "y", "n"});
      Tensor yp = max ? xp.maxPool2d(ctx, kh, kw, sh, sw, pad, "y", "x") : xp.avgPool2d(ctx, kh, kw, sh, sw, pad, "y", "x");
      CHECK(yp.tags() == fucina::Tags{"x", "c", "y", "n"});
      requireClose(yp.permuteTo(ctx, {"n", "c", "y", "x"}).toVector(), want, 1e-5f);
    }
  }
  // avgPool2d counts padding (count_include_pad=True): a corner window of ones sees 4 of 9.
  CHECK(Tensor::ones(ctx, {"h", "w"}, {2, 2}).avgPool2d(ctx, 3, 3, 1, 1, 1).toVector()[0] == Approx(4.0 / 9));
  // -inf padding: a window over negative values and padding yields the largest real value.
  CHECK(Tensor::fromSlice(ctx, {"h", "w"}, {1, 2}, {-3, -2}).maxPool2d(ctx, 2, 2, 1, 1, 1).toVector() ==
        std::vector<float>{-3, -2, -2, -3, -2, -2});
  // upsample2xNearest repeats each element in a 2x2 block.
  Tensor u = Tensor::fromSlice(ctx, {"c", "h", "w"}, {1, 2, 2}, {1, 2, 3, 4}).upsample2xNearest(ctx);
  CHECK(u.shape() == fucina::Extents{1, 4, 4});
  CHECK(u.toVector() == std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  Tensor up = Tensor::fromSlice(ctx, {"w", "h"}, {2, 1}, {5, 6}).upsample2xNearest(ctx);
  CHECK(up.tags() == fucina::Tags{"w", "h"});
  CHECK(up.permuteTo(ctx, {"h", "w"}).toVector() == std::vector<float>{5, 5, 6, 6, 5, 5, 6, 6});
}

TEST_CASE("pooling: gradients (first maximum, count_include_pad, 2x2 sums) and gradcheck") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  // Ties go to the first maximum in row-major window order.
  Tensor t = Tensor::variableFromSlice(ctx, {"h", "w"}, {2, 2}, {1, 3, 3, 2});
  t.maxPool2d(ctx, 2, 2, 2, 2).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, t) == std::vector<float>{0, 1, 0, 0});
  // Overlapping windows add up.
  Tensor o = Tensor::variableFromSlice(ctx, {"h", "w"}, {1, 3}, {1, 5, 2});
  o.maxPool2d(ctx, 1, 2, 1, 1).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, o) == std::vector<float>{0, 2, 0});
  Tensor u = Tensor::variableFromSlice(ctx, {"h", "w"}, {1, 2}, {1, 2});
  Tensor r = Tensor::fromSlice(ctx, {"h", "w"}, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  u.upsample2xNearest(ctx).mul(ctx, r).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, u) == std::vector<float>{14, 22});

  Tensor x = Tensor::variableFromSlice(ctx, {"c", "h", "n", "w"}, {2, 5, 2, 6}, distinct(120, 3, 0.05f));
  Tensor wts = Tensor::fromSlice(ctx, {"n", "c", "h", "w"}, {2, 2, 3, 4}, rnd(48, 4));
  const fucina::GradcheckOptions gopts{.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 2e-2};
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.maxPool2d(c, 3, 2, 2, 2, 1).mul(c, wts).sumAll(c); }, {&x}, gopts);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.avgPool2d(c, 3, 2, 2, 2, 1).mul(c, wts).tanh(c).sumAll(c); }, {&x}, gopts);
  Tensor rr = Tensor::fromSlice(ctx, {"c", "h", "n", "w"}, {2, 10, 2, 12}, rnd(480, 5));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.upsample2xNearest(c).mul(c, rr).tanh(c).sumAll(c); }, {&x}, gopts);
}

TEST_CASE("pooling: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"c", "h", "w"}, {2, 4, 4});
  CHECK_FUCINA_ERROR(x.maxPool2d(ctx, 5, 2, 1, 1), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.avgPool2d(ctx, 2, 2, 0, 1), InvalidArgument);
  CHECK_FUCINA_ERROR(x.maxPool2d(ctx, 2, 2, 1, 1, 2), InvalidArgument);  // pad > kernel / 2
  CHECK_FUCINA_ERROR(x.maxPool2d(ctx, 0, 2, 1, 1), InvalidArgument);
  CHECK_FUCINA_ERROR(x.maxPool2d(ctx, 2, 2, 1, 1, 0, "h", "h"), InvalidArgument);
  CHECK_FUCINA_ERROR(x.maxPool2d(ctx, 2, 2, 1, 1, 0, "y", "w"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.upsample2xNearest(ctx, "h", "x"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.to(ctx, fucina::DType::i32).avgPool2d(ctx, 2, 2, 1, 1), DTypeMismatch);
}

TEST_CASE("conv2d and pooling: an empty batch gives empty results and gradients") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"n", "c", "h", "w"}, {0, 2, 4, 4}, std::vector<float>{});
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "c", "kh", "kw"}, {3, 2, 3, 3}, rnd(54, 9));
  Tensor y = x.conv2d(ctx, w, Conv2dOptions{.pad_h = 1, .pad_w = 1});
  CHECK(y.shape() == fucina::Extents{0, 3, 4, 4});
  Tensor p = y.maxPool2d(ctx, 2, 2, 2, 2).add(ctx, y.avgPool2d(ctx, 2, 2, 2, 2)).upsample2xNearest(ctx);
  CHECK(p.shape() == fucina::Extents{0, 3, 4, 4});
  p.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x).empty());
  CHECK(test::gradOf(ctx, w) == std::vector<float>(54, 0.0f));
}

TEST_CASE("conv2d: values and gradients are bit-identical on 1 and 2 threads (images in chunks)") {
  // 11 images: more than the chunk count and not a multiple of it; groups and stride too.
  auto run = [](int threads) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    Tensor x = Tensor::variable(ctx, Tensor::normal(ctx, {"b", "c", "h", "w"}, {11, 4, 9, 8}, 0, 1, 1));
    Tensor w = Tensor::variable(ctx, Tensor::normal(ctx, {"out", "c", "kh", "kw"}, {6, 2, 3, 3}, 0, 1, 2));
    fucina::Conv2dOptions o;
    o.groups = 2;
    o.stride_h = 2;
    o.pad_w = 1;
    const Tensor y = x.conv2d(ctx, w, o);
    y.mul(ctx, y).sumAll(ctx).backward(ctx);
    return std::vector<std::vector<float>>{y.toVector(), x.grad(ctx)->toVector(), w.grad(ctx)->toVector()};
  };
  const auto one = run(1), two = run(2);
  CHECK(one[0] == two[0]);
  CHECK(one[1] == two[1]);
  CHECK(one[2] == two[2]);
}

TEST_CASE("pooling and upsampling: planes in chunks give the same values and gradients on 1 and 2 threads") {
  // 1200 planes of 7x5: enough to be split over the pool (the grain is 16K elements).
  auto run = [](int threads, int op) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    Tensor x = Tensor::variable(ctx, Tensor::normal(ctx, {"b", "c", "h", "w"}, {4, 300, 7, 5}, 0, 1, 3));
    const Tensor y = op == 0 ? x.maxPool2d(ctx, 3, 2, 2, 1, 1) : op == 1 ? x.avgPool2d(ctx, 3, 2, 2, 1, 1) : x.upsample2xNearest(ctx);
    y.mul(ctx, y).sumAll(ctx).backward(ctx);
    return std::vector<std::vector<float>>{y.toVector(), x.grad(ctx)->toVector(), x.toVector()};
  };
  for (int op : {0, 1, 2}) {
    INFO((op == 0 ? "maxPool2d" : op == 1 ? "avgPool2d" : "upsample2xNearest"));
    const auto one = run(1, op), two = run(2, op);
    CHECK(one[0] == two[0]);
    CHECK(one[1] == two[1]);
    if (op < 2) requireClose(two[0], naivePool(op == 0, two[2], 1200, 7, 5, 3, 2, 2, 1, 1), 1e-5f);
  }
}
