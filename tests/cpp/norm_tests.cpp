// layerNorm, rmsNorm(Mul), l2Normalize and the fused rmsNormMulRopeHalfPrepared: values against
// naive formulas or compositions, gradcheck on every axis and through views, the affine forms,
// and bad inputs.
#include "test_helpers.h"

#include <cmath>

using fucina::ExecContext;
using fucina::Tags;
using fucina::Tensor;
using test::wave;

TEST_CASE("norms match naive formulas along the last axis") {
  ExecContext ctx;
  const auto xv = wave(12, 2, 0.3f, 0.9f);
  Tensor x = Tensor::fromSlice(ctx, {"t", "d"}, {3, 4}, xv);
  const auto ln = x.layerNorm(ctx, "d").toVector();
  const auto rms = x.rmsNorm(ctx, "d").toVector();
  const auto l2 = x.l2Normalize(ctx, "d").toVector();
  for (int r = 0; r < 3; ++r) {
    double mean = 0, var = 0, sq = 0;
    for (int i = 0; i < 4; ++i) mean += xv[size_t(r * 4 + i)] / 4.0;
    for (int i = 0; i < 4; ++i) {
      const double v = xv[size_t(r * 4 + i)];
      var += (v - mean) * (v - mean) / 4.0;
      sq += v * v;
    }
    for (int i = 0; i < 4; ++i) {
      const double v = xv[size_t(r * 4 + i)];
      CHECK(ln[size_t(r * 4 + i)] == Approx((v - mean) / std::sqrt(var + 1e-5)).margin(1e-5));
      CHECK(rms[size_t(r * 4 + i)] == Approx(v / std::sqrt(sq / 4 + 1e-6)).margin(1e-5));
      CHECK(l2[size_t(r * 4 + i)] == Approx(v / std::sqrt(sq)).margin(1e-6));
    }
  }
  // Along the first axis: the same as permuting it last.
  CHECK(x.layerNorm(ctx, "t").permuteTo(ctx, {"d", "t"}).toVector() ==
        x.permuteTo(ctx, {"d", "t"}).contiguous(ctx).layerNorm(ctx, "t").toVector());
  CHECK(x.layerNorm(ctx, "t").tags() == fucina::Tags{"t", "d"});
}

TEST_CASE("norms pass gradcheck on every axis, through views, and in affine form") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {2, 3, 4}, wave(24, 1.3f, 0.2f, 0.9f));
  Tensor w = Tensor::fromSlice(ctx, {"a", "b", "c"}, {2, 3, 4}, wave(24, 1, 1.7f, 0.9f));
  for (const char* axis : {"a", "b", "c"}) {
    INFO(axis);
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.layerNorm(c, axis).mul(c, w).sumAll(c); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.rmsNorm(c, axis).mul(c, w).sumAll(c); }, {&x});
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.l2Normalize(c, axis).mul(c, w).sumAll(c); }, {&x});
  }
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return x.permuteTo(c, {"c", "b", "a"}).narrow(c, "c", 1, 3).layerNorm(c, "c").mul(c, w.narrow(c, "c", 1, 3)).sumAll(c);
  }, {&x});
  Tensor gamma = Tensor::variableFromSlice(ctx, {"c"}, {4}, {1, 0.5f, -1, 2});
  Tensor beta = Tensor::variableFromSlice(ctx, {"c"}, {4}, {0.1f, 0, -0.2f, 0.3f});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.layerNorm(c, "c", gamma, beta).mul(c, w).sumAll(c); }, {&x, &gamma, &beta});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.rmsNormMul(c, "c", gamma).mul(c, w).sumAll(c); }, {&x, &gamma});
}

TEST_CASE("l2Normalize of a zero vector gives zeros and finite gradients") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {0, 0, 0});
  Tensor y = x.l2Normalize(ctx, "d");
  CHECK(y.toVector() == std::vector<float>{0, 0, 0});
  y.mul(ctx, Tensor::fromSlice(ctx, {"d"}, {3}, {1, 2, 3})).sumAll(ctx).backward(ctx);
  for (float g : test::gradOf(ctx, x)) CHECK(std::isfinite(g));
}

TEST_CASE("norms: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"t", "d"}, {2, 3});
  REQUIRE_FUCINA_ERROR(x.layerNorm(ctx, "z"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.rmsNorm(ctx, "d", -1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"t", "d"}, {2, 0}).layerNorm(ctx, "d"), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.layerNorm(ctx, "d", Tensor::ones(ctx, {"t"}, {2}), Tensor::ones(ctx, {"d"}, {3})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.layerNorm(ctx, "d", Tensor::ones(ctx, {"d"}, {3}), Tensor::ones(ctx, {"d"}, {4})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.rmsNormMul(ctx, "d", Tensor::ones(ctx, {"t", "d"}, {2, 3})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(Tensor::ones(ctx, {"d"}, {3}, fucina::DType::i32).l2Normalize(ctx, "d"), DTypeMismatch);
}

// ---------------------------------------------------------------- standardizeAxis, rmsNormMulAdd, groupNorm, cosineSimilarity

namespace {
void requireSame(ExecContext& ctx, const Tensor& a, const Tensor& b, double eps = 1e-5) {
  REQUIRE(a.shape().size() == b.shape().size());
  const std::vector<float> av = a.toVector(), bv = b.permuteTo(ctx, a.tags()).toVector();
  REQUIRE(av.size() == bv.size());
  for (size_t i = 0; i < av.size(); ++i) CHECK(av[i] == Approx(bv[i]).epsilon(eps).margin(eps));
}
}  // namespace

TEST_CASE("standardizeAxis, rmsNormMulAdd, groupNorm and cosineSimilarity: values") {
  ExecContext ctx;
  Tensor x = Tensor::fromSlice(ctx, {"batch", "c", "h"}, {2, 6, 3}, test::wave(36, 2.0f, 0.1f, 0.43f));
  Tensor w = Tensor::fromSlice(ctx, {"c"}, {6}, test::wave(6, 1.0f, 0.5f, 0.9f));
  Tensor b = Tensor::fromSlice(ctx, {"c"}, {6}, test::wave(6, 0.5f, 0.2f, 1.3f));
  requireSame(ctx, x.standardizeAxis(ctx, "h", 1e-3), x.layerNorm(ctx, "h", 1e-3));
  requireSame(ctx, x.rmsNormMulAdd(ctx, "c", w, b), x.rmsNormMul(ctx, "c", w).add(ctx, b));
  // groupNorm by hand: per batch element and group of 2 channels, over (channel, h).
  const std::vector<float> xv = x.toVector(), y = x.groupNorm(ctx, 3, "c", w, b, {.eps = 1e-5}).toVector();
  const std::vector<float> wv = w.toVector(), bv = b.toVector();
  for (int n = 0; n < 2; ++n)
    for (int g = 0; g < 3; ++g) {
      double m = 0, v = 0;
      for (int i = 0; i < 6; ++i) m += xv[n * 18 + g * 6 + i];
      m /= 6;
      for (int i = 0; i < 6; ++i) v += std::pow(xv[n * 18 + g * 6 + i] - m, 2);
      v /= 6;
      for (int i = 0; i < 6; ++i) {
        const int ch = g * 2 + i / 3, at = n * 18 + g * 6 + i;
        CHECK(y[at] == Approx((xv[at] - m) / std::sqrt(v + 1e-5) * wv[ch] + bv[ch]).epsilon(1e-5).margin(1e-5));
      }
    }
  // Axis order does not matter, and one group per channel is instance norm.
  Tensor xp = x.permuteTo(ctx, {"h", "c", "batch"});
  requireSame(ctx, x.groupNorm(ctx, 3, "c"), xp.groupNorm(ctx, 3, "c"));
  CHECK(xp.groupNorm(ctx, 3, "c").tags() == Tags{"h", "c", "batch"});
  requireSame(ctx, x.groupNorm(ctx, 6, "c"), x.standardizeAxis(ctx, "h"));
  // Several batch axes; none at all (one sample).
  Tensor s = x.split(ctx, "h", {"p", "q"}, {3, 1});
  requireSame(ctx, s.groupNorm(ctx, 2, "c", {.batch = {"batch", "q"}}), x.groupNorm(ctx, 2, "c").split(ctx, "h", {"p", "q"}, {3, 1}));
  Tensor one = x.select(ctx, "batch", 1);
  requireSame(ctx, one.groupNorm(ctx, 3, "c", {.batch = {}}), x.groupNorm(ctx, 3, "c").select(ctx, "batch", 1));
  // cosineSimilarity: the normalized dot, broadcast by tag; 0 for a zero vector.
  Tensor u = Tensor::fromSlice(ctx, {"r", "d"}, {2, 3}, {1, 2, 2, 0, 0, 0});
  Tensor v = Tensor::fromSlice(ctx, {"d"}, {3}, {2, 0, 0});
  const std::vector<float> cs = u.cosineSimilarity(ctx, v, "d").toVector();
  CHECK(cs[0] == Approx(1.0 / 3));
  CHECK(cs[1] == 0.0f);
}

TEST_CASE("standardizeAxis, rmsNormMulAdd, groupNorm and cosineSimilarity: gradcheck through views") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "c", "h"}, {2, 4, 3}, test::wave(24, 2.0f, 0.1f, 0.43f));
  Tensor w = Tensor::variableFromSlice(ctx, {"c"}, {4}, test::wave(4, 1.0f, 0.5f, 0.9f));
  Tensor b = Tensor::variableFromSlice(ctx, {"c"}, {4}, test::wave(4, 0.5f, 0.2f, 1.3f));
  Tensor y = Tensor::variableFromSlice(ctx, {"h", "c"}, {3, 4}, test::wave(12, 1.0f, 0.7f, 0.31f));
  auto probe = [](ExecContext& c, const Tensor& t) {
    return t.mul(c, Tensor::fromSlice(c, t.tags(), t.shape(), test::wave(size_t(t.numel()), 1.0f, 0.3f, 0.7f))).sumAll(c);
  };
  const fucina::GradcheckOptions o{.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 2e-2};
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.permuteTo(c, {"h", "batch", "c"}).standardizeAxis(c, "c")); }, {&x}, o);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.rmsNormMulAdd(c, "c", w, b)); }, {&x, &w, &b}, o);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.groupNorm(c, 2, "c", w, b)); }, {&x, &w, &b}, o);
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.permuteTo(c, {"h", "c", "batch"}).narrow(c, "h", 1, 2).groupNorm(c, 1, "c"));
  }, {&x}, o);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.cosineSimilarity(c, y, "c")); }, {&x, &y}, o);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, y.narrow(c, "h", 0, 2).cosineSimilarity(c, x.narrow(c, "h", 1, 2), "h")); }, {&x, &y}, o);
}

TEST_CASE("standardizeAxis, rmsNormMulAdd, groupNorm and cosineSimilarity: bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::ones(ctx, {"batch", "c", "h"}, {2, 6, 3});
  Tensor w = Tensor::ones(ctx, {"c"}, {6});
  REQUIRE_FUCINA_ERROR(x.standardizeAxis(ctx, "z"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.standardizeAxis(ctx, "h", -1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.rmsNormMulAdd(ctx, "c", w, Tensor::ones(ctx, {"h"}, {3})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.groupNorm(ctx, 4, "c"), InvalidArgument);   // 6 channels, 4 groups
  REQUIRE_FUCINA_ERROR(x.groupNorm(ctx, 0, "c"), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.groupNorm(ctx, 2, "z"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.groupNorm(ctx, 2, "c", {.batch = {"n"}}), ShapeMismatch);  // no such batch axis
  REQUIRE_FUCINA_ERROR(x.groupNorm(ctx, 2, "c", {.batch = {"c"}}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.groupNorm(ctx, 2, "c", w, Tensor::ones(ctx, {"c"}, {5})), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.cosineSimilarity(ctx, Tensor::ones(ctx, {"h"}, {3}), "c"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.cosineSimilarity(ctx, Tensor::ones(ctx, {"c"}, {5}), "c"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.to(ctx, fucina::DType::i32).groupNorm(ctx, 2, "c"), DTypeMismatch);
}

// ---------------------------------------------------------------- rmsNormMulRopeHalfPrepared

namespace {

// Tables {t: rows, d: D/2} of angles (offset-free) p·base^(-2i/D).
std::pair<Tensor, Tensor> ropeTables(ExecContext& ctx, int64_t rows, int64_t D) {
  std::vector<float> c, s;
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < D / 2; ++i) {
      const double a = double(p) * std::pow(10000.0, -2.0 * double(i) / double(D));
      c.push_back(float(std::cos(a))), s.push_back(float(std::sin(a)));
    }
  return {Tensor::fromSlice(ctx, {"t", "d"}, {rows, D / 2}, c), Tensor::fromSlice(ctx, {"t", "d"}, {rows, D / 2}, s)};
}

}  // namespace

TEST_CASE("rmsNormMulRopeHalfPrepared equals rmsNormMul then rope, values and gradients") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  // x {t, head, b, d} (a permuted view of its storage), offset 2 into a 7-row table.
  Tensor xs = Tensor::variableFromSlice(ctx, {"b", "head", "d", "t"}, {2, 3, 6, 4}, wave(144, 1.5f, 0.2f, 0.41f));
  Tensor w = Tensor::variableFromSlice(ctx, {"d"}, {6}, wave(6, 1, 1.1f, 0.9f));
  const auto cossin_tables = ropeTables(ctx, 7, 6);  // not a structured binding: clang 14 cannot capture those
  const Tensor& cos = cossin_tables.first;
  const Tensor& sin = cossin_tables.second;
  const fucina::RmsNormRopeOptions o{.position = "t", .offset = 2, .eps = 1e-5};
  const fucina::RopeOptions ro{.position = "t", .dim = "d", .offset = 2};
  auto x = [&] { return xs.permuteTo(ctx, {"t", "head", "b", "d"}); };  // a fresh view per graph
  const Tensor gy = Tensor::fromSlice(ctx, {"b", "t", "head", "d"}, {2, 4, 3, 6}, wave(144, 1, 0.5f, 0.77f));
  const Tensor fused = x().rmsNormMulRopeHalfPrepared(ctx, w, cos, sin, "d", o);
  const Tensor composed = x().rmsNormMul(ctx, "d", w, 1e-5).rope(ctx, cos, sin, ro);
  CHECK(fused.tags() == x().tags());
  const auto fv = fused.toVector(), cv = composed.toVector();
  REQUIRE(fv.size() == cv.size());
  for (size_t i = 0; i < fv.size(); ++i) CHECK(fv[i] == Approx(cv[i]).margin(1e-5));
  fused.mul(ctx, gy).sumAll(ctx).backward(ctx);
  const auto gx = test::gradOf(ctx, xs), gw = test::gradOf(ctx, w);
  xs.zeroGrad(), w.zeroGrad();
  composed.mul(ctx, gy).sumAll(ctx).backward(ctx);
  const auto gx2 = test::gradOf(ctx, xs), gw2 = test::gradOf(ctx, w);
  for (size_t i = 0; i < gx.size(); ++i) CHECK(gx[i] == Approx(gx2[i]).margin(1e-5));
  for (size_t i = 0; i < gw.size(); ++i) CHECK(gw[i] == Approx(gw2[i]).margin(1e-4));
  xs.zeroGrad(), w.zeroGrad();
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return xs.permuteTo(c, {"t", "head", "b", "d"}).rmsNormMulRopeHalfPrepared(c, w, cos, sin, "d", o).mul(c, gy).sumAll(c);
  }, {&xs, &w});
  // Size-1 axes and D = 2.
  Tensor x1 = Tensor::variableFromSlice(ctx, {"t", "d"}, {1, 2}, {0.3f, -1.2f});
  Tensor w1 = Tensor::variableFromSlice(ctx, {"d"}, {2}, {0.7f, 1.5f});
  const auto c1s1_tables = ropeTables(ctx, 3, 2);  // not a structured binding: clang 14 cannot capture those
  const Tensor& c1 = c1s1_tables.first;
  const Tensor& s1 = c1s1_tables.second;
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return x1.rmsNormMulRopeHalfPrepared(c, w1, c1, s1, "d", {.offset = 2}).mul(c, Tensor::fromSlice(c, {"d"}, {2}, {1, -2})).sumAll(c);
  }, {&x1, &w1});
}

TEST_CASE("rmsNormMulRopeHalfPrepared is the same on 1 and 2 threads") {
  auto run = [](int threads) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    Tensor x = Tensor::variable(ctx, Tensor::uniform(ctx, {"b", "t", "d"}, {8, 64, 64}, -2, 2, 3));
    Tensor w = Tensor::variable(ctx, Tensor::uniform(ctx, {"d"}, {64}, 0.5, 1.5, 4));
    const auto cossin_tables = ropeTables(ctx, 64, 64);  // not a structured binding: clang 14 cannot capture those
    const Tensor& cos = cossin_tables.first;
    const Tensor& sin = cossin_tables.second;
    const Tensor y = x.rmsNormMulRopeHalfPrepared(ctx, w, cos, sin, "d");
    y.mul(ctx, Tensor::uniform(ctx, {"b", "t", "d"}, {8, 64, 64}, -1, 1, 5)).sumAll(ctx).backward(ctx);
    std::vector<float> out = y.toVector();
    for (float v : test::gradOf(ctx, x)) out.push_back(v);
    for (float v : test::gradOf(ctx, w)) out.push_back(v);
    return out;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("rmsNormMulRopeHalfPrepared: bad inputs") {
  ExecContext ctx;
  const Tensor x = Tensor::ones(ctx, {"t", "d"}, {2, 4});
  const Tensor w = Tensor::ones(ctx, {"d"}, {4});
  const auto cossin_tables = ropeTables(ctx, 2, 4);  // not a structured binding: clang 14 cannot capture those
  const Tensor& cos = cossin_tables.first;
  const Tensor& sin = cossin_tables.second;
  CHECK_FUCINA_ERROR(x.rmsNormMulRopeHalfPrepared(ctx, Tensor::ones(ctx, {"d"}, {3}), cos, sin, "d"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.rmsNormMulRopeHalfPrepared(ctx, w, cos, sin, "e"), ShapeMismatch);
  CHECK_FUCINA_ERROR(x.rmsNormMulRopeHalfPrepared(ctx, w, cos, sin, "d", {.offset = 1}), ShapeMismatch);  // table too short
  CHECK_FUCINA_ERROR(Tensor::ones(ctx, {"t", "d"}, {2, 3}).rmsNormMulRopeHalfPrepared(ctx, Tensor::ones(ctx, {"d"}, {3}), cos, sin, "d"),
                     InvalidArgument);  // odd head dim
  CHECK_FUCINA_ERROR(x.rmsNormMulRopeHalfPrepared(ctx, w, cos, sin, "d", {.eps = -1}), InvalidArgument);
  CHECK_FUCINA_ERROR(x.rmsNormMulRopeHalfPrepared(ctx, w, Tensor::variable(ctx, cos), sin, "d"), UnsupportedGradient);
  CHECK_FUCINA_ERROR(x.to(ctx, fucina::DType::f64).rmsNormMulRopeHalfPrepared(ctx, w, cos, sin, "d"), DTypeMismatch);
}
