// The autograd engine against the reference's contract for gradients, backward and noGrad:
// first the reference snippets ported one-to-one, then one TEST_CASE per rule.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <thread>

#include "test_helpers.h"

using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::Tensor;
using fucina::internal::RawTensor;
using test::checkNoPendingState;
using test::gradOf;
using test::LambdaRecord;
using test::makeNode;
using test::raw;
using test::scaledCopy;
using test::vec;
using Floats = std::vector<float>;

namespace {

// An identity node over x (value: a copy of x) whose VJP throws on its first call and passes
// the gradient through afterwards.
Tensor throwOnceIdentity(ExecContext& ctx, const Tensor& x, LambdaRecord** record) {
  auto failed = std::make_shared<bool>(false);
  return makeNode(
      ctx, x.value().clone(ctx), {x},
      [failed](ExecContext& c, const RawTensor& gy, std::span<const bool> needs,
               std::span<std::optional<RawTensor>> out) {
        if (!*failed) {
          *failed = true;
          throw fucina::Error(ErrorCode::InvalidArgument, "deliberate failure in test record");
        }
        if (needs[0]) out[0] = gy.clone(c);
      },
      0, record);
}

// A scalar node summing every element of every operand; its VJP broadcasts gy to each.
Tensor sumOfAll(ExecContext& ctx, const std::vector<Tensor>& parts) {
  double total = 0;
  for (const Tensor& p : parts)
    for (float v : p.toVector()) total += v;
  std::vector<fucina::Tags> tags;
  std::vector<fucina::Extents> shapes;
  for (const Tensor& p : parts) {
    tags.push_back(p.tags());
    shapes.push_back(p.shape());
  }
  return makeNode(
      ctx, raw(ctx, {}, {}, {static_cast<float>(total)}), parts,
      [tags, shapes](ExecContext& c, const RawTensor& gy, std::span<const bool> needs,
                     std::span<std::optional<RawTensor>> out) {
        const float g = gy.toVector().at(0);
        for (size_t i = 0; i < needs.size(); ++i)
          if (needs[i]) out[i] = RawTensor::full(c, tags[i], shapes[i], g);
      });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reference snippets, same names and values
// ---------------------------------------------------------------------------------------------

TEST_CASE("backward and grad read") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {3}, {10, 20, 30});  // constant: no grad state

  Tensor y = x.mul(ctx, c);
  Tensor loss = y.sumAll(ctx);  // scalar output: implicit seed 1
  loss.backward(ctx);

  std::optional<Tensor> gx = x.grad(ctx);  // deep copy
  REQUIRE(gx.has_value());
  CHECK(vec(gx->dataConst()) == Floats{10, 20, 30});
  CHECK_FALSE(c.grad(ctx).has_value());  // constants never accumulate
}

TEST_CASE("non-scalar output needs a seed") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  Tensor y = x.scale(ctx, 2);

  // Unseeded non-scalar output: fails before any scheduling state exists,
  // so the SAME graph runs once a seed is supplied.
  REQUIRE_FUCINA_ERROR(y.backward(ctx), MissingOutputGradient);

  Tensor grad_output = Tensor::fromSlice(ctx, {"d"}, {2}, {1, 10});
  y.backwardWithGrad(ctx, grad_output);  // shape-checked; read as a value
  std::optional<Tensor> gx = x.grad(ctx);
  REQUIRE(gx.has_value());
  CHECK(vec(gx->dataConst()) == Floats{2, 20});
}

TEST_CASE("shared branch accumulates") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 5});

  Tensor sq = x.mul(ctx, x);     // x feeds the node twice
  Tensor lin = x.scale(ctx, 4);  // second consumer of x
  Tensor both = sq.add(ctx, lin);
  Tensor loss = both.sumAll(ctx);
  loss.backward(ctx);

  // d/dx (x^2 + 4x) = 2x + 4: contributions from every branch summed.
  std::optional<Tensor> gx = x.grad(ctx);
  REQUIRE(gx.has_value());
  CHECK(vec(gx->dataConst()) == Floats{10, 14});
}

TEST_CASE("micro-batch accumulation and zeroGrad") {
  ExecContext ctx;
  Tensor w = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});

  for (int i = 0; i < 2; ++i) {  // one fresh graph per micro-batch
    Tensor y = w.scale(ctx, 3);
    Tensor loss = y.sumAll(ctx);
    loss.backward(ctx);
  }
  std::optional<Tensor> gw = w.grad(ctx);  // 3 + 3: sums across the two passes
  REQUIRE(gw.has_value());
  CHECK(vec(gw->dataConst()) == Floats{6, 6});

  w.zeroGrad();  // training loops reset between optimizer steps
  CHECK_FALSE(w.grad(ctx).has_value());
}

TEST_CASE("noGrad suppresses recording") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});

  fucina::NoGradScope scope = fucina::noGrad();
  CHECK_FALSE(fucina::isGradEnabled());

  Tensor y = x.scale(ctx, 2);  // same op path, but no backward node
  CHECK_FALSE(y.requiresGrad());
  scope.close();
}

// ---------------------------------------------------------------------------------------------
// The gradient model: constants, variables, op results
// ---------------------------------------------------------------------------------------------

TEST_CASE("constants have no gradient state") {
  ExecContext ctx;
  std::vector<Tensor> constants = {
      Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2}),
      Tensor::zeros(ctx, {"d"}, {2}),
      Tensor::ones(ctx, {"d"}, {2}),
      Tensor::full(ctx, {"d"}, {2}, 7),
      Tensor::scalar(ctx, 3),
      Tensor::fromRaw(ctx, raw(ctx, {"d"}, {2}, {4, 5})),
  };
  for (size_t i = 0; i < constants.size(); ++i) {
    INFO("constant #" << i);
    const Tensor& c = constants[i];
    CHECK_FALSE(c.requiresGrad());
    CHECK(c.gradState() == nullptr);
    CHECK_FALSE(c.grad(ctx).has_value());
    CHECK_FALSE(c.gradView(ctx).has_value());
    CHECK_NOTHROW(c.zeroGrad());  // no-op on constants
  }
}

TEST_CASE("variables carry a leaf gradient state and no gradient yet") {
  ExecContext ctx;
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor a = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor b = Tensor::variable(ctx, c);
  for (const Tensor* v : {&a, &b}) {
    CHECK(v->requiresGrad());
    REQUIRE(v->gradState() != nullptr);
    CHECK(v->gradState()->isLeaf());
    CHECK_FALSE(v->gradState()->hasGrad());
    CHECK_FALSE(v->grad(ctx).has_value());
    CHECK(v->toVector() == Floats{1, 2});
  }
  // variable(ctx, value) holds a copy: changing the source afterwards leaves it alone.
  c.data()[0] = 99;
  CHECK(b.toVector() == Floats{1, 2});
}

TEST_CASE("op results record a node only when an operand requires gradients") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {2}, {3, 4});

  Tensor y = x.mul(ctx, c);
  CHECK(y.requiresGrad());
  REQUIRE(y.gradState() != nullptr);
  CHECK_FALSE(y.gradState()->isLeaf());
  REQUIRE(y.gradState()->gradFn() != nullptr);
  CHECK_FALSE(y.gradState()->gradFn()->name().empty());
  // One operand slot per forward operand; the constant's slot is null.
  auto ops = y.gradState()->gradFn()->operands();
  REQUIRE(ops.size() == 2);
  CHECK(ops[0].get() == x.gradState());
  CHECK(ops[1] == nullptr);

  Tensor z = c.mul(ctx, c).scale(ctx, 2);
  CHECK_FALSE(z.requiresGrad());
  CHECK(z.gradState() == nullptr);
  CHECK(z.toVector() == Floats{18, 32});
  CHECK(y.toVector() == Floats{3, 8});  // same values whether recorded or not
}

// ---------------------------------------------------------------------------------------------
// Seeding rules
// ---------------------------------------------------------------------------------------------

TEST_CASE("a {1,1} tensor counts as scalar for the implicit seed") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"a", "b"}, {1, 1}, {3});
  Tensor y = x.scale(ctx, 2);
  REQUIRE(y.shape() == fucina::Extents{1, 1});
  y.backward(ctx);
  CHECK(gradOf(ctx, x) == Floats{2});
}

TEST_CASE("backwardWithGrad replaces a gradient the output already holds") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  Tensor y = x.scale(ctx, 2);
  y.gradState()->setGrad(raw(ctx, {"d"}, {2}, {100, 100}));

  y.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"d"}, {2}, {1, 10}));
  CHECK(gradOf(ctx, x) == Floats{2, 20});  // not 2 * (100 + {1, 10})
  CHECK(gradOf(ctx, y) == Floats{1, 10});
}

TEST_CASE("backwardWithGrad reads grad_output as a value") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  Tensor y = x.scale(ctx, 2);

  SECTION("a variable's own gradient is neither read nor written") {
    Tensor g = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 10});
    g.gradState()->setGrad(raw(ctx, {"d"}, {2}, {7, 7}));
    y.backwardWithGrad(ctx, g);
    CHECK(gradOf(ctx, x) == Floats{2, 20});
    CHECK(gradOf(ctx, g) == Floats{7, 7});
  }
  SECTION("a constant changed afterwards does not change the installed gradient") {
    Tensor g = Tensor::fromSlice(ctx, {"d"}, {2}, {1, 10});
    y.backwardWithGrad(ctx, g);
    g.data()[0] = 99;
    CHECK(gradOf(ctx, y) == Floats{1, 10});
    CHECK(gradOf(ctx, x) == Floats{2, 20});
  }
  SECTION("an op result's graph is not run") {
    Tensor v = Tensor::variableFromSlice(ctx, {"d"}, {2}, {0.5, 5});
    Tensor g = v.scale(ctx, 2);  // {1, 10}, with a graph back to v
    y.backwardWithGrad(ctx, g);
    CHECK(gradOf(ctx, x) == Floats{2, 20});
    CHECK_FALSE(v.grad(ctx).has_value());
    // g's graph was not consumed either: it can still run its own pass.
    g.backwardWithGrad(ctx, Tensor::ones(ctx, {"d"}, {2}));
    CHECK(gradOf(ctx, v) == Floats{2, 2});
  }
}

TEST_CASE("backwardWithGrad rejects a wrongly shaped grad_output with ShapeMismatch") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  Tensor y = x.scale(ctx, 2);

  SECTION("wrong extent, and the message names both shapes") {
    REQUIRE_FUCINA_ERROR(y.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"d"}, {3}, {1, 2, 3})),
                         ShapeMismatch);
    try {
      y.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"d"}, {3}, {1, 2, 3}));
    } catch (const fucina::Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("{d=2}") && Catch::Contains("{d=3}"));
    }
  }
  SECTION("wrong tag") {
    REQUIRE_FUCINA_ERROR(y.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"e"}, {2}, {1, 2})),
                         ShapeMismatch);
  }
  SECTION("wrong rank") {
    REQUIRE_FUCINA_ERROR(
        y.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"d", "e"}, {2, 1}, {1, 2})),
        ShapeMismatch);
  }
  // The rejected seed left no debris: nothing ran, and the same graph runs with a good seed.
  CHECK_FALSE(x.grad(ctx).has_value());
  checkNoPendingState({y});
  y.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"d"}, {2}, {1, 10}));
  CHECK(gradOf(ctx, x) == Floats{2, 20});
}

TEST_CASE("a gradient pre-installed with setGrad is respected as the seed") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});

  SECTION("scalar output: no implicit +1 on top") {
    Tensor loss = x.scale(ctx, 2).sumAll(ctx);
    loss.gradState()->setGrad(Tensor::scalar(ctx, 5).value());
    loss.backward(ctx);
    CHECK(gradOf(ctx, x) == Floats{10, 10});
    CHECK(gradOf(ctx, loss) == Floats{5});
  }
  SECTION("non-scalar output: no MissingOutputGradient") {
    Tensor y = x.scale(ctx, 2);
    y.gradState()->setGrad(raw(ctx, {"d"}, {2}, {1, 10}));
    y.backward(ctx);
    CHECK(gradOf(ctx, x) == Floats{2, 20});
  }
}

TEST_CASE("multi-output pass: a scalar output that is an ancestor of another adds its own seed") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor s = x.sumAll(ctx);    // output 1
  Tensor t = s.scale(ctx, 3);  // output 2, computed from output 1

  // s receives 3 from t's backward and still accumulates its own implicit seed 1.
  SECTION("descendant listed first") {
    std::vector<Tensor> outputs = {t, s};
    fucina::ag::backwardGrad(ctx, outputs);
  }
  SECTION("ancestor listed first") {
    std::vector<Tensor> outputs = {s, t};
    fucina::ag::backwardGrad(ctx, outputs);
  }
  SECTION("serial engine") {
    std::vector<Tensor> outputs = {t, s};
    fucina::ag::backwardGradSerial(ctx, outputs);
  }
  CHECK(gradOf(ctx, s) == Floats{4});
  CHECK(gradOf(ctx, x) == Floats{4, 4});
  checkNoPendingState({t, s});
}

TEST_CASE("NoGradientGraph on a tensor without gradient state") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor seed = Tensor::ones(ctx, {"d"}, {2});

  std::vector<Tensor> graphless = {c, c.sumAll(ctx), x.detach(ctx), Tensor::scalar(ctx, 1)};
  {
    fucina::NoGradScope ng = fucina::noGrad();
    graphless.push_back(x.sumAll(ctx));
  }
  for (size_t i = 0; i < graphless.size(); ++i) {
    INFO("graphless tensor #" << i);
    CHECK_FUCINA_ERROR(graphless[i].backward(ctx), NoGradientGraph);
  }
  CHECK_FUCINA_ERROR(c.backwardWithGrad(ctx, seed), NoGradientGraph);
  CHECK_FALSE(x.grad(ctx).has_value());
}

TEST_CASE("failed output seeding leaves the graph re-runnable") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});

  SECTION("single output") {
    Tensor h = x.mul(ctx, x);
    Tensor y = h.scale(ctx, 2);  // non-scalar, no gradient: seeding fails
    REQUIRE_FUCINA_ERROR(y.backward(ctx), MissingOutputGradient);
    checkNoPendingState({y});
    CHECK_FALSE(x.grad(ctx).has_value());
    CHECK_FALSE(h.grad(ctx).has_value());
    // Not consumed by the failed attempt: the same graph now runs and gives exact values.
    y.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"d"}, {2}, {1, 10}));
    CHECK(gradOf(ctx, x) == Floats{12, 160});  // 4x * seed
  }
  SECTION("multi-output: one bad output fails the whole pass before anything runs") {
    Tensor loss = x.sumAll(ctx);  // scalar: fine
    Tensor y = x.scale(ctx, 2);   // non-scalar, unseeded
    std::vector<Tensor> outputs = {loss, y};
    REQUIRE_FUCINA_ERROR(fucina::ag::backwardGrad(ctx, outputs), MissingOutputGradient);
    checkNoPendingState({loss, y});
    CHECK_FALSE(x.grad(ctx).has_value());

    y.gradState()->setGrad(raw(ctx, {"d"}, {2}, {1, 10}));
    fucina::ag::backwardGrad(ctx, outputs);
    CHECK(gradOf(ctx, x) == Floats{3, 21});  // 1 from loss + 2 * seed from y
  }
}

TEST_CASE("gradients stay on interior results after a completed pass") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  Tensor y = x.scale(ctx, 2);
  Tensor loss = y.sumAll(ctx);
  loss.backward(ctx);
  CHECK(gradOf(ctx, y) == Floats{1, 1});
  CHECK(gradOf(ctx, loss) == Floats{1});
  CHECK(gradOf(ctx, x) == Floats{2, 2});
}

TEST_CASE("a node consumed by several branches runs its VJP once with the summed gradient") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  LambdaRecord* rec = nullptr;
  Floats seen_gy;
  Tensor h = makeNode(
      ctx, x.value().clone(ctx), {x},
      [&seen_gy](ExecContext& c, const RawTensor& gy, std::span<const bool> needs,
                 std::span<std::optional<RawTensor>> out) {
        seen_gy = gy.toVector();
        if (needs[0]) out[0] = gy.clone(c);
      },
      0, &rec);
  Tensor a = h.scale(ctx, 2);
  Tensor b = h.scale(ctx, 3);
  Tensor loss = a.add(ctx, b).sumAll(ctx);
  loss.backward(ctx);
  CHECK(rec->calls.load() == 1);
  CHECK(seen_gy == Floats{5, 5});
  CHECK(gradOf(ctx, x) == Floats{5, 5});
}

// ---------------------------------------------------------------------------------------------
// One backward per graph
// ---------------------------------------------------------------------------------------------

TEST_CASE("a second backward over the same graph fails with BackwardAlreadyRun") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {3}, {10, 20, 30});

  SECTION("backward twice") {
    Tensor loss = x.mul(ctx, c).sumAll(ctx);
    loss.backward(ctx);
    REQUIRE_FUCINA_ERROR(loss.backward(ctx), BackwardAlreadyRun);
    CHECK(gradOf(ctx, x) == Floats{10, 20, 30});  // nothing compounded
    checkNoPendingState({loss});
  }
  SECTION("backwardWithGrad twice") {
    Tensor y = x.mul(ctx, c);
    Tensor seed = Tensor::ones(ctx, {"d"}, {3});
    y.backwardWithGrad(ctx, seed);
    REQUIRE_FUCINA_ERROR(y.backwardWithGrad(ctx, seed), BackwardAlreadyRun);
    CHECK(gradOf(ctx, x) == Floats{10, 20, 30});
  }
  SECTION("backward after backwardWithGrad") {
    Tensor loss = x.mul(ctx, c).sumAll(ctx);
    loss.backwardWithGrad(ctx, Tensor::scalar(ctx, 1));
    REQUIRE_FUCINA_ERROR(loss.backward(ctx), BackwardAlreadyRun);
    CHECK(gradOf(ctx, x) == Floats{10, 20, 30});
  }
  SECTION("multi-output pass including a consumed output") {
    Tensor loss = x.mul(ctx, c).sumAll(ctx);
    loss.backward(ctx);
    Tensor other = x.sumAll(ctx);  // fresh graph
    std::vector<Tensor> outputs = {other, loss};
    REQUIRE_FUCINA_ERROR(fucina::ag::backwardGrad(ctx, outputs), BackwardAlreadyRun);
    CHECK(gradOf(ctx, x) == Floats{10, 20, 30});  // the fresh output did not run either
    checkNoPendingState({other, loss});
  }
}

// Note [Interior consumption]: the guard reaches past the outputs into the graph.
TEST_CASE("a pass reaching an interior state an earlier pass consumed fails with BackwardAlreadyRun") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {0.5f, -1});
  Tensor h = x.tanh(ctx);
  Tensor first = h.scale(ctx, 1).sumAll(ctx);
  first.backward(ctx);
  const Floats dh = gradOf(ctx, x);  // 1 - tanh^2, once

  Tensor second = h.scale(ctx, 2).sumAll(ctx);  // a fresh output over the spent h
  try {
    second.backward(ctx);
    FAIL("the second pass should have been refused");
  } catch (const fucina::Error& e) {
    CHECK(e.code() == ErrorCode::BackwardAlreadyRun);
    CHECK_THAT(e.what(), Catch::Contains("tanh"));
  }
  CHECK(gradOf(ctx, x) == dh);  // nothing compounded (was 4 * dh: 1 + 1 + 2 shares)
  CHECK_FALSE(second.grad(ctx).has_value());  // refused before its seed was made
  checkNoPendingState({first, second});

  SECTION("the refused output is not consumed: its own graph stays untouched") {
    Tensor fresh = x.tanh(ctx).scale(ctx, 2).sumAll(ctx);
    x.zeroGrad();
    fresh.backward(ctx);
    Floats twice = dh;
    for (float& v : twice) v *= 2;
    CHECK(gradOf(ctx, x) == twice);
  }
  SECTION("backwardWithGrad on the spent interior state itself") {
    REQUIRE_FUCINA_ERROR(h.backwardWithGrad(ctx, Tensor::ones(ctx, {"d"}, {2})), BackwardAlreadyRun);
    CHECK(gradOf(ctx, x) == dh);
  }
  SECTION("a multi-output pass with one output over the spent graph runs nothing") {
    Tensor y = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
    Tensor other = y.mul(ctx, y).sumAll(ctx);
    std::vector<Tensor> outputs = {other, second};
    REQUIRE_FUCINA_ERROR(fucina::ag::backwardGrad(ctx, outputs), BackwardAlreadyRun);
    CHECK_FALSE(y.grad(ctx).has_value());
    checkNoPendingState({other, second});
    other.backward(ctx);  // not consumed by the refused pass
    CHECK(gradOf(ctx, y) == Floats{6, 8});
  }
}

TEST_CASE("a failed pass consumes no interior state") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  Tensor h = x.scale(ctx, 10);
  LambdaRecord* rec = nullptr;
  Tensor failing = throwOnceIdentity(ctx, h.sumAll(ctx), &rec);
  REQUIRE_THROWS(failing.backward(ctx));
  // h was claimed by the failed pass and released unconsumed: another graph over it runs.
  Tensor other = h.scale(ctx, 2).sumAll(ctx);
  other.backward(ctx);
  CHECK(gradOf(ctx, x) == Floats{20, 20, 20});
  REQUIRE_FUCINA_ERROR(failing.backward(ctx), BackwardAlreadyRun);  // now h is spent
}

TEST_CASE("passes from several threads over one interior state: one runs, the others are refused",
          "[threads]") {
  // Regression: four threads sharing h each ran a pass; h's gradient compounded across passes
  // and raced (x's gradient ~87x too large).
  for (int round = 0; round < 20; ++round) {
    ExecContext ctx(ExecOptions{.threads = 2});
    Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {4}, {0.25f, -0.5f, 1, 2});
    Tensor h = x.tanh(ctx);
    constexpr int kThreads = 4;
    std::vector<Tensor> losses;
    for (int t = 0; t < kThreads; ++t) losses.push_back(h.scale(ctx, float(t + 1)).sumAll(ctx));
    std::atomic<int> ready{0}, won{0}, refused{0}, winner{-1};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        try {
          losses[t].backward(ctx);
          won.fetch_add(1);
          winner.store(t);
        } catch (const fucina::Error& e) {
          if (e.code() == ErrorCode::BackwardAlreadyRun) refused.fetch_add(1);
        }
      });
    }
    for (auto& th : threads) th.join();
    REQUIRE(won.load() == 1);
    REQUIRE(refused.load() == kThreads - 1);
    const Floats xs = {0.25f, -0.5f, 1, 2};
    const Floats g = gradOf(ctx, x);
    for (size_t i = 0; i < xs.size(); ++i) {
      const float th = std::tanh(xs[i]);
      CHECK(g[i] == Approx(float(winner.load() + 1) * (1 - th * th)).epsilon(1e-6));
    }
    checkNoPendingState(losses);
  }
}

TEST_CASE("a bare variable output has no graph to consume") {
  ExecContext ctx;

  SECTION("scalar: repeated backward never throws; a held gradient is respected as-is") {
    Tensor v = Tensor::variableFromSlice(ctx, {}, {}, {5});
    v.backward(ctx);
    CHECK(gradOf(ctx, v) == Floats{1});
    REQUIRE_NOTHROW(v.backward(ctx));
    // An output that already holds a gradient gets no implicit +1 on top.
    CHECK(gradOf(ctx, v) == Floats{1});
    v.zeroGrad();
    v.backward(ctx);
    CHECK(gradOf(ctx, v) == Floats{1});
  }
  SECTION("non-scalar: each backwardWithGrad replaces the gradient") {
    Tensor v = Tensor::variableFromSlice(ctx, {"d"}, {2}, {5, 6});
    REQUIRE_FUCINA_ERROR(v.backward(ctx), MissingOutputGradient);
    v.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2}));
    CHECK(gradOf(ctx, v) == Floats{1, 2});
    v.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"d"}, {2}, {3, 4}));
    CHECK(gradOf(ctx, v) == Floats{3, 4});
  }
}

TEST_CASE("zeroGrad resets gradients, not the consumed graph") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor loss = x.mul(ctx, x).sumAll(ctx);
  loss.backward(ctx);
  CHECK(gradOf(ctx, x) == Floats{2, 4});

  x.zeroGrad();
  loss.zeroGrad();
  CHECK_FALSE(loss.grad(ctx).has_value());
  REQUIRE_FUCINA_ERROR(loss.backward(ctx), BackwardAlreadyRun);
  CHECK_FALSE(x.grad(ctx).has_value());  // the refused pass delivered nothing
}

// ---------------------------------------------------------------------------------------------
// Error exits: failing VJPs, missing and misshaped gradients
// ---------------------------------------------------------------------------------------------

TEST_CASE("a VJP failing mid-pass leaves the graph re-runnable") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {3}, {10, 20, 30});
  Tensor a = x.mul(ctx, c);
  Tensor s = a.sumAll(ctx);
  LambdaRecord* rec = nullptr;
  Tensor out = throwOnceIdentity(ctx, s, &rec);  // the pass's first VJP throws

  try {
    out.backward(ctx);
    FAIL("backward should have rethrown the record's error");
  } catch (const fucina::Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("deliberate failure in test record"));
  }
  CHECK(rec->calls.load() == 1);
  checkNoPendingState({out});  // counters of every state below the failure released
  CHECK_FALSE(x.grad(ctx).has_value());
  CHECK_FALSE(a.grad(ctx).has_value());

  // Not consumed: the same graph runs again, completely, with exact gradients.
  out.backward(ctx);
  CHECK(rec->calls.load() == 2);
  CHECK(gradOf(ctx, x) == Floats{10, 20, 30});
  checkNoPendingState({out});
  REQUIRE_FUCINA_ERROR(out.backward(ctx), BackwardAlreadyRun);  // now it is consumed
}

TEST_CASE("a VJP failure keeps the contributions delivered before it") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor z = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 5});
  LambdaRecord* rec = nullptr;
  Tensor f = throwOnceIdentity(ctx, z, &rec);  // runs only after g's VJP delivered to x and f
  Tensor g = f.mul(ctx, x);
  Tensor loss = g.sumAll(ctx);

  REQUIRE_FUCINA_ERROR(loss.backward(ctx), InvalidArgument);
  checkNoPendingState({loss});
  CHECK(gradOf(ctx, x) == Floats{3, 5});  // g's VJP delivered x += 1 * z before f failed
  CHECK(gradOf(ctx, f) == Floats{1, 2});  // and f += 1 * x
  CHECK_FALSE(z.grad(ctx).has_value());

  // Re-runnable, but values are not restored: the retry's contributions add to the
  // interior gradients left by the failed pass. loss keeps its gradient 1, g: 1 + 1 = 2,
  // x += 2 * z, f: {1,2} + 2 * x = {3,6}, z += f. The spec's advice: zero the leaves first.
  x.zeroGrad();
  loss.backward(ctx);
  CHECK(gradOf(ctx, x) == Floats{6, 10});
  CHECK(gradOf(ctx, z) == Floats{3, 6});
  checkNoPendingState({loss});
}

TEST_CASE("a failing pass drains in-flight tasks and reports the failing record's error") {
  ExecContext ctx(ExecOptions{.threads = 2});
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {4}, {1, 2, 3, 4});
  std::atomic<int> slow_started{0}, slow_finished{0};
  // All branches claim enough work to be run on the pool when they are ready together. The
  // failing one waits (bounded) until a slow sibling is running, so that the failure happens
  // while another record is in flight.
  std::vector<Tensor> branches;
  branches.push_back(makeNode(
      ctx, x.value().clone(ctx), {x},
      [&](ExecContext&, const RawTensor&, std::span<const bool>,
          std::span<std::optional<RawTensor>>) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        while (slow_started.load() == 0 && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        throw fucina::Error(ErrorCode::IndexOutOfRange, "failing branch");
      },
      fucina::kBackwardAsyncWorkThreshold));
  for (int i = 0; i < 3; ++i) {
    branches.push_back(makeNode(
        ctx, x.value().clone(ctx), {x},
        [&](ExecContext& c, const RawTensor& gy, std::span<const bool> needs,
            std::span<std::optional<RawTensor>> out) {
          slow_started.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          if (needs[0]) out[0] = gy.clone(c);
          slow_finished.fetch_add(1);
        },
        fucina::kBackwardAsyncWorkThreshold));
  }
  Tensor loss = sumOfAll(ctx, branches);

  REQUIRE_THROWS_MATCHES(loss.backward(ctx), fucina::Error,
                         test::HasCode(ErrorCode::IndexOutOfRange));
  // Every branch that started had finished by the time backward returned.
  CHECK(slow_started.load() == slow_finished.load());
  checkNoPendingState({loss});
}

TEST_CASE("MissingBackwardGradient when a record leaves a required slot empty") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor y = makeNode(ctx, x.value().clone(ctx), {x},
                      [](ExecContext&, const RawTensor&, std::span<const bool>,
                         std::span<std::optional<RawTensor>>) { /* writes nothing */ });
  Tensor loss = y.sumAll(ctx);
  try {
    loss.backward(ctx);
    FAIL("backward should have failed");
  } catch (const fucina::Error& e) {
    CHECK(e.code() == ErrorCode::MissingBackwardGradient);
    CHECK_THAT(e.what(), Catch::Contains("TestLambdaRecord"));  // names the op
  }
  CHECK_FALSE(x.grad(ctx).has_value());
  checkNoPendingState({loss});
}

TEST_CASE("a record returning a wrongly shaped gradient fails with ShapeMismatch") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  RawTensor bad;
  SECTION("wrong extent") { bad = raw(ctx, {"d"}, {3}, {1, 1, 1}); }
  SECTION("wrong tag") { bad = raw(ctx, {"e"}, {2}, {1, 1}); }
  SECTION("wrong rank") { bad = raw(ctx, {"d", "e"}, {2, 1}, {1, 1}); }
  Tensor y = makeNode(ctx, x.value().clone(ctx), {x},
                      [bad](ExecContext&, const RawTensor&, std::span<const bool> needs,
                            std::span<std::optional<RawTensor>> out) {
                        if (needs[0]) out[0] = bad;
                      });
  Tensor loss = y.sumAll(ctx);
  REQUIRE_FUCINA_ERROR(loss.backward(ctx), ShapeMismatch);
  CHECK_FALSE(x.grad(ctx).has_value());
  checkNoPendingState({loss});
}

TEST_CASE("needs_grad is false exactly for constant operands") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor c = Tensor::fromSlice(ctx, {"d"}, {2}, {3, 4});
  std::vector<bool> seen;
  Tensor y = makeNode(ctx, x.value().clone(ctx), {c, x, c},
                      [&seen](ExecContext& cx, const RawTensor& gy, std::span<const bool> needs,
                              std::span<std::optional<RawTensor>> out) {
                        seen.assign(needs.begin(), needs.end());
                        REQUIRE(out.size() == 3);
                        if (needs[1]) out[1] = gy.clone(cx);
                      });
  y.sumAll(ctx).backward(ctx);
  CHECK(seen == std::vector<bool>{false, true, false});
  CHECK(gradOf(ctx, x) == Floats{1, 1});
  CHECK_FALSE(c.grad(ctx).has_value());
}

// ---------------------------------------------------------------------------------------------
// Accumulation and copy-on-write
// ---------------------------------------------------------------------------------------------

TEST_CASE("a VJP may hand back views of gy without aliasing accumulators") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor w = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  // Returns gy itself (a refcounted view, no copy) for both operands.
  Tensor node = makeNode(ctx, x.value().clone(ctx), {x, w},
                         [](ExecContext&, const RawTensor& gy, std::span<const bool> needs,
                            std::span<std::optional<RawTensor>> out) {
                           for (size_t i = 0; i < needs.size(); ++i)
                             if (needs[i]) out[i] = gy;
                         });
  node.sumAll(ctx).backward(ctx);
  CHECK(gradOf(ctx, x) == Floats{1, 1});
  CHECK(gradOf(ctx, w) == Floats{1, 1});

  // A second micro-batch adds to x only; w and node must not see it.
  x.scale(ctx, 5).sumAll(ctx).backward(ctx);
  CHECK(gradOf(ctx, x) == Floats{6, 6});
  CHECK(gradOf(ctx, w) == Floats{1, 1});
  CHECK(gradOf(ctx, node) == Floats{1, 1});
}

TEST_CASE("copy-on-write: a gradView taken before another pass keeps the stale value") {
  ExecContext ctx;
  Tensor w = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  w.scale(ctx, 3).sumAll(ctx).backward(ctx);

  std::optional<Tensor> view = w.gradView(ctx);
  REQUIRE(view.has_value());
  CHECK_FALSE(view->requiresGrad());
  CHECK(view->toVector() == Floats{3, 3});
  // The view aliases the accumulator as of now.
  CHECK(view->value().storage() == w.gradState()->gradView()->storage());

  w.scale(ctx, 3).sumAll(ctx).backward(ctx);
  CHECK(view->toVector() == Floats{3, 3});  // stale, unmodified
  CHECK(gradOf(ctx, w) == Floats{6, 6});    // grad() sees the new sum
}

TEST_CASE("placed gradients: select, narrow and slice add into their slice of one buffer") {
  // Note [Placed gradients]: q, k and v selected from one fused projection leave one gradient of
  // the projection's size, each slice written into it, not three zero-padded copies summed.
  ExecContext ctx;
  const int64_t t = 64, h = 32, slice_bytes = t * h * int64_t{sizeof(float)};
  Tensor x = Tensor::variable(ctx, Tensor::normal(ctx, {"t", "part", "h"}, {t, 3, h}, 0, 1, 7));
  auto backwardPeak = [&](const Tensor& loss) {
    const size_t before = ctx.memory().live_bytes;
    ctx.resetPeak();
    loss.backward(ctx);
    return static_cast<int64_t>(ctx.memory().peak_bytes - before);
  };
  const Tensor q = x.select(ctx, "part", 0), k = x.select(ctx, "part", 1), v = x.select(ctx, "part", 2);
  // sumAll's gradient (a slice's size) reaches q, k and v through add as views of one buffer;
  // besides it the pass makes x's gradient alone.
  CHECK(backwardPeak(q.add(ctx, k).add(ctx, v).sumAll(ctx)) <= 4 * slice_bytes + 64);
  std::vector<float> want(static_cast<size_t>(t * 3 * h), 1.0f);
  CHECK(gradOf(ctx, x) == want);

  // The slices overlap, miss parts of the operand, and meet whole gradients before and after.
  x.zeroGrad();
  const Tensor r = Tensor::normal(ctx, {"t", "part", "h"}, {t, 3, h}, 0, 1, 8);
  x.narrow(ctx, "part", 1, 2).sumAll(ctx)
      .add(ctx, x.mul(ctx, r).sumAll(ctx))
      .add(ctx, x.slice(ctx, "h", 3, 9).scale(ctx, 4).sumAll(ctx))
      .add(ctx, x.select(ctx, "t", t - 1).scale(ctx, 5).sumAll(ctx))
      .add(ctx, x.narrow(ctx, "t", 0, 0).sumAll(ctx))
      .backward(ctx);
  const std::vector<float> rv = r.toVector();
  for (int64_t i = 0; i < t; ++i)
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t j = 0; j < h; ++j) {
        const size_t e = static_cast<size_t>((i * 3 + p) * h + j);
        want[e] = (p >= 1 ? 1.0f : 0.0f) + rv[e] + (j >= 3 && j < 9 ? 4.0f : 0.0f) + (i == t - 1 ? 5.0f : 0.0f);
      }
  const std::vector<float> got = gradOf(ctx, x);
  REQUIRE(got.size() == want.size());
  for (size_t e = 0; e < want.size(); ++e) CHECK(got[e] == Approx(want[e]).epsilon(1e-6));

}

TEST_CASE("a shared accumulator is added into a private contribution, not copied first") {
  ExecContext ctx;
  Tensor x = Tensor::variable(ctx, Tensor::normal(ctx, {"a", "b"}, {256, 64}, 0, 1, 3));
  const Tensor r = Tensor::normal(ctx, {"a", "b"}, {256, 64}, 0, 1, 4);
  const int64_t bytes = 256 * 64 * int64_t{sizeof(float)};
  // add's VJP hands x a view of the gradient its result keeps (shared), then mul's VJP a fresh
  // one: the sum lands in mul's buffer, the view never copied.
  const Tensor loss = x.add(ctx, x.mul(ctx, r)).sumAll(ctx);
  const size_t before = ctx.memory().live_bytes;
  ctx.resetPeak();
  loss.backward(ctx);
  CHECK(static_cast<int64_t>(ctx.memory().peak_bytes - before) <= 2 * bytes + 64);  // sumAll's and mul's
  const std::vector<float> rv = r.toVector(), got = gradOf(ctx, x);
  for (size_t e = 0; e < rv.size(); ++e) CHECK(got[e] == 1.0f + rv[e]);
  // A gradView held across a pass keeps its value: the new sum lands in another buffer.
  std::optional<Tensor> view = x.gradView(ctx);
  x.add(ctx, x.mul(ctx, r)).sumAll(ctx).backward(ctx);
  CHECK(view->toVector() == got);
  const std::vector<float> twice = gradOf(ctx, x);
  for (size_t e = 0; e < rv.size(); ++e) CHECK(twice[e] == got[e] + 1.0f + rv[e]);  // in arrival order
}

TEST_CASE("grad() returns a deep copy") {
  ExecContext ctx;
  Tensor w = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  w.scale(ctx, 3).sumAll(ctx).backward(ctx);

  std::optional<Tensor> g = w.grad(ctx);
  REQUIRE(g.has_value());
  CHECK_FALSE(g->requiresGrad());
  CHECK(g->value().storage() != w.gradState()->gradView()->storage());
  g->data()[0] = 100;  // a constant: mutable
  CHECK(g->toVector() == Floats{100, 3});
  CHECK(gradOf(ctx, w) == Floats{3, 3});  // the accumulator is untouched

  // A later pass does not reach the copy either.
  w.scale(ctx, 3).sumAll(ctx).backward(ctx);
  CHECK(g->toVector() == Floats{100, 3});
}

// ---------------------------------------------------------------------------------------------
// Values: detach, data(), item()
// ---------------------------------------------------------------------------------------------

TEST_CASE("detach shares storage and has no gradient state") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  Tensor y = x.scale(ctx, 2);
  const size_t bytes_before = ctx.memory().live_bytes;

  Tensor dx = x.detach(ctx);
  Tensor dy = y.detach(ctx);
  CHECK(ctx.memory().live_bytes == bytes_before);  // views, no new storage
  for (const Tensor* d : {&dx, &dy}) {
    CHECK_FALSE(d->requiresGrad());
    CHECK(d->gradState() == nullptr);
  }
  CHECK(dx.value().storage() == x.value().storage());
  CHECK(dy.value().storage() == y.value().storage());
  CHECK(dy.toVector() == Floats{2, 4, 6});

  // The graph is cut: ops on the detached value do not reach x.
  Tensor loss = dx.mul(ctx, y).sumAll(ctx);
  loss.backward(ctx);
  CHECK(gradOf(ctx, x) == Floats{2, 4, 6});  // only through y = 2x: d/dx sum(dx * 2x) = 2 dx

  // Same storage: a write through the detached constant is visible in the variable.
  dx.data()[0] = 42;
  CHECK(x.toVector() == Floats{42, 2, 3});
}

TEST_CASE("data() refuses mutable access on grad-carrying tensors") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor y = x.scale(ctx, 2);
  REQUIRE_FUCINA_ERROR(x.data(), MutableDataRequiresNoGrad);
  REQUIRE_FUCINA_ERROR(y.data(), MutableDataRequiresNoGrad);
  // Read access is always allowed.
  CHECK(vec(x.dataConst()) == Floats{1, 2});
  CHECK(vec(y.dataConst()) == Floats{2, 4});
  CHECK(x.toVector() == Floats{1, 2});

  Tensor c = Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2});
  std::span<float> d = c.data();
  REQUIRE(d.size() == 2);
  d[1] = 7;
  CHECK(c.toVector() == Floats{1, 7});
}

TEST_CASE("item() reads one-element tensors") {
  ExecContext ctx;
  CHECK(Tensor::scalar(ctx, 2.5).item() == 2.5f);
  CHECK(Tensor::fromSlice(ctx, {"d"}, {1}, {-3}).item() == -3.0f);
  CHECK(Tensor::fromSlice(ctx, {"a", "b"}, {1, 1}, {4}).item() == 4.0f);
  Tensor v = Tensor::variableFromSlice(ctx, {"d"}, {1}, {6});
  CHECK(v.item() == 6.0f);              // allowed on variables
  CHECK(v.scale(ctx, 2).item() == 12.0f);
}

TEST_CASE("item() rejects multi-element tensors with InvalidArgument") {
  ExecContext ctx;
  REQUIRE_FUCINA_ERROR(Tensor::fromSlice(ctx, {"d"}, {2}, {1, 2}).item(), InvalidArgument);
  REQUIRE_FUCINA_ERROR(Tensor::zeros(ctx, {"d"}, {0}).item(), InvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// noGrad scopes
// ---------------------------------------------------------------------------------------------

TEST_CASE("noGrad scopes nest") {
  REQUIRE(fucina::isGradEnabled());
  fucina::NoGradScope outer = fucina::noGrad();
  {
    fucina::NoGradScope inner = fucina::noGrad();
    CHECK_FALSE(fucina::isGradEnabled());
    inner.close();
    CHECK_FALSE(fucina::isGradEnabled());  // outer still open
  }
  CHECK_FALSE(fucina::isGradEnabled());
  outer.close();
  CHECK(fucina::isGradEnabled());
}

TEST_CASE("NoGradScope close is idempotent") {
  REQUIRE(fucina::isGradEnabled());
  {
    fucina::NoGradScope s = fucina::noGrad();
    s.close();
    s.close();  // no second decrement
    CHECK(fucina::isGradEnabled());
  }  // the destructor's close is a no-op too
  CHECK(fucina::isGradEnabled());
  {
    // A depth driven below zero would make this scope leave gradients enabled.
    fucina::NoGradScope s = fucina::noGrad();
    CHECK_FALSE(fucina::isGradEnabled());
  }
  CHECK(fucina::isGradEnabled());
  {
    fucina::NoGradScope a = fucina::noGrad();
    fucina::NoGradScope b = std::move(a);  // the moved-from handle no longer closes
    a.close();
    CHECK_FALSE(fucina::isGradEnabled());
    b.close();
    CHECK(fucina::isGradEnabled());
  }
  CHECK(fucina::isGradEnabled());
}

TEST_CASE("noGrad is per thread") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  fucina::NoGradScope s = fucina::noGrad();
  REQUIRE_FALSE(fucina::isGradEnabled());

  bool other_enabled = false, other_records = false, other_inner_disabled = false;
  std::thread t([&] {
    other_enabled = fucina::isGradEnabled();
    other_records = x.scale(ctx, 2).requiresGrad();
    fucina::NoGradScope mine = fucina::noGrad();
    other_inner_disabled = !fucina::isGradEnabled();
  });
  t.join();
  CHECK(other_enabled);
  CHECK(other_records);
  CHECK(other_inner_disabled);
  CHECK_FALSE(fucina::isGradEnabled());  // the other thread's scope did not touch ours
  CHECK_FALSE(x.scale(ctx, 2).requiresGrad());
  s.close();
  CHECK(fucina::isGradEnabled());
}

TEST_CASE("ops record again once the noGrad scope closes") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor inside;
  {
    fucina::NoGradScope s = fucina::noGrad();
    inside = x.mul(ctx, x);
  }
  CHECK_FALSE(inside.requiresGrad());
  CHECK(inside.toVector() == Floats{1, 4});  // identical forward values
  Tensor outside = x.mul(ctx, x);
  CHECK(outside.requiresGrad());
  CHECK(outside.toVector() == Floats{1, 4});
}

TEST_CASE("variables made inside noGrad are still variables") {
  ExecContext ctx;
  fucina::NoGradScope s = fucina::noGrad();
  Tensor v = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  CHECK(v.requiresGrad());
  s.close();
  v.scale(ctx, 2).sumAll(ctx).backward(ctx);
  CHECK(gradOf(ctx, v) == Floats{2, 2});
}

// ---------------------------------------------------------------------------------------------
// Parallel backward and thread safety
// ---------------------------------------------------------------------------------------------

namespace {

// loss = sum_k sum_i ((k+1) x_i) * w_i * x_i over 8 branches, each starting with a record that
// claims enough work to be run on the pool. All values are small integers, so every summation
// order gives the same floats: dx = 72 x w, dw = 36 x^2.
struct WideGrads {
  Floats dx, dw;
};

WideGrads wideBranches(ExecContext& ctx, bool serial) {
  Floats xs(257), ws(257);
  for (size_t i = 0; i < xs.size(); ++i) {
    xs[i] = static_cast<float>(i % 5) + 1;
    ws[i] = static_cast<float>(i % 3) - 1;
  }
  Tensor x = Tensor::variableFromSlice(ctx, {"i"}, {257}, xs);
  Tensor w = Tensor::variableFromSlice(ctx, {"i"}, {257}, ws);
  Tensor loss;
  for (int k = 0; k < 8; ++k) {
    const auto factor = static_cast<float>(k + 1);
    Tensor h = makeNode(ctx, scaledCopy(ctx, x.value(), factor), {x}, test::scaleVjp(factor),
                        fucina::kBackwardAsyncWorkThreshold);
    Tensor branch = h.mul(ctx, w).mul(ctx, x).sumAll(ctx);
    loss = k == 0 ? branch : loss.add(ctx, branch);
  }
  std::vector<Tensor> outputs = {loss};
  if (serial)
    fucina::ag::backwardGradSerial(ctx, outputs);
  else
    fucina::ag::backwardGrad(ctx, outputs);
  checkNoPendingState({loss});
  Floats dx_expected(257), dw_expected(257);
  for (size_t i = 0; i < xs.size(); ++i) {
    dx_expected[i] = 72 * xs[i] * ws[i];
    dw_expected[i] = 36 * xs[i] * xs[i];
  }
  WideGrads g{gradOf(ctx, x), gradOf(ctx, w)};
  CHECK(g.dx == dx_expected);
  CHECK(g.dw == dw_expected);
  return g;
}

}  // namespace

TEST_CASE("parallel backward gives the same gradients as backwardGradSerial") {
  ExecContext parallel_ctx(ExecOptions{.threads = 2});
  ExecContext serial_ctx(ExecOptions{.threads = 1});
  REQUIRE(parallel_ctx.threads() == 2);
  WideGrads parallel = wideBranches(parallel_ctx, /*serial=*/false);
  WideGrads serial = wideBranches(serial_ctx, /*serial=*/true);
  WideGrads serial_on_pool = wideBranches(parallel_ctx, /*serial=*/true);
  CHECK(parallel.dx == serial.dx);
  CHECK(parallel.dw == serial.dw);
  CHECK(serial_on_pool.dx == serial.dx);
  CHECK(serial_on_pool.dw == serial.dw);
}

TEST_CASE("independent heavy branches run concurrently on the pool") {
  // Two records above the threshold, ready together: each waits (bounded) for the other to
  // start, which only happens when they are in flight at the same time.
  ExecContext ctx(ExecOptions{.threads = 2});
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  std::atomic<int> started{0};
  std::atomic<bool> overlapped{true};
  auto meet = [&](ExecContext& c, const RawTensor& gy, std::span<const bool> needs,
                  std::span<std::optional<RawTensor>> out) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (started.load() < 2) overlapped = false;
    if (needs[0]) out[0] = gy.clone(c);
  };
  std::vector<Tensor> branches;
  for (int i = 0; i < 2; ++i)
    branches.push_back(makeNode(ctx, x.value().clone(ctx), {x}, meet, fucina::kBackwardAsyncWorkThreshold));
  sumOfAll(ctx, branches).backward(ctx);
  CHECK(overlapped.load());
  CHECK(gradOf(ctx, x) == Floats{2, 2});
}

namespace {

// Two independent branches of real heavy records (dot, addDot) over a shared input: their
// records report work above the threshold, so with 2 threads they run concurrently.
struct HeavyGrads {
  Floats dx, dw1, dw2, db;
};

HeavyGrads heavyBranches(ExecContext& ctx, bool serial) {
  const int64_t m = 64, k = 2048, n = 1024;  // 2*m*k*n = 2^28 work units per dot
  Tensor x = Tensor::variableFromSlice(ctx, {"m", "k"}, {m, k}, test::wave(m * k, 1.0f, 0.1f, 0.37f));
  Tensor w1 = Tensor::variableFromSlice(ctx, {"k", "n"}, {k, n}, test::wave(k * n, 0.05f, 0.3f, 0.11f));
  Tensor w2 = Tensor::variableFromSlice(ctx, {"n", "k"}, {n, k}, test::wave(k * n, 0.05f, 0.7f, 0.13f));
  Tensor b = Tensor::variableFromSlice(ctx, {"n"}, {n}, test::wave(n, 0.5f, 0.2f, 0.9f));
  Tensor h1 = x.dot(ctx, w1, "k");
  Tensor h2 = x.addDot(ctx, w2, "k", b);
  for (const Tensor* h : {&h1, &h2})
    CHECK(h->gradState()->gradFn()->estimatedWork() >= fucina::kBackwardAsyncWorkThreshold);
  Tensor loss = h1.tanh(ctx).sumAll(ctx).add(ctx, h2.mul(ctx, h2).sumAll(ctx));
  std::vector<Tensor> outputs = {loss};
  if (serial)
    fucina::ag::backwardGradSerial(ctx, outputs);
  else
    fucina::ag::backwardGrad(ctx, outputs);
  return {gradOf(ctx, x), gradOf(ctx, w1), gradOf(ctx, w2), gradOf(ctx, b)};
}

}  // namespace

TEST_CASE("heavy dot and addDot branches: parallel and serial backward agree bit for bit") {
  ExecContext ctx(ExecOptions{.threads = 2});
  const HeavyGrads parallel = heavyBranches(ctx, /*serial=*/false);
  const HeavyGrads serial = heavyBranches(ctx, /*serial=*/true);
  CHECK(parallel.dx == serial.dx);
  CHECK(parallel.dw1 == serial.dw1);
  CHECK(parallel.dw2 == serial.dw2);
  CHECK(parallel.db == serial.db);
}

TEST_CASE("concurrent accumulation into one leaf is exact") {
  // Many cheap branches, all ready at once, all feeding the same small leaf: the threads spend
  // most of their time accumulating, so an unsynchronized accumulator loses updates.
  ExecContext ctx(ExecOptions{.threads = 4});
  constexpr int kBranches = 256;
  constexpr int64_t kN = 64;
  Tensor x = Tensor::variableFromSlice(ctx, {"i"}, {kN}, Floats(kN, 1.0f));
  for (int round = 0; round < 20; ++round) {
    std::vector<Tensor> branches;
    for (int k = 0; k < kBranches; ++k) {
      const auto factor = static_cast<float>(k % 8 + 1);
      branches.push_back(makeNode(ctx, scaledCopy(ctx, x.value(), factor), {x},
                                  test::scaleVjp(factor), fucina::kBackwardAsyncWorkThreshold));
    }
    Tensor loss = sumOfAll(ctx, branches);  // every branch becomes ready at once
    loss.backward(ctx);
    // 32 branches of each factor 1..8: 32 * 36 per element.
    const Floats g = gradOf(ctx, x);
    const auto exact = std::count(g.begin(), g.end(), 32 * 36.0f);
    INFO("round " << round << ", first element " << g.at(0));
    CHECK(exact == kN);
    checkNoPendingState({loss});
    x.zeroGrad();
  }
}

// ---------------------------------------------------------------------------------------------
// Robustness: deep graphs, memory
// ---------------------------------------------------------------------------------------------

TEST_CASE("deep chains backward and destroy without stack overflow") {
  ExecContext ctx;
  constexpr int kDepth = 100000;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {1}, {0});

  SECTION("backward, then destroy") {
    Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = y.addScalar(ctx, 1);
    CHECK(y.item() == static_cast<float>(kDepth));
    y.backward(ctx);
    CHECK(gradOf(ctx, x) == Floats{1});
    y = Tensor();  // drops the whole chain
    CHECK(x.toVector() == Floats{0});
  }
  SECTION("destroy without backward") {
    Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = y.addScalar(ctx, 1);
    y = Tensor();
    CHECK_FALSE(x.grad(ctx).has_value());
  }
}

TEST_CASE("a graph and its gradients release all their memory") {
  ExecContext ctx;
  const fucina::MemoryStats base = ctx.memory();
  {
    Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {256}, Floats(256, 1.0f));
    Tensor c = Tensor::full(ctx, {"d"}, {256}, 2);
    const size_t after_inputs = ctx.memory().live_bytes;
    {
      Tensor loss = x.mul(ctx, c).mul(ctx, x).sumAll(ctx);
      loss.backward(ctx);
      CHECK(gradOf(ctx, x) == Floats(256, 4.0f));
    }
    // Graph gone; what is left is the inputs plus x's accumulated gradient.
    CHECK(ctx.memory().live_bytes >= after_inputs + 256 * sizeof(float));
    x.zeroGrad();
    CHECK(ctx.memory().live_bytes == after_inputs);
  }
  CHECK(ctx.memory().live_bytes == base.live_bytes);
  CHECK(ctx.memory().live_tensors == base.live_tensors);
}
