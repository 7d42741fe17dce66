// Soak: many training steps on one context; after warm-up, live tensors, live bytes, system
// allocations and the process's resident memory stay flat. `npm test` runs a few thousand steps;
// FUCINA_SOAK_STEPS=100000 build/native/fucina_tests "[soak]" is the long run (RELIABILITY.md).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "test_helpers.h"

using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::ExecScope;
using fucina::Tensor;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);
#else
constexpr bool kAddressSanitizer = false;
#endif

int64_t soakSteps(int64_t fallback) {
  const char* env = std::getenv("FUCINA_SOAK_STEPS");
  return env ? std::max<int64_t>(std::atoll(env), 200) : fallback;
}

// Resident set size in bytes (Linux: /proc/self/statm); 0 where it cannot be read.
int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  if (!(statm >> pages >> resident)) return 0;
  return resident * 4096;
}

struct Sample {
  size_t live_tensors, live_bytes, system_allocations;
  int64_t rss;
};

// Runs `step` n times inside a fresh scope each; samples after a warm-up of a tenth of the steps
// and at the end, and checks nothing grew in between.
template <class Step>
void soak(ExecContext& ctx, int64_t n, Step step) {
  const int64_t warmup = std::max<int64_t>(n / 10, 50);
  Sample first{};
  for (int64_t i = 0; i < n; ++i) {
    {
      ExecScope scope(ctx);
      step(i);
    }
    if (i + 1 == warmup) {
      const auto m = ctx.memory();
      first = {m.live_tensors, m.live_bytes, m.system_allocations, residentBytes()};
    }
  }
  const auto m = ctx.memory();
  const Sample last{m.live_tensors, m.live_bytes, m.system_allocations, residentBytes()};
  std::printf("soak: %lld steps, live tensors %zu -> %zu, live bytes %zu -> %zu, system "
              "allocations %zu -> %zu, RSS %.1f -> %.1f MiB\n",
              static_cast<long long>(n), first.live_tensors, last.live_tensors, first.live_bytes,
              last.live_bytes, first.system_allocations, last.system_allocations,
              first.rss / 1048576.0, last.rss / 1048576.0);
  CHECK(last.live_tensors == first.live_tensors);
  CHECK(last.live_bytes == first.live_bytes);
  CHECK(last.system_allocations == first.system_allocations);
  // The allocator caches and the C++ runtime may settle a little; a leak of even one small
  // tensor per step would add far more than 4 MiB over thousands of steps. Under ASan freed
  // memory sits in its quarantine, so RSS says nothing there (its leak check covers it).
  if (!kAddressSanitizer) CHECK(last.rss - first.rss < 4 * 1048576);
}

}  // namespace

TEST_CASE("soak: MLP training steps keep memory flat", "[soak]") {
  ExecContext ctx(ExecOptions{.threads = 2});
  fucina::nn::Mlp model(ctx, {.sizes = {32, 64, 10}}, /*seed=*/1);
  fucina::optim::AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.01});
  const Tensor x = Tensor::uniform(ctx, {"batch", "in"}, {16, 32}, -1, 1, 2);
  std::vector<int64_t> labels(16);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 10);
  const Tensor y = Tensor::fromInts(ctx, {"batch"}, {16}, labels);
  float first_loss = 0, last_loss = 0;
  soak(ctx, soakSteps(3000), [&](int64_t i) {
    opt.zeroGrad();
    Tensor loss = model(ctx, x).crossEntropy(ctx, y, "class");
    loss.backward(ctx);
    opt.step(ctx);
    (i == 0 ? first_loss : last_loss) = loss.item();
  });
  CHECK(last_loss < first_loss);
}

TEST_CASE("soak: checkpointed GPT steps and refused passes keep memory flat", "[soak]") {
  ExecContext ctx(ExecOptions{.threads = 2});
  fucina::nn::Gpt model(ctx, {.vocab = 32, .context = 8, .d_model = 16, .heads = 2, .layers = 1,
                              .mlp = 32, .checkpoint_blocks = true}, /*seed=*/3);
  fucina::optim::Adam opt(model.parameters(), {.lr = 1e-3});
  std::vector<int64_t> ids(2 * 8);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7) % 32);
  const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {2, 8}, ids);
  soak(ctx, soakSteps(3000) / 3, [&](int64_t) {
    opt.zeroGrad();
    Tensor loss = model.loss(ctx, tokens);
    loss.backward(ctx);
    // The error paths must not leak either: a second pass over the spent graph is refused.
    REQUIRE_FUCINA_ERROR(loss.scale(ctx, 2).backward(ctx), BackwardAlreadyRun);
    opt.step(ctx);
  });
}
