// layerNorm, rmsNorm(Mul) and l2Normalize: values against naive formulas, gradcheck on every axis
// and through views, the affine forms, and bad inputs.
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
