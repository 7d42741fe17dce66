// sumMany, normAll, cumprod, linearRecurrence, topK and sort: the cases the shared tables of
// ops_tests.cpp cannot express (several axes, all elements, extra operands, k < n, ties and NaN),
// with naive references, gradcheck through views, bad inputs, and 1-vs-2-thread equality.
#include "test_helpers.h"

#include <algorithm>
#include <cmath>
#include <limits>

using fucina::DType;
using fucina::ExecContext;
using fucina::Extents;
using fucina::Tags;
using fucina::Tensor;
using test::wave;

namespace {
Tensor probe(ExecContext& c, const Tensor& y) {
  return y.mul(c, Tensor::fromSlice(c, y.tags(), y.shape(), wave(static_cast<size_t>(y.numel()), 1.0f, 0.3f, 0.7f))).sumAll(c);
}
const fucina::GradcheckOptions kLoose{.eps = 1e-3, .abs_tol = 2e-3, .rel_tol = 2e-2};
}  // namespace

TEST_CASE("sumMany: several axes at once, views, gradients and bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b", "c"}, {2, 3, 4}, wave(24, 1.0f, 0.2f, 0.3f));
  const std::vector<float> got = x.sumMany(ctx, {"c", "a"}).toVector(), want = x.sum(ctx, "a").sum(ctx, "c").toVector();
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-6));
  CHECK(x.sumMany(ctx, {"c", "a"}).tags() == Tags{"b"});
  CHECK(x.sumMany(ctx, {"a", "b", "c"}).item() == Approx(x.sumAll(ctx).item()).epsilon(1e-6));
  CHECK(x.sumMany(ctx, {}).toVector() == x.toVector());
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.permuteTo(c, {"c", "a", "b"}).narrow(c, "c", 1, 2).sumMany(c, {"a", "c"})); }, {&x});
  REQUIRE_FUCINA_ERROR(x.sumMany(ctx, {"a", "a"}), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.sumMany(ctx, {"a", "z"}), ShapeMismatch);
  CHECK(Tensor::ones(ctx, {"a", "b"}, {0, 2}).sumMany(ctx, {"a"}).toVector() == std::vector<float>{0, 0});
}

TEST_CASE("normAll: p-norms of every element, their gradients and edge points") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 3}, {3, -4, 0.5f, -1, 2, 0.25f});
  const std::vector<float> v = x.toVector();
  auto pnorm = [&](double p) {
    double s = 0;
    for (float e : v) s += std::pow(std::fabs(e), p);
    return std::pow(s, 1 / p);
  };
  for (double p : {1.0, 2.0, 3.0, 0.5}) {
    INFO("p = " << p);
    CHECK(x.normAll(ctx, p).item() == Approx(pnorm(p)).epsilon(1e-6));
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.permuteTo(c, {"c", "r"}).normAll(c, p).scale(c, 1.5); }, {&x}, kLoose);
  }
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(x.normAll(ctx, inf).item() == 4);
  x.normAll(ctx, inf).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, -1, 0, 0, 0, 0});
  // Ties at the max share the gradient; a zero tensor has norm 0 and gradient 0.
  Tensor t = Tensor::variableFromSlice(ctx, {"d"}, {3}, {2, -2, 1});
  t.normAll(ctx, inf).backward(ctx);
  CHECK(test::gradOf(ctx, t) == std::vector<float>{0.5f, -0.5f, 0});
  Tensor z = Tensor::variableFromSlice(ctx, {"d"}, {3}, {0, 0, 0});
  for (double p : {2.0, 1.0, 0.5, inf}) {
    z.zeroGrad();
    CHECK(z.normAll(ctx, p).item() == 0);
    z.normAll(ctx, p).backward(ctx);
    CHECK(test::gradOf(ctx, z) == std::vector<float>{0, 0, 0});
  }
  CHECK(Tensor::ones(ctx, {"d"}, {0}).normAll(ctx).item() == 0);
  CHECK(Tensor::ones(ctx, {"d"}, {4}, DType::f64).normAll(ctx).item() == 2);
  REQUIRE_FUCINA_ERROR(x.normAll(ctx, 0), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.normAll(ctx, -1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.normAll(ctx, std::nan("")), InvalidArgument);
}

TEST_CASE("cumprod: exact gradients with zeros in the input") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"t"}, {4}, {2, 0, 3, 0});
  CHECK(x.cumprod(ctx, "t").toVector() == std::vector<float>{2, 0, 0, 0});
  x.cumprod(ctx, "t").sumAll(ctx).backward(ctx);
  // d/dx0 = 1 + x1 + x1x2 + x1x2x3 = 1; d/dx1 = x0 + x0x2 + x0x2x3 = 8; d/dx2 = x0x1 (1 + x3) = 0.
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1, 8, 0, 0});
  Tensor one = Tensor::variableFromSlice(ctx, {"t"}, {1}, {5});
  one.cumprod(ctx, "t").sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, one) == std::vector<float>{1});
  Tensor empty = Tensor::variableFromSlice(ctx, {"r", "t"}, {2, 0}, std::vector<float>{});
  empty.cumprod(ctx, "t").sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, empty).empty());
}

namespace {
// h_t = d_t h_{t-1} + x_t along t, laid out {b, t, d}.
std::vector<double> naiveRecurrence(const std::vector<float>& x, const std::vector<float>& d, const std::vector<float>& h0,
                                    int64_t B, int64_t T, int64_t D) {
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < D; ++k) {
      double h = h0.empty() ? 0 : h0[size_t(b * D + k)];
      for (int64_t t = 0; t < T; ++t) {
        const size_t i = size_t((b * T + t) * D + k);
        y[i] = h = d[i] * h + x[i];
      }
    }
  return y;
}
}  // namespace

TEST_CASE("linearRecurrence: values, gradients of all three operands, layouts and threads") {
  const int64_t B = 3, T = 7, D = 5;
  const auto xv = wave(size_t(B * T * D), 1.0f, 0.1f, 0.31f), dv = wave(size_t(B * T * D), 0.9f, 0.4f, 0.57f),
             hv = wave(size_t(B * D), 1.0f, 0.2f, 0.77f);
  std::vector<std::vector<float>> by_threads;
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    Tensor x = Tensor::fromSlice(ctx, {"b", "t", "d"}, {B, T, D}, xv);
    Tensor d = Tensor::fromSlice(ctx, {"b", "t", "d"}, {B, T, D}, dv).permuteTo(ctx, {"d", "b", "t"});
    Tensor h0 = Tensor::fromSlice(ctx, {"b", "d"}, {B, D}, hv);
    Tensor y = x.linearRecurrence(ctx, d, h0, "t");
    CHECK(y.tags() == Tags{"b", "t", "d"});
    const auto want = naiveRecurrence(xv, dv, hv, B, T, D);
    const auto got = y.toVector();
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-6));
    const std::vector<float> no_h0 = x.linearRecurrence(ctx, d, "t").toVector();
    const std::vector<double> want0 = naiveRecurrence(xv, dv, {}, B, T, D);
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(no_h0[i] == Approx(want0[i]).epsilon(1e-5).margin(1e-6));
    by_threads.push_back(got);
  }
  CHECK(by_threads[0] == by_threads[1]);
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"b", "t", "d"}, {2, 4, 3}, wave(24, 1.0f, 0.1f, 0.31f));
  Tensor d = Tensor::variableFromSlice(ctx, {"t", "d", "b"}, {4, 3, 2}, wave(24, 0.9f, 0.4f, 0.57f));
  Tensor h0 = Tensor::variableFromSlice(ctx, {"d", "b"}, {3, 2}, wave(6, 1.0f, 0.2f, 0.77f));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.linearRecurrence(c, d, h0, "t")); }, {&x, &d, &h0}, kLoose);
  fucina::gradcheck(ctx, [&](ExecContext& c) {
    return probe(c, x.narrow(c, "t", 1, 3).linearRecurrence(c, d.narrow(c, "t", 0, 3), h0, "t"));
  }, {&x, &d, &h0}, kLoose);
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, x.linearRecurrence(c, d, "t")); }, {&x, &d}, kLoose);
  // An empty time axis: no output, h0's gradient is zero.
  Tensor e = Tensor::variableFromSlice(ctx, {"b", "t"}, {2, 0}, std::vector<float>{});
  Tensor he = Tensor::variableFromSlice(ctx, {"b"}, {2}, {1, 2});
  e.linearRecurrence(ctx, e, he, "t").sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, he) == std::vector<float>{0, 0});
  REQUIRE_FUCINA_ERROR(x.linearRecurrence(ctx, d, "z"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.linearRecurrence(ctx, d.narrow(ctx, "t", 0, 2), "t"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.linearRecurrence(ctx, d, Tensor::ones(ctx, {"b", "t"}, {2, 4}), "t"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.linearRecurrence(ctx, d, Tensor::ones(ctx, {"b"}, {2}), "t"), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.detach(ctx).to(ctx, DType::i32).linearRecurrence(ctx, d, "t"), DTypeMismatch);
}

TEST_CASE("topK and sort: k < n, order, ties, NaN, indices, gradients and bad inputs") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {2, 5}, {3, 1, 4, 1, 5, 9, 2, 6, 5, 3});
  fucina::SortResult top = x.topK(ctx, "c", 2);
  CHECK(top.values.toVector() == std::vector<float>{5, 4, 9, 6});
  CHECK(top.indices.dtype() == DType::i64);
  CHECK(top.indices.toVector() == std::vector<float>{4, 2, 0, 2});
  CHECK(!top.indices.requiresGrad());
  top.values.mul(ctx, Tensor::fromSlice(ctx, {"r", "c"}, {2, 2}, {1, 2, 3, 4})).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{0, 0, 2, 0, 1, 3, 0, 4, 0, 0});
  // Ties keep the lower index first, in both directions (torch's stable sort).
  fucina::SortResult low = x.topK(ctx, "c", 3, /*largest=*/false);
  CHECK(low.values.toVector() == std::vector<float>{1, 1, 3, 2, 3, 5});
  CHECK(low.indices.toVector() == std::vector<float>{1, 3, 0, 1, 4, 3});
  CHECK(x.sort(ctx, "c").indices.toVector() == std::vector<float>{1, 3, 0, 2, 4, 1, 4, 3, 2, 0});
  CHECK(x.sort(ctx, "c", true).indices.toVector() == std::vector<float>{4, 2, 0, 1, 3, 0, 2, 3, 4, 1});
  // NaN is larger than every number.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor n = Tensor::fromSlice(ctx, {"d"}, {4}, {1, nan, -1, 2});
  CHECK(n.sort(ctx, "d").indices.toVector() == std::vector<float>{2, 0, 3, 1});
  CHECK(n.topK(ctx, "d", 1).indices.toVector() == std::vector<float>{1});
  // Other axes in any order; the result keeps the input's axis order; k = 0 and k = n.
  Tensor xp = x.permuteTo(ctx, {"c", "r"});
  CHECK(xp.topK(ctx, "c", 2).values.tags() == Tags{"c", "r"});
  CHECK(xp.topK(ctx, "c", 2).values.permuteTo(ctx, {"r", "c"}).toVector() == std::vector<float>{5, 4, 9, 6});
  CHECK(x.topK(ctx, "c", 0).values.shape() == Extents{2, 0});
  CHECK(x.topK(ctx, "c", 5).values.toVector() == x.sort(ctx, "c", true).values.toVector());
  Tensor g = Tensor::variableFromSlice(ctx, {"a", "b"}, {3, 6}, wave(18, 2.0f, 0.1f, 0.77f));
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, g.permuteTo(c, {"b", "a"}).topK(c, "b", 4).values); }, {&g});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return probe(c, g.narrow(c, "b", 1, 4).sort(c, "a").values); }, {&g});
  // 16-bit constants sort in f32 and keep their dtype.
  CHECK(x.detach(ctx).to(ctx, DType::f16).topK(ctx, "c", 2).values.dtype() == DType::f16);
  REQUIRE_FUCINA_ERROR(x.topK(ctx, "c", 6), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.topK(ctx, "c", -1), InvalidArgument);
  REQUIRE_FUCINA_ERROR(x.topK(ctx, "z", 1), ShapeMismatch);
  REQUIRE_FUCINA_ERROR(x.detach(ctx).to(ctx, DType::i32).sort(ctx, "c"), DTypeMismatch);
}

TEST_CASE("topK, sort and cumprod: the same bits on 1 and 2 threads") {
  const auto v = wave(64 * 33, 3.0f, 0.1f, 0.913f);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2}) {
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    Tensor x = Tensor::variableFromSlice(ctx, {"r", "c"}, {64, 33}, v);
    fucina::SortResult s = x.topK(ctx, "c", 7);
    Tensor y = x.permuteTo(ctx, {"c", "r"}).sort(ctx, "c").values.add(ctx, x.scale(ctx, 0.1).cumprod(ctx, "c"));
    probe(ctx, y).add(ctx, probe(ctx, s.values)).backward(ctx);
    std::vector<float> all = y.toVector();
    for (float f : s.indices.toVector()) all.push_back(f);
    for (float f : test::gradOf(ctx, x)) all.push_back(f);
    runs.push_back(all);
  }
  CHECK(runs[0] == runs[1]);
}
