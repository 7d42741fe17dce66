// gradcheck: central finite differences against the analytical backward.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "test_helpers.h"

using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::GradcheckOptions;
using fucina::GradcheckResult;
using fucina::Tensor;
using fucina::internal::RawTensor;
using test::makeNode;
using test::raw;
using Floats = std::vector<float>;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

GradcheckOptions quiet() {
  GradcheckOptions o;
  o.print_mismatch = false;
  return o;
}

// y = x (a copy of its current value) whose VJP returns twice the true gradient.
Tensor wrongIdentity(ExecContext& ctx, const Tensor& x) {
  return makeNode(ctx, x.value().clone(ctx), {x},
                  [](ExecContext& c, const RawTensor& gy, std::span<const bool> needs,
                     std::span<std::optional<RawTensor>> out) {
                    if (needs[0]) out[0] = test::scaledCopy(c, gy, 2);
                  });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Passing checks
// ---------------------------------------------------------------------------------------------

TEST_CASE("gradcheck passes on simple losses and counts every variable element") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, -2, 3});
  Tensor w = Tensor::variableFromSlice(ctx, {"a", "d"}, {2, 3}, {0.5, -1, 2, 1.5, 0.25, -0.75});

  SECTION("quadratic") {
    GradcheckResult r = fucina::gradcheck(
        ctx, [&](ExecContext& c) { return x.mul(c, x).scale(c, 0.5).sumAll(c); }, {&x});
    CHECK(r.checked == 3u);
    CHECK(r.max_abs_error < 1e-2);
    CHECK(r.max_rel_error < 1e-2);
  }
  SECTION("two variables, broadcast by tag, nonlinear") {
    GradcheckResult r = fucina::gradcheck(
        ctx, [&](ExecContext& c) { return w.mul(c, x).tanh(c).sumAll(c); }, {&x, &w});
    CHECK(r.checked == 3u + 6u);
    CHECK(r.max_abs_error < 1e-2);
    CHECK(r.max_rel_error < 1e-2);
  }
  SECTION("contraction") {
    GradcheckResult r = fucina::gradcheck(
        ctx, [&](ExecContext& c) { return w.dot(c, x, "d").sigmoid(c).sumAll(c); }, {&w, &x});
    CHECK(r.checked == 9u);
    CHECK(r.max_abs_error < 1e-2);
  }
  // The harness restores every perturbed element.
  CHECK(x.toVector() == Floats{1, -2, 3});
  CHECK(w.toVector() == Floats{0.5, -1, 2, 1.5, 0.25, -0.75});
}

TEST_CASE("gradcheck ignores constants among the inputs") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {3}, {0.4, 0.5, 0.6});
  GradcheckResult r = fucina::gradcheck(
      ctx, [&](ExecContext& cx) { return x.mul(cx, c).exp(cx).sumAll(cx).log(cx); }, {&c, &x});
  CHECK(r.checked == 3u);
  CHECK(r.max_abs_error < 1e-2);
  CHECK(c.toVector() == Floats{0.4, 0.5, 0.6});
  CHECK_FALSE(c.requiresGrad());
}

TEST_CASE("gradcheck accepts a loss taking the inputs as a vector") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {0.5, -1.5});
  Tensor y = Tensor::variableFromSlice(ctx, {"d"}, {2}, {2, 3});
  int calls = 0;
  auto loss = [&calls](ExecContext& c, const std::vector<Tensor>& in) {
    ++calls;
    REQUIRE(in.size() == 2);
    return in[0].mul(c, in[1]).mul(c, in[0]).sumAll(c);  // x^2 y, in the order given
  };
  GradcheckResult r = fucina::gradcheck(ctx, loss, {&x, &y});
  CHECK(r.checked == 4u);
  CHECK(r.max_abs_error < 1e-2);
  CHECK(calls >= 1 + 2 * 4);  // one analytical run, two evaluations per element
}

TEST_CASE("gradcheck tolerances are applied") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  auto cube = [&](ExecContext& c) { return x.mul(c, x).mul(c, x).sumAll(c); };
  // Central differences of x^3 are off by eps^2 exactly: 0.25 with eps = 0.5.
  GradcheckOptions coarse = quiet();
  coarse.eps = 0.5;
  coarse.abs_tol = 1e-3;
  coarse.rel_tol = 1e-3;
  REQUIRE_FUCINA_ERROR(fucina::gradcheck(ctx, cube, {&x}, coarse), GradientMismatch);
  coarse.abs_tol = 0.3;  // now within tolerance
  GradcheckResult r = fucina::gradcheck(ctx, cube, {&x}, coarse);
  CHECK(r.max_abs_error == Approx(0.25).margin(1e-3));
  CHECK(fucina::gradcheck(ctx, cube, {&x}).checked == 2u);  // default eps is fine
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

TEST_CASE("gradcheck rejects invalid options with InvalidGradcheckOptions") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  auto loss = [&](ExecContext& c) { return x.mul(c, x).sumAll(c); };
  GradcheckOptions o = quiet();
  SECTION("eps = 0") { o.eps = 0; }
  SECTION("eps < 0") { o.eps = -1e-3; }
  SECTION("eps NaN") { o.eps = kNaN; }
  SECTION("eps inf") { o.eps = kInf; }
  SECTION("abs_tol < 0") { o.abs_tol = -1e-3; }
  SECTION("rel_tol < 0") { o.rel_tol = -1e-2; }
  SECTION("abs_tol NaN") { o.abs_tol = kNaN; }
  SECTION("rel_tol inf") { o.rel_tol = kInf; }
  REQUIRE_FUCINA_ERROR(fucina::gradcheck(ctx, loss, {&x}, o), InvalidGradcheckOptions);
  CHECK_FALSE(x.grad(ctx).has_value());
}

TEST_CASE("gradcheck accepts zero tolerances as valid options") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  GradcheckOptions o = quiet();
  o.abs_tol = 0;
  o.rel_tol = 0;
  // Valid options; whatever the verdict, it is not an options error.
  try {
    fucina::gradcheck(ctx, [&](ExecContext& c) { return x.scale(c, 0.5).sumAll(c); }, {&x}, o);
  } catch (const fucina::Error& e) {
    CHECK(e.code() == ErrorCode::GradientMismatch);
  }
}

TEST_CASE("gradcheck without variable inputs fails with NoVariableInputs") {
  ExecContext ctx;
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2});
  auto loss = [&](ExecContext& cx) { return c.sumAll(cx); };
  REQUIRE_FUCINA_ERROR(fucina::gradcheck(ctx, loss, {&c}), NoVariableInputs);
  REQUIRE_FUCINA_ERROR(fucina::gradcheck(ctx, loss, {}), NoVariableInputs);
}

TEST_CASE("gradcheck reports a wrong VJP with GradientMismatch") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  auto loss = [&](ExecContext& c) { return wrongIdentity(c, x).mul(c, x).sumAll(c); };
  REQUIRE_FUCINA_ERROR(fucina::gradcheck(ctx, loss, {&x}, quiet()), GradientMismatch);
  CHECK_FALSE(x.grad(ctx).has_value());      // zeroed on the error exit too
  CHECK(x.toVector() == Floats{1, 2, 3});    // values restored
}

TEST_CASE("gradcheck reports an unused variable with MissingAnalyticalGradient") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor unused = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  auto loss = [&](ExecContext& c) { return x.mul(c, x).sumAll(c); };
  REQUIRE_FUCINA_ERROR(fucina::gradcheck(ctx, loss, {&x, &unused}, quiet()),
                       MissingAnalyticalGradient);
  CHECK_FALSE(x.grad(ctx).has_value());  // x did receive one; it is zeroed on exit
  CHECK_FALSE(unused.grad(ctx).has_value());
}

TEST_CASE("gradcheck propagates errors thrown by the loss") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  int calls = 0;
  // Fails on the third evaluation: after the analytical backward, mid-perturbation.
  auto loss = [&](ExecContext& c) {
    if (++calls == 3) throw fucina::Error(ErrorCode::IndexOutOfRange, "loss failed on purpose");
    return x.mul(c, x).sumAll(c);
  };
  REQUIRE_FUCINA_ERROR(fucina::gradcheck(ctx, loss, {&x}, quiet()), IndexOutOfRange);
  CHECK(calls == 3);
  CHECK_FALSE(x.grad(ctx).has_value());
  CHECK(x.toVector() == Floats{1, 2});  // the perturbed element is put back

  calls = 0;
  auto std_loss = [&](ExecContext& c) {
    if (++calls == 2) throw std::runtime_error("plain std error");
    return x.sumAll(c);
  };
  REQUIRE_THROWS_WITH(fucina::gradcheck(ctx, std_loss, {&x}, quiet()), "plain std error");
}

TEST_CASE("gradcheck rejects a non-scalar loss") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  REQUIRE_THROWS_AS(
      fucina::gradcheck(ctx, [&](ExecContext& c) { return x.scale(c, 2); }, {&x}, quiet()),
      fucina::Error);
}

// ---------------------------------------------------------------------------------------------
// Gradients of the inputs around a check
// ---------------------------------------------------------------------------------------------

TEST_CASE("gradcheck zeroes input gradients before and after the check") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  // A stale gradient that would spoil the comparison if it were not dropped first.
  x.gradState()->setGrad(raw(ctx, {"d"}, {3}, {100, 100, 100}));
  GradcheckResult r = fucina::gradcheck(
      ctx, [&](ExecContext& c) { return x.mul(c, x).sumAll(c); }, {&x}, quiet());
  CHECK(r.checked == 3u);
  CHECK_FALSE(x.grad(ctx).has_value());
  CHECK(x.toVector() == Floats{1, 2, 3});
}

TEST_CASE("gradcheck leaves the caller's graph state usable") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  fucina::gradcheck(ctx, [&](ExecContext& c) { return x.mul(c, x).sumAll(c); }, {&x});
  // Training continues normally afterwards.
  CHECK(fucina::isGradEnabled());
  Tensor loss = x.scale(ctx, 3).sumAll(ctx);
  loss.backward(ctx);
  CHECK(test::gradOf(ctx, x) == Floats{3, 3});
}
