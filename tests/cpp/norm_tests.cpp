// layerNorm, rmsNorm(Mul) and l2Normalize: values against naive formulas, gradcheck on every axis
// and through views, the affine forms, and bad inputs.
#include "test_helpers.h"

#include <cmath>

using fucina::ExecContext;
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
