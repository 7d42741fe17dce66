// Activation checkpointing: the reference examples, every rule and error, the memory claim
// and bitwise parity with the non-checkpointed graph.
#include "test_helpers.h"

#include <thread>

using fucina::ExecContext;
using fucina::Tensor;
using test::vec;

namespace {

Tensor ckptLayer(ExecContext& ctx, const Tensor& x, const Tensor& w) {
  Tensor z = x.dot(ctx, w, "in");
  return z.tanh(ctx);
}

struct Frozen {
  const Tensor* w;  // constant: never receives grads
  float alpha;
};

Tensor frozenLayer(ExecContext& ctx, Frozen extra, const Tensor& x) {
  Tensor z = x.dot(ctx, *extra.w, "in");
  return z.scale(ctx, extra.alpha);
}

std::vector<float> ramp(size_t n, float lo, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = lo + step * static_cast<float>(i % 17) - 0.01f * static_cast<float>(i % 5);
  return v;
}

// A block mixing dot, elementwise ops, a reduction and dropout.
Tensor mixedBlock(ExecContext& ctx, const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor h = x.dot(ctx, w, "in").add(ctx, b).tanh(ctx).dropout(ctx, 0.25, 1234);
  Tensor s = h.mul(ctx, h).sum(ctx, "out");
  return h.mul(ctx, s).sigmoid(ctx).withTags(ctx, {"batch", "in"});
}

}  // namespace

// ---------------------------------------------------------------- reference examples

TEST_CASE("checkpointed layer backward") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {1, 2}, {1, 2});
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "in"}, {1, 2}, {0.5, -0.25});
  Tensor y = fucina::checkpoint(ctx, ckptLayer, x, w);  // only inputs + this output are retained
  Tensor loss = y.sumAll(ctx);
  loss.backward(ctx);  // block re-runs here to rebuild the subgraph
  // z = 0, tanh'(0) = 1 -> dL/dw = x
  CHECK(test::gradOf(ctx, w) == std::vector<float>{1, 2});
}

TEST_CASE("checkpointWithContext carries frozen state") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {1, 2}, {1, 2});
  Tensor w = Tensor::fromSlice(ctx, {"out", "in"}, {1, 2}, {3, 4});  // frozen weight rides in extra
  Tensor y = fucina::checkpointWithContext(ctx, frozenLayer, Frozen{&w, 0.5f}, x);
  Tensor loss = y.sumAll(ctx);
  loss.backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1.5, 2});  // alpha * w
}

// ---------------------------------------------------------------- rules

TEST_CASE("checkpoint gradients are bitwise identical to the plain graph") {
  for (int threads : {1, 2}) {
    INFO(threads << " threads");
    ExecContext ctx(fucina::ExecOptions{.threads = threads});
    auto make = [&](fucina::Tags t, fucina::Extents s, float lo) {
      return Tensor::variableFromSlice(ctx, t, s, ramp(size_t(fucina::numelOf(s)), lo, 0.07f));
    };
    Tensor x = make({"batch", "in"}, {6, 9}, -0.5f), w = make({"out", "in"}, {9, 9}, -0.4f),
           b = make({"out"}, {9}, -0.1f);
    mixedBlock(ctx, x, w, b).sumAll(ctx).backward(ctx);
    const auto gx = test::gradOf(ctx, x), gw = test::gradOf(ctx, w), gb = test::gradOf(ctx, b);
    for (Tensor* t : {&x, &w, &b}) t->zeroGrad();
    Tensor y = fucina::checkpoint(ctx, mixedBlock, x, w, b);
    CHECK(y.toVector() == mixedBlock(ctx, x, w, b).toVector());
    y.sumAll(ctx).backward(ctx);
    CHECK(test::gradOf(ctx, x) == gx);
    CHECK(test::gradOf(ctx, w) == gw);
    CHECK(test::gradOf(ctx, b) == gb);
  }
}

TEST_CASE("checkpoint holds O(inputs + output) between forward and backward") {
  // A 4-layer block whose intermediates are each 8x its input (width 8x the input's).
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  const int64_t batch = 32, in = 16, hidden = 128;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {batch, in}, ramp(size_t(batch * in), -1, 0.1f));
  Tensor w1 = Tensor::variableFromSlice(ctx, {"h", "in"}, {hidden, in}, ramp(size_t(hidden * in), -0.3f, 0.03f));
  Tensor w2 = Tensor::variableFromSlice(ctx, {"h2", "h"}, {hidden, hidden}, ramp(size_t(hidden * hidden), -0.3f, 0.03f));
  Tensor w3 = Tensor::variableFromSlice(ctx, {"in", "h2"}, {in, hidden}, ramp(size_t(in * hidden), -0.3f, 0.03f));
  auto block = [](ExecContext& c, const Tensor& x, const Tensor& w1, const Tensor& w2, const Tensor& w3) {
    Tensor h = x.dot(c, w1, "in").tanh(c);
    Tensor h2 = h.dot(c, w2, "h").relu(c).mul(c, h.withTags(c, {"batch", "h2"}));
    return h2.dot(c, w3, "h2").sigmoid(c);
  };
  auto heldBytes = [&](bool checkpointed) {
    const size_t before = ctx.memory().live_bytes;
    size_t held;
    {
      Tensor y = checkpointed ? fucina::checkpoint(ctx, block, x, w1, w2, w3) : block(ctx, x, w1, w2, w3);
      held = ctx.memory().live_bytes - before;  // what the graph keeps until backward
      y.sumAll(ctx).backward(ctx);
    }
    return held;
  };
  const size_t plain = heldBytes(false);
  for (Tensor* t : {&x, &w1, &w2, &w3}) t->zeroGrad();
  const size_t ckpt = heldBytes(true);
  INFO("plain graph holds " << plain << " bytes, checkpointed " << ckpt);
  CHECK(ckpt <= size_t(batch * in * 4));  // just the output copy
  CHECK(plain >= 4 * ckpt);
}

TEST_CASE("checkpoint with no grad-requiring input is a plain grad-free forward") {
  ExecContext ctx;
  Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {1, 2}, {1, 2});
  Tensor w = Tensor::fromSlice(ctx, {"out", "in"}, {1, 2}, {0.5, -0.25});
  Tensor y = fucina::checkpoint(ctx, ckptLayer, x, w);
  CHECK_FALSE(y.requiresGrad());
  CHECK(y.toVector() == ckptLayer(ctx, x, w).toVector());
}

TEST_CASE("checkpoint inside noGrad still records its node, and backward under noGrad recomputes") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {1, 2}, {1, 2});
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "in"}, {1, 2}, {0.5, -0.25});
  auto scope = fucina::noGrad();
  Tensor y = fucina::checkpoint(ctx, ckptLayer, x, w);
  CHECK(y.requiresGrad());
  y.backwardWithGrad(ctx, Tensor::fromSlice(ctx, {"batch", "out"}, {1, 1}, {1}));
  CHECK(test::gradOf(ctx, w) == std::vector<float>{1, 2});
  CHECK_FALSE(fucina::isGradEnabled());  // the recompute restored the caller's mode
}

TEST_CASE("checkpoint accepts lambdas with captures and function objects") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {3}, {1, 2, 3});
  const double factor = 3;
  Tensor y = fucina::checkpoint(ctx, [factor](ExecContext& c, const Tensor& t) { return t.mul(c, t).scale(c, factor); }, x);
  y.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{6, 12, 18});
  struct Block {
    Tensor operator()(ExecContext& c, const Tensor& t) const { return t.exp(c); }
  };
  x.zeroGrad();
  fucina::checkpoint(ctx, Block{}, x).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x)[0] == Approx(std::exp(1.0f)));
}

TEST_CASE("checkpointed blocks pass gradcheck") {
  ExecContext ctx(fucina::ExecOptions{.threads = 1});
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {3, 4}, ramp(12, -0.5f, 0.08f));
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "in"}, {4, 4}, ramp(16, -0.4f, 0.05f));
  Tensor b = Tensor::variableFromSlice(ctx, {"out"}, {4}, ramp(4, -0.1f, 0.05f));
  auto loss = [&](ExecContext& c) {
    Tensor h = fucina::checkpoint(c, mixedBlock, x, w, b);
    return fucina::checkpoint(c, [](ExecContext& cc, const Tensor& t) { return t.mul(cc, t).meanAll(cc); }, h);
  };
  const auto r = fucina::gradcheck(ctx, loss, {&x, &w, &b});
  CHECK(r.checked == 12u + 16u + 4u);
}

TEST_CASE("tensors reached through extra never receive gradients") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {1, 2}, {1, 2});
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "in"}, {1, 2}, {3, 4});  // trainable, but in extra
  Tensor y = fucina::checkpointWithContext(ctx, frozenLayer, Frozen{&w, 0.5f}, x);
  y.sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, x) == std::vector<float>{1.5, 2});
  CHECK_FALSE(w.grad(ctx).has_value());
}

TEST_CASE("nested checkpoint recompute fails with NestedCheckpointRecompute") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  auto outer = [](ExecContext& c, const Tensor& t) {
    return fucina::checkpoint(c, [](ExecContext& cc, const Tensor& u) { return u.tanh(cc); }, t).scale(c, 2);
  };
  Tensor loss = fucina::checkpoint(ctx, outer, x).sumAll(ctx);
  REQUIRE_FUCINA_ERROR(loss.backward(ctx), NestedCheckpointRecompute);
  // No deadlock, and checkpointing still works afterwards.
  Tensor ok = fucina::checkpoint(ctx, [](ExecContext& c, const Tensor& t) { return t.tanh(c); }, x).sumAll(ctx);
  ok.backward(ctx);
  CHECK(x.grad(ctx).has_value());
}

TEST_CASE("checkpoint errors: output not differentiable, input without gradient") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"d"}, {2}, {1, 2});
  Tensor u = Tensor::variableFromSlice(ctx, {"d"}, {2}, {3, 4});
  auto constantBlock = [](ExecContext& c, const Tensor&) { return Tensor::ones(c, {"d"}, {2}); };
  Tensor y = fucina::checkpoint(ctx, constantBlock, x);
  REQUIRE_FUCINA_ERROR(y.sumAll(ctx).backward(ctx), CheckpointOutputNotDifferentiable);
  auto firstOnly = [](ExecContext& c, const Tensor& a, const Tensor&) { return a.exp(c); };
  Tensor z = fucina::checkpoint(ctx, firstOnly, x, u);
  REQUIRE_FUCINA_ERROR(z.sumAll(ctx).backward(ctx), CheckpointMissingInputGradient);
}

TEST_CASE("checkpoint recompute works on a multi-threaded context") {
  ExecContext ctx(fucina::ExecOptions{.threads = 4});
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {64, 64}, ramp(64 * 64, -1, 0.1f));
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "in"}, {64, 64}, ramp(64 * 64, -0.3f, 0.04f));
  Tensor plain = ckptLayer(ctx, x, w).sumAll(ctx);
  plain.backward(ctx);
  const auto gw = test::gradOf(ctx, w);
  w.zeroGrad();
  x.zeroGrad();
  fucina::checkpoint(ctx, ckptLayer, x, w).sumAll(ctx).backward(ctx);
  CHECK(test::gradOf(ctx, w) == gw);
}

TEST_CASE("a 4-layer MLP trains to the same loss, to the bit, with every layer checkpointed") {
  auto train = [](bool checkpointed) {
    ExecContext ctx(fucina::ExecOptions{.threads = 1});
    const int64_t batch = 16, width = 12;
    Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {batch, width}, ramp(size_t(batch * width), -1, 0.12f));
    Tensor target = Tensor::fromSlice(ctx, {"batch", "in"}, {batch, width}, ramp(size_t(batch * width), -0.5f, 0.06f));
    std::vector<Tensor> ws, bs;
    for (int l = 0; l < 4; ++l) {
      ws.push_back(Tensor::variableFromSlice(ctx, {"out", "in"}, {width, width}, ramp(size_t(width * width), -0.3f + 0.01f * l, 0.035f)));
      bs.push_back(Tensor::variableFromSlice(ctx, {"out"}, {width}, ramp(size_t(width), -0.05f, 0.01f)));
    }
    auto layer = [](ExecContext& c, const Tensor& h, const Tensor& w, const Tensor& b) {
      return h.dot(c, w, "in").add(c, b).tanh(c).withTags(c, {"batch", "in"});
    };
    std::vector<float> losses;
    for (int step = 0; step < 20; ++step) {
      fucina::ExecScope scope(ctx);
      Tensor h = x;
      for (int l = 0; l < 4; ++l)
        h = checkpointed ? fucina::checkpoint(ctx, layer, h, ws[l], bs[l]) : layer(ctx, h, ws[l], bs[l]);
      Tensor d = h.sub(ctx, target);
      Tensor loss = d.mul(ctx, d).meanAll(ctx);
      loss.backward(ctx);
      losses.push_back(loss.item());
      auto ng = fucina::noGrad();
      for (auto* group : {&ws, &bs})
        for (Tensor& p : *group)
          p = scope.keep(Tensor::variable(ctx, p.detach(ctx).sub(ctx, p.grad(ctx)->scale(ctx, 0.5))));
    }
    return losses;
  };
  const auto plain = train(false);
  const auto ckpt = train(true);
  CHECK(plain.back() < plain.front());
  CHECK(ckpt == plain);
}

// ---------------------------------------------------------------- Note [Checkpoint tail]

namespace {

// A residual block ending in a product and a sum whose values no VJP reads; `lora` adds a
// low-rank branch whose inner product IS read (by the outer product's VJP).
Tensor residualBlock(ExecContext& ctx, bool tail, bool lora, const Tensor& x, const Tensor& w1, const Tensor& w2,
                     const Tensor& b2, const Tensor& a) {
  const Tensor h = x.add(ctx, x.dot(ctx, w1, "in").tanh(ctx).withTags(ctx, {"batch", "in"}));
  const Tensor g = h.dot(ctx, w2, "in").sigmoid(ctx);
  auto rest = [&] {
    Tensor out = g.addDot(ctx, w2.withTags(ctx, {"in", "out"}), "out", b2);
    if (lora) out = out.add(ctx, g.dot(ctx, a, "out").dot(ctx, a.withTags(ctx, {"in", "r"}), "r").scale(ctx, 0.5));
    return h.add(ctx, out);
  };
  return tail ? fucina::checkpointTail(rest) : rest();
}

}  // namespace

TEST_CASE("checkpointTail: the recompute never computes the tail's unread values, and gradients are bitwise equal") {
  for (bool lora : {false, true})
    for (int threads : {1, 2}) {
      INFO((lora ? "with" : "without") << " the low-rank branch, " << threads << " threads");
      ExecContext ctx(fucina::ExecOptions{.threads = threads});
      auto make = [&](fucina::Tags t, fucina::Extents s, float lo) {
        return Tensor::variableFromSlice(ctx, t, s, ramp(size_t(fucina::numelOf(s)), lo, 0.07f));
      };
      Tensor x = make({"batch", "in"}, {5, 7}, -0.5f), w1 = make({"out", "in"}, {7, 7}, -0.4f),
             w2 = make({"out", "in"}, {7, 7}, -0.3f), b2 = make({"in"}, {7}, -0.1f),
             a = make({"out", "r"}, {7, 3}, -0.2f);
      if (!lora) a = a.detach(ctx);  // unused: a constant, so that the checkpoint expects no gradient
      std::vector<Tensor*> params{&x, &w1, &w2, &b2};
      if (lora) params.push_back(&a);
      // The reference bits: the plain graph, no checkpoint and no tail. y·y seeds a gradient
      // that is not all ones.
      Tensor plain = residualBlock(ctx, false, lora, x, w1, w2, b2, a);
      plain.mul(ctx, plain).sumAll(ctx).backward(ctx);
      std::vector<std::vector<float>> want;
      for (Tensor* t : params) want.push_back(test::gradOf(ctx, *t)), t->zeroGrad();

      auto block = [lora](ExecContext& c, const Tensor& x, const Tensor& w1, const Tensor& w2, const Tensor& b2,
                          const Tensor& a) { return residualBlock(c, true, lora, x, w1, w2, b2, a); };
      const auto before = fucina::internal::pendingValueCounts();
      Tensor y = fucina::checkpoint(ctx, block, x, w1, w2, b2, a);
      const auto forward = fucina::internal::pendingValueCounts();
      CHECK(forward.deferred == before.deferred);  // the first run computes everything
      CHECK(y.toVector() == plain.toVector());
      y.mul(ctx, y).sumAll(ctx).backward(ctx);
      const auto after = fucina::internal::pendingValueCounts();
      // Left pending: addDot and the sum; with the branch also its two products, scale and add.
      CHECK(after.deferred - forward.deferred == (lora ? 6u : 2u));
      // Computed: only the branch's inner product, which its outer product's VJP saves.
      CHECK(after.computed - forward.computed == (lora ? 1u : 0u));
      for (size_t i = 0; i < params.size(); ++i) {
        INFO("parameter " << i);
        CHECK(test::gradOf(ctx, *params[i]) == want[i]);
      }
    }
}

TEST_CASE("checkpointTail outside a recompute is its function, and a read after the tail computes it") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {2, 3}, {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f});
  Tensor w = Tensor::variableFromSlice(ctx, {"k", "in"}, {3, 3}, ramp(9, -0.4f, 0.1f));
  // x + x·w, the product's result taking x's tags; `dispose` drops the product's handle first.
  auto tailOf = [](ExecContext& c, const Tensor& x, const Tensor& w, bool dispose) {
    const Tensor u = x.withTags(c, {"batch", "k"});
    return fucina::checkpointTail([&] {
      Tensor o = u.dot(c, w, "k");
      Tensor r = x.add(c, o);
      if (dispose) o.dispose();  // r's computation still reaches o's pending value
      return r;
    });
  };
  const auto before = fucina::internal::pendingValueCounts();
  // A plain forward: nothing deferred, the same bits as without the tail.
  const std::vector<float> y0 = tailOf(ctx, x, w, false).toVector();
  CHECK(y0 == x.add(ctx, x.withTags(ctx, {"batch", "k"}).dot(ctx, w, "k")).toVector());
  CHECK(fucina::internal::pendingValueCounts().deferred == before.deferred);
  // Inside a checkpoint, a block whose last op (after the tail) reads the tail's value: the
  // recompute leaves the tail pending, tanh then computes it (the sum reading the product), and
  // the gradients match the plain graph.
  for (bool dispose : {false, true}) {
    INFO("product's handle disposed: " << dispose);
    auto block = [&](ExecContext& c, const Tensor& x, const Tensor& w) { return tailOf(c, x, w, dispose).tanh(c); };
    x.zeroGrad(), w.zeroGrad();
    block(ctx, x, w).sumAll(ctx).backward(ctx);
    const auto gx = test::gradOf(ctx, x), gw = test::gradOf(ctx, w);
    x.zeroGrad(), w.zeroGrad();
    const auto start = fucina::internal::pendingValueCounts();
    fucina::checkpoint(ctx, block, x, w).sumAll(ctx).backward(ctx);
    const auto end = fucina::internal::pendingValueCounts();
    CHECK(end.deferred - start.deferred == 2);
    CHECK(end.computed - start.computed == 2);
    CHECK(test::gradOf(ctx, x) == gx);
    CHECK(test::gradOf(ctx, w) == gw);
  }
}

TEST_CASE("checkpointTail: an error inside the tail leaves no tail open") {
  ExecContext ctx;
  Tensor x = Tensor::variableFromSlice(ctx, {"batch", "in"}, {1, 2}, {1, 2});
  Tensor w = Tensor::variableFromSlice(ctx, {"out", "in"}, {2, 2}, {1, 0, 0, 1});
  bool fail_in_tail = false;
  auto block = [&](ExecContext& c, const Tensor& x, const Tensor& w) {
    return fucina::checkpointTail([&] {
      return fail_in_tail ? x.dot(c, w, "nope") : x.add(c, x.dot(c, w, "in").withTags(c, {"batch", "in"}));
    });
  };
  Tensor y = fucina::checkpoint(ctx, block, x, w);
  fail_in_tail = true;  // the recompute now throws inside its tail
  CHECK_FUCINA_ERROR(y.sumAll(ctx).backward(ctx), ShapeMismatch);
  CHECK_FALSE(fucina::internal::deferringValues());
  fail_in_tail = false;
  x.zeroGrad(), w.zeroGrad();
  fucina::checkpoint(ctx, block, x, w).sumAll(ctx).backward(ctx);  // works again
  CHECK(test::gradOf(ctx, w) == std::vector<float>{1, 2, 1, 2});  // x, for each output
}
