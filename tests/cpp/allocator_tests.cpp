// The caching allocator under ExecContext (Note [Caching allocator] in core/storage.h): size
// classes, reuse, alignment, the cache bound and trim, thread safety, storage that outlives its
// context, and the point of it all: after warm-up a training step makes no system allocations.
#include "test_helpers.h"

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using fucina::DType;
using fucina::ExecContext;
using fucina::ExecOptions;
using fucina::ExecScope;
using fucina::MemoryAccount;
using fucina::Tensor;
using test::RawTensor;
namespace nn = fucina::nn;
namespace optim = fucina::optim;

namespace {

bool aligned(const RawTensor& t) {
  return reinterpret_cast<uintptr_t>(t.storage()->data()) % MemoryAccount::kAlign == 0;
}

RawTensor floats(ExecContext& ctx, int64_t n) { return RawTensor::empty(ctx, {"i"}, {n}, DType::f32); }

}  // namespace

TEST_CASE("size classes are aligned and waste less than a quarter", "[allocator]") {
  CHECK(MemoryAccount::blockSize(0) == 0u);
  CHECK(MemoryAccount::blockSize(1) == 64u);
  CHECK(MemoryAccount::blockSize(64) == 64u);
  CHECK(MemoryAccount::blockSize(65) == 128u);
  CHECK(MemoryAccount::blockSize(257) == 320u);    // 1.25 * 256
  CHECK(MemoryAccount::blockSize(4096) == 4096u);  // powers of two are exact
  CHECK(MemoryAccount::blockSize(4097) == 5120u);
  for (size_t bytes = 1; bytes < (size_t{1} << 26); bytes = bytes * 9 / 8 + 1) {
    const size_t block = MemoryAccount::blockSize(bytes);
    INFO("bytes " << bytes << " block " << block);
    CHECK(block >= bytes);
    CHECK(block % MemoryAccount::kAlign == 0);
    CHECK(block < bytes + bytes / 4 + MemoryAccount::kAlign);
  }
}

TEST_CASE("a freed buffer is reused by the next request of its size class", "[allocator]") {
  ExecContext ctx;
  const std::byte* first;
  {
    RawTensor a = floats(ctx, 1000);
    first = a.storage()->data();
  }
  const fucina::MemoryStats before = ctx.memory();
  CHECK(before.cached_bytes == MemoryAccount::blockSize(4000));
  RawTensor b = floats(ctx, 990);  // same class as 1000 floats
  CHECK(b.storage()->data() == first);
  const fucina::MemoryStats after = ctx.memory();
  CHECK(after.system_allocations == before.system_allocations);
  CHECK(after.cache_hits == before.cache_hits + 1);
  CHECK(after.allocations == before.allocations + 1);
  CHECK(after.cached_bytes == 0u);
  CHECK(after.live_bytes == before.live_bytes + 990 * sizeof(float));  // live bytes stay exact
  RawTensor c = floats(ctx, 2000);  // another class: a real allocation
  CHECK(ctx.memory().system_allocations == after.system_allocations + 1);
}

TEST_CASE("buffers are 64-byte aligned, fresh or reused", "[allocator]") {
  ExecContext ctx;
  for (int round = 0; round < 2; ++round) {
    std::vector<RawTensor> held;
    for (int64_t n : {1, 3, 16, 17, 100, 1023, 4097, 100000}) {
      held.push_back(RawTensor::empty(ctx, {"i"}, {n}, DType::u8));
      held.push_back(floats(ctx, n));
    }
    for (const RawTensor& t : held) CHECK(aligned(t));
  }
  CHECK(ctx.memory().cache_hits >= 16u);  // the second round reused the first's buffers
}

TEST_CASE("trimCache and the cache limit give buffers back to the system", "[allocator]") {
  ExecContext ctx;
  { RawTensor a = floats(ctx, 1 << 16), b = floats(ctx, 100); }
  CHECK(ctx.memory().cached_bytes == MemoryAccount::blockSize(4 << 16) + MemoryAccount::blockSize(400));
  ctx.trimCache();
  CHECK(ctx.memory().cached_bytes == 0u);
  const size_t system = ctx.memory().system_allocations;
  { RawTensor a = floats(ctx, 1 << 16); }
  CHECK(ctx.memory().system_allocations == system + 1);  // the cache was empty

  ctx.setCacheLimit(1024);  // holds a small buffer but not a large one (without the high-water allowance)
  ctx.setCacheToHighWater(false);
  CHECK(ctx.memory().cached_bytes == 0u);
  { RawTensor a = floats(ctx, 1 << 16), b = floats(ctx, 100); }
  CHECK(ctx.memory().cached_bytes == MemoryAccount::blockSize(400));

  ExecContext uncached(ExecOptions{.threads = 1, .cache_limit = 0});
  { RawTensor a = floats(uncached, 100); }
  { RawTensor a = floats(uncached, 100); }
  CHECK(uncached.memory().cached_bytes == 0u);
  CHECK(uncached.memory().system_allocations == 2u);
  CHECK(uncached.memory().cache_hits == 0u);
}

TEST_CASE("beyond the cache limit, buffers are kept up to the high-water mark of live blocks", "[allocator]") {
  // Note [Cache to the high-water mark]: a step that frees more than the limit recirculates.
  for (const bool high_water : {true, false}) {
    INFO("cache_to_high_water " << high_water);
    ExecContext ctx(ExecOptions{.threads = 1, .cache_limit = 4096, .cache_to_high_water = high_water});
    for (int round = 0; round < 3; ++round) {
      const size_t system = ctx.memory().system_allocations;
      { RawTensor a = floats(ctx, 1 << 20), b = floats(ctx, 1 << 20), c = floats(ctx, 100); }
      // The first round allocates all three; later ones reuse a and b only with the allowance.
      CHECK(ctx.memory().system_allocations - system == (round == 0 ? 3u : high_water ? 0u : 2u));
    }
    const size_t big = MemoryAccount::blockSize(4 << 20), small = MemoryAccount::blockSize(400);
    CHECK(ctx.memory().cached_bytes == (high_water ? 2 * big + small : small));
    // Nothing is cached past the high-water mark: with a and b cached (8 MiB), a new 12 MiB buffer
    // raises the mark to 12 MiB + small, and caching it too would hold 20 MiB. It takes the place
    // of a and b, the class used longest ago (Note [Evict the least recently used class]).
    if (high_water) {
      RawTensor c = floats(ctx, 100);
      const size_t system = ctx.memory().system_allocations;
      { RawTensor d = floats(ctx, 3 << 20); }
      CHECK(ctx.memory().cached_bytes == MemoryAccount::blockSize(12 << 20));
      { RawTensor d = floats(ctx, 3 << 20); }
      CHECK(ctx.memory().system_allocations == system + 1);
    }
  }
  // A limit of 0 still caches nothing, whatever the allowance.
  ExecContext uncached(ExecOptions{.threads = 1, .cache_limit = 0});
  { RawTensor a = floats(uncached, 1 << 20); }
  { RawTensor a = floats(uncached, 1 << 20); }
  CHECK(uncached.memory().cache_hits == 0u);
}

TEST_CASE("classes nothing asks for any more make way for a loop's own buffers", "[allocator]") {
  // Note [Evict the least recently used class]: a finished phase left the cache full of its
  // classes; a loop of other classes after it makes buffers in its first step only.
  for (const bool high_water : {true, false}) {
    INFO("cache_to_high_water " << high_water);
    ExecContext ctx(ExecOptions{.threads = 1, .cache_limit = 8 << 20, .cache_to_high_water = high_water});
    {
      std::vector<RawTensor> phase;
      for (int i = 0; i < 8; ++i) phase.push_back(floats(ctx, (1 << 18) + 64 * i));  // 8 classes of ~1 MiB
    }
    CHECK(ctx.memory().cached_bytes > (7 << 20));
    const auto step = [&] {
      RawTensor a = floats(ctx, 3 << 18), b = floats(ctx, 5 << 17);  // 3 MiB and 2.5 MiB
      { RawTensor c = floats(ctx, 100); }
    };
    step();
    const size_t system = ctx.memory().system_allocations;
    for (int i = 0; i < 3; ++i) step();
    CHECK(ctx.memory().system_allocations == system);
    CHECK(ctx.memory().cached_bytes <= ctx.memory().peak_bytes + (8 << 20));
  }
  // A buffer larger than the cache may hold evicts nothing.
  ExecContext ctx(ExecOptions{.threads = 1, .cache_limit = 1 << 20, .cache_to_high_water = false});
  { RawTensor a = floats(ctx, 1000); }
  const size_t cached = ctx.memory().cached_bytes;
  { RawTensor big = floats(ctx, 1 << 20); }
  CHECK(ctx.memory().cached_bytes == cached);
}

TEST_CASE("zero-byte and impossible buffers", "[allocator]") {
  ExecContext ctx;
  const fucina::MemoryStats base = ctx.memory();
  {
    Tensor empty = Tensor::zeros(ctx, {"a", "b"}, {0, 5});
    CHECK(empty.numel() == 0);
  }
  CHECK(ctx.memory().system_allocations == base.system_allocations);  // nothing to allocate
  CHECK(ctx.memory().cached_bytes == 0u);
  CHECK(ctx.memory().live_bytes == base.live_bytes);
  // 2^60 bytes: a valid shape no system can back; the cache is trimmed and the error is clean.
  { RawTensor small = floats(ctx, 10); }
  REQUIRE_FUCINA_ERROR(RawTensor::empty(ctx, {"a", "b"}, {int64_t{1} << 29, int64_t{1} << 29}, DType::f32),
                       OutOfMemory);
  CHECK(ctx.memory().cached_bytes == 0u);
  CHECK(ctx.memory().live_bytes == base.live_bytes);
  RawTensor after = floats(ctx, 10);  // still usable
  CHECK(aligned(after));
}

TEST_CASE("a live-byte limit makes a request past it OutOfMemory, and is all that changes", "[allocator]") {
  ExecContext ctx;
  ctx.account()->setLiveLimit(1000);
  RawTensor a = floats(ctx, 200);  // 800 bytes
  REQUIRE_FUCINA_ERROR(floats(ctx, 51), OutOfMemory);
  CHECK(ctx.memory().live_bytes == 800u);
  RawTensor b = floats(ctx, 50);  // exactly at the limit
  a = RawTensor();
  RawTensor c = floats(ctx, 200);  // freed bytes count again
  ctx.account()->setLiveLimit(SIZE_MAX);
  CHECK(floats(ctx, 1000).numel() == 1000);
}

TEST_CASE("storage that outlives its context is freed, not cached", "[allocator]") {
  std::shared_ptr<MemoryAccount> account;
  std::optional<Tensor> kept;
  {
    ExecContext ctx;
    account = ctx.account();
    kept = Tensor::fromSlice(ctx, {"i"}, {3}, {1, 2, 3});
    { RawTensor scratch = floats(ctx, 1000); }
    CHECK(account->stats().cached_bytes > 0u);
  }
  CHECK(account->stats().cached_bytes == 0u);  // the context emptied its cache when it went
  CHECK(kept->toVector() == std::vector<float>{1, 2, 3});
  kept.reset();
  CHECK(account->stats().cached_bytes == 0u);  // ...and a late release goes to the system
  CHECK(account->stats().live_bytes == 0u);
}

TEST_CASE("two threads allocating and freeing concurrently", "[allocator]") {
  ExecContext ctx(ExecOptions{.threads = 1});
  const fucina::MemoryStats base = ctx.memory();
  std::atomic<int> corrupted{0};
  auto worker = [&](uint8_t id) {
    std::vector<RawTensor> held;
    for (int i = 0; i < 20000; ++i) {
      const int64_t n = 1 + (i * 37 + id * 11) % 3000;
      RawTensor t = RawTensor::empty(ctx, {"i"}, {n}, DType::u8);
      if (!aligned(t)) corrupted.fetch_add(1);
      std::fill_n(t.storage()->data(), n, std::byte{id});
      held.push_back(std::move(t));
      if (held.size() > 8) {  // free out of order, after the other thread had time to write
        const RawTensor& old = held[static_cast<size_t>(i) % held.size()];
        for (int64_t k = 0; k < old.numel(); ++k)
          if (old.storage()->data()[k] != std::byte{id}) {
            corrupted.fetch_add(1);
            break;
          }
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(i) % held.size()));
      }
    }
  };
  std::thread a(worker, uint8_t{1}), b(worker, uint8_t{2});
  a.join();
  b.join();
  CHECK(corrupted.load() == 0);
  const fucina::MemoryStats end = ctx.memory();
  CHECK(end.live_bytes == base.live_bytes);
  CHECK(end.cache_hits > 30000u);  // most requests were served from the cache
  CHECK(end.allocations - base.allocations == 40000u);
}

// ---------------------------------------------------------------------------------------------
// Steady state: training steps after warm-up make no system allocations
// ---------------------------------------------------------------------------------------------

namespace {

struct Run {
  std::vector<float> losses;
  std::vector<size_t> system_allocations;  // after each step
  size_t cache_hits = 0;
};

template <class LossOfStep>
Run train(ExecContext& ctx, optim::Optimizer& opt, int steps, LossOfStep lossOf) {
  Run run;
  for (int step = 0; step < steps; ++step) {
    {
      ExecScope scope(ctx);
      opt.zeroGrad();
      const Tensor loss = lossOf(step);
      loss.backward(ctx);
      opt.step(ctx);
      run.losses.push_back(loss.item());
    }
    run.system_allocations.push_back(ctx.memory().system_allocations);
  }
  run.cache_hits = ctx.memory().cache_hits;
  return run;
}

// After `warmup` steps the count of system allocations no longer moves.
void requireSteady(const Run& run, size_t warmup) {
  INFO("system allocations per step: " << Catch::Detail::stringify(run.system_allocations));
  REQUIRE(run.system_allocations.size() > warmup);
  CHECK(run.system_allocations.back() == run.system_allocations[warmup - 1]);
  CHECK(run.cache_hits > 0u);
}

Run trainMlp(ExecOptions options) {
  ExecContext ctx(options);
  const int64_t samples = 256, in = 32, classes = 10, batch = 32;
  const Tensor x = Tensor::normal(ctx, {"sample", "in"}, {samples, in}, 0, 1, 1);
  std::vector<int64_t> labels;
  for (int64_t s = 0; s < samples; ++s) labels.push_back((s * 7) % classes);
  const Tensor y = Tensor::fromInts(ctx, {"sample"}, {samples}, labels);
  nn::Mlp model(ctx, nn::MlpConfig{.sizes = {in, 64, 32, classes}}, 3);
  optim::Sgd opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  return train(ctx, opt, 12, [&](int step) {
    const int64_t start = (step * batch) % samples;
    return model(ctx, x.narrow(ctx, "sample", start, batch))
        .crossEntropy(ctx, y.narrow(ctx, "sample", start, batch), "class");
  });
}

Tensor textBatch(ExecContext& ctx, int64_t batch, int64_t length, int64_t step) {
  static const std::string text = "the quick brown fox jumps over the lazy dog. ";
  std::vector<int64_t> bytes;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < length; ++i)
      bytes.push_back(static_cast<unsigned char>(
          text[static_cast<size_t>((step * 5 + b * 11 + i) % static_cast<int64_t>(text.size()))]));
  return Tensor::fromInts(ctx, {"batch", "t"}, {batch, length}, bytes);
}

Run trainGpt(ExecOptions options, bool checkpoint = false) {
  ExecContext ctx(options);
  nn::GptConfig config{.vocab = 256, .context = 16, .d_model = 32, .heads = 4, .layers = 2, .mlp = 64};
  config.checkpoint_blocks = checkpoint;
  const nn::Gpt model(ctx, config, 9);
  optim::AdamW opt(model.parameters(), {.lr = 3e-3, .weight_decay = 0.01});
  return train(ctx, opt, 10, [&](int step) { return model.loss(ctx, textBatch(ctx, 8, 17, step)); });
}

}  // namespace

TEST_CASE("W1 mlp training makes no system allocations after warm-up", "[allocator]") {
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    const Run cached = trainMlp({.threads = threads});
    requireSteady(cached, 3);
    // The cache changes where buffers live, not what is computed.
    const Run uncached = trainMlp({.threads = threads, .cache_limit = 0});
    CHECK(uncached.cache_hits == 0u);
    CHECK(cached.losses == uncached.losses);
  }
}

TEST_CASE("W3 gpt training makes no system allocations after warm-up", "[allocator]") {
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    const Run cached = trainGpt({.threads = threads});
    requireSteady(cached, 3);
    const Run uncached = trainGpt({.threads = threads, .cache_limit = 0});
    CHECK(cached.losses == uncached.losses);
  }
  requireSteady(trainGpt({.threads = 1}, /*checkpoint=*/true), 3);
}
