// Generation for the GPT models (generate.h): the KV-cached attention, the sampler and the loop.
#include "fucina/nn/generate.h"

#include <algorithm>
#include <cmath>

#include "fucina/ag/control.h"
#include "fucina/core/error.h"
#include "fucina/exec/scope.h"

namespace fucina::nn {

namespace {

[[noreturn]] void invalid(const std::string& message) { fail(ErrorCode::InvalidArgument, message); }

// Step `step`'s sampling seed: splitmix64's output number step+1 from state `seed`, so a loop
// that draws one seed per token needs no state of its own.
uint64_t stepSeed(uint64_t seed, uint64_t step) {
  uint64_t z = seed + (step + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Tensor cachedAttention(ExecContext& ctx, const Tensor& q, Tensor k, Tensor v, KvCache* cache, size_t layer) {
  if (cache) {
    if (cache->keys.size() == layer) {
      // The first forward given this cache: it attends as an uncached one does (the same values
      // to the bit) and keeps copies of K and V alone, not the buffers they view.
      cache->keys.push_back(k.contiguous(ctx));
      cache->values.push_back(v.contiguous(ctx));
    } else {
      const Tensor ks[] = {cache->keys.at(layer), k}, vs[] = {cache->values.at(layer), v};
      k = cache->keys[layer] = Tensor::concat(ctx, ks, "t");
      v = cache->values[layer] = Tensor::concat(ctx, vs, "t");
    }
  }
  AttentionOptions attention;
  attention.heads = "head";
  attention.time = "t";
  attention.dim = "hd";
  attention.causal = true;  // end-aligned: the new positions see every cached one
  return Tensor::groupedAttention(ctx, q, k, v, attention);
}

Tensor causalSelfAttention(ExecContext& ctx, const Tensor& qkv, KvCache* cache, size_t layer) {
  return cachedAttention(ctx, qkv.select(ctx, "part", 0), qkv.select(ctx, "part", 1), qkv.select(ctx, "part", 2), cache,
                         layer);
}

int32_t sampleToken(ExecContext& ctx, const Tensor& logits, const GenerateOptions& o, uint64_t step) {
  const int64_t n = logits.extent("vocab");
  const int64_t k = o.top_k > 0 ? std::min(n, o.top_k) : n;
  const auto id = [](const Tensor& i64) { return static_cast<int32_t>(i64.item()); };  // < 2^24: exact
  if (o.temperature == 0 || k == 1) return id(logits.argmax(ctx, "vocab"));
  const SortResult top = logits.topK(ctx, "vocab", k);
  const Tensor drawn = top.values.scale(ctx, 1 / o.temperature)
                           .softmax(ctx, "vocab")
                           .multinomial(ctx, "vocab", 1, stepSeed(o.seed, step));
  return static_cast<int32_t>(top.indices.toVector()[static_cast<size_t>(id(drawn))]);
}

std::vector<int32_t> generate(ExecContext& ctx, const Generator& m, std::span<const int32_t> prompt,
                              const GenerateOptions& o, const std::function<bool(int32_t)>& on_token) {
  const std::string& what = m.name;
  if (prompt.empty()) invalid(what + ": the prompt is empty (give at least one token)");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= m.vocab)
      fail(ErrorCode::IndexOutOfRange, what + ": prompt token " + std::to_string(prompt[i]) + " at position " +
                                           std::to_string(i) + " is outside [0, " + std::to_string(m.vocab) + ")");
  if (o.max_tokens < 0) invalid(what + ": max_tokens must be >= 0, got " + std::to_string(o.max_tokens));
  if (!std::isfinite(o.temperature) || o.temperature < 0)
    invalid(what + ": temperature must be a finite number >= 0, got " + std::to_string(o.temperature));
  if (o.top_k < 0) invalid(what + ": top_k must be >= 0, got " + std::to_string(o.top_k));
  const NoGradScope no_grad = noGrad();
  std::vector<int64_t> context(prompt.begin(), prompt.end());
  const auto positions = static_cast<size_t>(m.positions);
  std::vector<int32_t> out;
  KvCache cache;  // its tensors are kept out of each step's scope while the context fits
  for (int64_t step = 0; step < o.max_tokens; ++step) {
    int32_t next;
    {
      ExecScope scope(ctx);  // this step's other tensors go when it ends
      // Which positions run (Note [KV cache]): all of the context the first time, then only the
      // newest token; once the context outgrows the table, its last `positions` tokens, uncached.
      const bool full = context.size() > positions;
      const size_t run = full ? positions : cache.length() == 0 ? context.size() : 1;
      const Tensor tokens = Tensor::fromInts(ctx, {"batch", "t"}, {1, static_cast<int64_t>(run)},
                                             std::span<const int64_t>(context.data() + context.size() - run, run),
                                             DType::i32);
      const Tensor logits = m.logits(ctx, tokens, full ? nullptr : &cache);
      next = sampleToken(ctx, logits.select(ctx, "batch", 0).select(ctx, "t", static_cast<int64_t>(run) - 1), o,
                         static_cast<uint64_t>(step));
      if (full) cache = {};  // never used again: the context only grows
      for (std::vector<Tensor>* kv : {&cache.keys, &cache.values})
        for (Tensor& t : *kv) t = scope.keep(t);
    }
    out.push_back(next);
    context.push_back(next);
    if (on_token && !on_token(next)) break;
  }
  return out;
}

}  // namespace fucina::nn
