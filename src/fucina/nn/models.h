/// @file
/// The benchmark models of ../shared/BENCHMARKS.md (W1 mlp, W2 cnn, W3 gpt) as reusable
/// definitions. Sizes are configurable so tests train small versions and bench/ the exact ones
/// with the same code; the defaults are the benchmark sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "fucina/ag/packed.h"
#include "fucina/nn/generate.h"
#include "fucina/nn/layers.h"

namespace fucina::nn {

/// W1: x{batch, "in"} -> Linear+ReLU ... -> Linear -> logits{batch, "class"}.
struct MlpConfig {
  std::vector<int64_t> sizes = {784, 512, 256, 10};  ///< input, hidden..., classes
};

class Mlp {
 public:
  Mlp(ExecContext& ctx, const MlpConfig& config, uint64_t seed);
  Tensor operator()(ExecContext& ctx, const Tensor& x) const;
  std::vector<Tensor> parameters() const;

 private:
  std::vector<Linear> layers_;
};

/// W2: images{batch, "c", "h", "w"} (or {batch, "h", "w"}: one channel) -> conv3x3+bias+ReLU ->
/// maxpool 2x2 -> conv3x3+bias+ReLU -> maxpool 2x2 -> flatten -> Linear+ReLU -> Linear ->
/// logits{batch, "class"}. Valid convolutions, stride 1.
struct CnnConfig {
  int64_t image = 28, channels = 1, conv1 = 32, conv2 = 64, hidden = 128, classes = 10;
  /// Channels last: a one-channel image gets its "c" axis last, and flatten reads (h, w, c2), so
  /// images{batch, "h", "w", "c"} run every convolution and pool channels last without a copy
  /// (Note [Channels last]). The parameters are the same; only the features' order differs.
  bool channels_last = false;
};

class Cnn {
 public:
  Cnn(ExecContext& ctx, const CnnConfig& config, uint64_t seed);
  Tensor operator()(ExecContext& ctx, const Tensor& images) const;
  std::vector<Tensor> parameters() const;
  int64_t flatFeatures() const { return flat_; }  ///< conv2 · s · s after the second pool

 private:
  friend class PreparedCnn;
  int64_t flat_;
  bool channels_last_;
  Conv2d conv1_, conv2_;
  Linear fc1_, fc2_;
};

/// A Cnn's evaluation path with both convolutions prepared once (prepareConv2dWeights) and both
/// linear layers packed once (packRhs): operator() gives the Cnn's logits within f32 tolerance, as
/// constants (it runs under noGrad). It is a snapshot of the weights and biases when it was made
/// (make a new one after training further), as JS's `model.pack()`.
class PreparedCnn {
 public:
  PreparedCnn(ExecContext& ctx, const Cnn& model);
  Tensor operator()(ExecContext& ctx, const Tensor& images) const;
  /// Convolution i (0 or 1), prepared: which path it takes (winograd()), for reports.
  const PreparedConv2d& conv(int i) const { return i == 0 ? conv1_ : conv2_; }

 private:
  struct PackedLinear {
    PackedLinear(ExecContext& ctx, const Linear& layer);
    PackedRhs weight;
    Tensor bias;  ///< a copy of the layer's bias, or empty
  };
  bool channels_last_;
  PreparedConv2d conv1_, conv2_;
  PackedLinear fc1_, fc2_;
};

/// W3: a byte-level GPT. tokens{batch, "t"} (i32, t <= context) -> logits{batch, "t", "vocab"}.
/// Pre-LayerNorm blocks: x += Proj(CausalSelfAttention(LN1(x))); x += Linear(GELU_erf(Linear(LN2(x)))).
/// Learned position embedding, final LayerNorm, output head tied to the token embedding.
struct GptConfig {
  int64_t vocab = 256, context = 128, d_model = 128, heads = 4, layers = 2, mlp = 512;
  bool checkpoint_blocks = false;  ///< recompute each block in backward (activation checkpointing)
};

class Gpt {
 public:
  Gpt(ExecContext& ctx, const GptConfig& config, uint64_t seed);
  Tensor operator()(ExecContext& ctx, const Tensor& tokens) const;
  /// The same for tokens that continue cache (positions cache.length() onwards, up to context
  /// in all): runs only them, appending their keys and values (Note [KV cache], nn/generate.h).
  /// An empty cache starts at position 0. Blocks are not checkpointed.
  Tensor operator()(ExecContext& ctx, const Tensor& tokens, KvCache& cache) const;
  /// Samples up to options.max_tokens tokens after prompt, calling on_token with each as it is
  /// drawn (return false to stop): one position per token from a KV cache while prompt and
  /// tokens fit in the context, then the last `context` tokens are the context of each step
  /// (nn::generate, nn/generate.h). Runs under noGrad. Returns the new tokens.
  std::vector<int32_t> generate(ExecContext& ctx, std::span<const int32_t> prompt, const GenerateOptions& options,
                                const std::function<bool(int32_t)>& on_token = {}) const;
  /// Mean next-token cross-entropy of tokens[:, :-1] predicting tokens[:, 1:].
  Tensor loss(ExecContext& ctx, const Tensor& tokens) const;
  /// The trainable tensors: every parameter, or after freezeProjections the embeddings and
  /// LayerNorms only.
  std::vector<Tensor> parameters() const;
  const GptConfig& config() const { return config_; }
  /// Makes the blocks' projections (qkv, proj, fc, out) frozen constants, the weights stored as
  /// dtype (f32, f16, bf16, or q8_0 with blocks along each weight's input axis) and the biases as
  /// f32: the fine-tuning setting of a big frozen base under trainable LayerNorms and embeddings.
  /// Gradients still flow through the frozen weights to everything below them.
  void freezeProjections(ExecContext& ctx, DType dtype);

 private:
  struct Block {
    LayerNorm ln1, ln2;
    Linear qkv, proj, fc, out;
    void collect(std::vector<Tensor>& params) const;
  };
  Tensor block(ExecContext& ctx, const Block& b, const Tensor& x, KvCache* cache = nullptr, size_t layer = 0) const;
  Tensor forward(ExecContext& ctx, const Tensor& tokens, KvCache* cache) const;

  GptConfig config_;
  Embedding token_, position_;
  std::vector<Block> blocks_;
  LayerNorm final_;
};

}  // namespace fucina::nn
