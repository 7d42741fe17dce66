// Threads sharing one ExecContext: each with its own exec scopes, graphs and backward passes
// (Note [Scopes per thread], Note [Interior consumption]). Tagged [threads]: `npm test` runs these
// under ThreadSanitizer too.
#include <atomic>
#include <semaphore>
#include <thread>

#include "test_helpers.h"

using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::ExecScope;
using fucina::Tensor;
using test::gradOf;
using Floats = std::vector<float>;

namespace {

bool released(const Tensor& t) { return t.impl()->released(); }

// One training-like step on thread-private data over a shared leaf w: a small MLP-ish graph with
// a shared interior value, so that the pass fans out and joins. Returns (loss, dx).
std::pair<float, Floats> privateStep(ExecContext& ctx, const Tensor& w, int seed) {
  ExecScope scope(ctx);
  Tensor x = Tensor::variable(ctx, Tensor::uniform(ctx, {"batch", "in"}, {5, 7}, -1, 1, seed));
  Tensor h = x.dot(ctx, w, "in").tanh(ctx);                     // {batch, out}
  Tensor loss = h.mul(ctx, h).add(ctx, h.scale(ctx, 0.5f)).meanAll(ctx);
  loss.backward(ctx);
  // Not gradOf: its REQUIRE would be a Catch assertion on a worker thread (not thread-safe).
  const std::optional<Tensor> gx = x.grad(ctx);
  return {loss.item(), gx ? gx->toVector() : Floats{}};
}

}  // namespace

TEST_CASE("exec scopes are per thread: one thread's close leaves another thread's tensors alone",
          "[threads]") {
  // Regression: scopes were one stack per context, so B's scope (opened last) adopted what A made
  // afterwards, and B's close freed it under A (ASan heap-use-after-free in dot).
  ExecContext ctx;
  const auto base = ctx.memory().live_tensors;
  std::binary_semaphore b_opened{0}, a_made{0}, b_closed{0};
  Floats a_value;
  bool a_alive_after_b_closed = false, b_released_its_own = false;
  std::thread a([&] {  // Catch's assertions are not thread-safe: threads only record
    ExecScope scope(ctx);
    b_opened.acquire();
    Tensor t = Tensor::full(ctx, {"d"}, {3}, 2).scale(ctx, 3);  // made while B's scope is open
    a_made.release();
    b_closed.acquire();
    a_alive_after_b_closed = !released(t);
    if (a_alive_after_b_closed) a_value = t.dot(ctx, t, "d").toVector();
  });
  std::thread b([&] {
    ExecScope scope(ctx);
    Tensor mine = Tensor::ones(ctx, {"d"}, {3});
    b_opened.release();
    a_made.acquire();
    scope.close();
    b_released_its_own = released(mine);
    b_closed.release();
  });
  a.join();
  b.join();
  CHECK(a_alive_after_b_closed);
  CHECK(b_released_its_own);
  CHECK(a_value == Floats{108});
  CHECK(ctx.memory().live_tensors == base);  // A's scope released A's tensors when it closed
}

TEST_CASE("a scope kept tensor moves to the enclosing scope of its own thread", "[threads]") {
  ExecContext ctx;
  std::binary_semaphore inner_open{0}, other_done{0};
  Tensor kept;
  bool alive_in_outer = false, released_with_outer = false;
  std::thread t([&] {
    ExecScope outer(ctx);
    {
      ExecScope inner(ctx);
      inner_open.release();
      other_done.acquire();
      kept = inner.keep(Tensor::full(ctx, {"d"}, {2}, 4));
    }
    alive_in_outer = !released(kept);  // now owned by `outer`
    outer.close();
    released_with_outer = released(kept);
  });
  std::thread other([&] {
    inner_open.acquire();
    ExecScope s(ctx);  // opened on another thread between the two: must not take the kept tensor
    other_done.release();
  });
  other.join();
  t.join();
  CHECK(alive_in_outer);
  CHECK(released_with_outer);
}

TEST_CASE("threads on one context, each with its own scopes, graphs and backward, give exact results",
          "[threads]") {
  constexpr int kThreads = 4, kSteps = 25;
  ExecContext ctx(ExecOptions{.threads = 2});
  const auto base = ctx.memory();
  // w is a shared leaf of every thread's graphs; its gradient sums over all passes, so use values
  // whose products and sums are exact in f32 (small integers) to check the total exactly.
  Tensor w = Tensor::variable(ctx, Tensor::uniform(ctx, {"out", "in"}, {3, 7}, -1, 1, /*seed=*/9));
  Tensor wi = Tensor::variableFromSlice(ctx, {"in"}, {4}, {1, 2, 3, 4});

  // References on this thread first: per-seed loss and input gradient, bit for bit.
  std::vector<std::pair<float, Floats>> expected;
  for (int t = 0; t < kThreads; ++t) expected.push_back(privateStep(ctx, w, 100 + t));
  w.zeroGrad();

  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int step = 0; step < kSteps; ++step) {
          if (privateStep(ctx, w, 100 + t) != expected[t]) mismatches.fetch_add(1);
          ExecScope scope(ctx);
          Tensor c = Tensor::full(ctx, {"in"}, {4}, float(t + 1));
          wi.mul(ctx, c).sumAll(ctx).backward(ctx);  // adds (t+1) to each element of wi's grad
        }
      } catch (...) {
        errors.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(errors.load() == 0);
  CHECK(mismatches.load() == 0);
  // sum over threads of (t+1) * kSteps = (1+2+3+4) * 25 per element, exact.
  CHECK(gradOf(ctx, wi) == Floats{250, 250, 250, 250});
  CHECK(w.grad(ctx).has_value());
  w = Tensor();
  wi = Tensor();
  CHECK(ctx.memory().live_tensors == base.live_tensors);
  CHECK(ctx.memory().live_bytes == base.live_bytes);
}
