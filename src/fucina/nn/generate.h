/// @file
/// Text generation for the GPT models (nn::Gpt, nn::Gpt2): the options, the sampler and the
/// loop, written once, and the KV cache that lets each new token cost one position.
///
/// Note [KV cache]: a cache holds, for every block, the keys and values of the positions
/// 0 .. length-1 the model has run; a forward given the cache runs only the new positions
/// (length .. length+t-1), appends their keys and values and attends over all of them, so its
/// logits equal those of a full forward over the whole sequence (within f32 rounding). Positions
/// never pass the model's position table: once the context is full, generate runs a full forward
/// over the last `positions` tokens for every further token (their positions shift by one each
/// step, so no cached key stays valid), exactly as an uncached loop does.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina::nn {

struct GenerateOptions {
  int64_t max_tokens = 32;
  double temperature = 1.0;  ///< 0: greedy (the most likely token)
  int64_t top_k = 0;         ///< sample among the k most likely tokens; 0: all
  uint64_t seed = 0;
};

/// The keys and values of the positions a model has run, per block (Note [KV cache]). Empty
/// until the first forward given it; pass the same cache only with tokens of the same batch. A
/// forward refused up front (too many positions, bad tokens) leaves it as it was; after one that
/// fails part-way, start a new cache.
struct KvCache {
  std::vector<Tensor> keys, values;  ///< per block: {batch..., "t", "head", "hd"}
  /// The positions held (0 when empty).
  int64_t length() const { return keys.empty() ? 0 : keys.front().extent("t"); }
};

/// Causal attention of one block's new positions: q{batch..., "t", "head": H, "hd"} over keys
/// and values k, v{batch..., "t", "head": Hkv, "hd"} (grouped-query when Hkv < H). With a cache,
/// k and v are appended to block `layer`'s (the first forward creates them) and the queries
/// attend over all of them, the causal mask aligned to the end. Returns {batch..., head, t, hd}.
Tensor cachedAttention(ExecContext& ctx, const Tensor& q, Tensor k, Tensor v, KvCache* cache, size_t layer);

/// Causal self-attention of one block (heads "head", time "t", dims "hd"): qkv{batch..., t,
/// "part": 3, head, hd} of the new positions. With a cache, the new keys and values are appended
/// to block `layer`'s (the first forward creates them) and the queries attend over all of them,
/// the causal mask aligned to the end (cachedAttention). Returns {batch..., head, t, hd}.
Tensor causalSelfAttention(ExecContext& ctx, const Tensor& qkv, KvCache* cache, size_t layer);

/// The token drawn from logits{"vocab"} (one position) with the intentionally no-grad ops: argmax
/// at temperature 0 (or top_k 1), else a multinomial draw from softmax(logits / temperature) over
/// the top_k largest (all when top_k is 0), seeded by options.seed and the step (0, 1, ...): the
/// same draw for the same (seed, step, logits).
int32_t sampleToken(ExecContext& ctx, const Tensor& logits, const GenerateOptions& options, uint64_t step);

/// What generate needs of a model: its name (for errors), sizes and forward. logits runs
/// tokens{"batch": 1, "t"} (i32) -> logits{batch, t, "vocab"}; with a cache, the tokens continue
/// it (positions cache->length() onwards).
struct Generator {
  std::string name;  ///< "Gpt2::generate"
  int64_t vocab = 0, positions = 0;
  std::function<Tensor(ExecContext&, const Tensor& tokens, KvCache* cache)> logits;
};

/// The loop of Gpt::generate and Gpt2::generate: checks the arguments (InvalidArgument,
/// IndexOutOfRange for a prompt token outside the vocabulary), then under noGrad samples up to
/// options.max_tokens tokens after prompt: one forward over the prompt (its last `positions`
/// tokens when longer), then one position per token from the KV cache while the context fits,
/// then a full forward over the last `positions` tokens per token (Note [KV cache]). on_token
/// sees each token as it is drawn (return false to stop). Returns the new tokens.
std::vector<int32_t> generate(ExecContext& ctx, const Generator& model, std::span<const int32_t> prompt,
                              const GenerateOptions& options, const std::function<bool(int32_t)>& on_token);

}  // namespace fucina::nn
