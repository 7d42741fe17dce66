/// @file
/// GPT-2 (Radford et al. 2019) in the Hugging Face layout, for fine-tuning a pretrained model with
/// LoRA (nn/lora.h) on a frozen base held as f32, f16, bf16 or q8_0.
///
/// Checkpoints: model.safetensors and config.json as Hugging Face's GPT2Model/GPT2LMHeadModel
/// save them. Tensors (an optional "transformer." prefix is accepted; "lm_head.weight",
/// "h.N.attn.bias" and "h.N.attn.masked_bias" are ignored; anything else is InvalidArgument):
///   wte.weight [vocab, d]   wpe.weight [positions, d]   ln_f.{weight,bias} [d]
///   h.N.ln_1.{weight,bias} [d]     h.N.attn.c_attn.{weight [d, 3d], bias [3d]}
///   h.N.attn.c_proj.{weight [d, d], bias [d]}     h.N.ln_2.{weight,bias} [d]
///   h.N.mlp.c_fc.{weight [d, inner], bias [inner]}  h.N.mlp.c_proj.{weight [inner, d], bias [d]}
/// The projections are Conv1D weights stored [in, out], kept in that layout with axes named
/// {in, out}: e (model width), qkv (the fused projection), ao (attention output), mlp (inner).
/// F32, F16 and BF16 files load; config.json gives n_embd, n_layer, n_head, n_positions (or
/// n_ctx), vocab_size, n_inner (null: 4·n_embd), layer_norm_epsilon, activation_function
/// (gelu_new / gelu_pytorch_tanh: the tanh GELU; gelu: the exact one) and tie_word_embeddings
/// (must not be false: the head is tied to wte).
///
/// dtype: the base's large matrices (the four projections of every block and wte, which is also
/// the tied head) are stored in the chosen dtype; wpe, the LayerNorms and the biases stay f32.
/// q8_0 puts its blocks of 32 along each matrix's input axis (e for wte and the tied head), so
/// those extents must be multiples of 32 (GPT-2's are). A frozen base is made of constants; with
/// `trainable` (f32 only) every parameter is a leaf instead (full fine-tuning, or training a
/// model from scratch).
///
/// Axes: tokens{batch..., "t"} (i32/i64) -> logits{batch..., "t", "vocab"}.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fucina/ag/tensor.h"
#include "fucina/nn/generate.h"
#include "fucina/nn/layers.h"
#include "fucina/nn/lora.h"
#include "fucina/nn/model.h"

namespace fucina::nn {

/// A GPT-2's sizes, as config.json gives them (defaults: GPT-2 small).
struct Gpt2Config {
  int64_t vocab = 50257, positions = 1024, d_model = 768, heads = 12, layers = 12, inner = 3072;
  double eps = 1e-5;
  bool gelu_tanh = true;  ///< gelu_new (true) or the exact erf GELU

  /// Reads config.json (InvalidArgument names a missing, mistyped or out-of-range field).
  static Gpt2Config fromJson(std::string_view json);
  /// The config.json fields above, with model_type "gpt2", for Hugging Face tools.
  std::string toJson() const;
};

using Gpt2Options = ModelOptions;

class Gpt2 : public Model {
 public:
  /// A model with Hugging Face's initialisation (weights N(0, 0.02), biases zero, LayerNorms
  /// ones and zeros) drawn from seed, then stored as options say.
  Gpt2(ExecContext& ctx, const Gpt2Config& config, uint64_t seed, const Gpt2Options& options = {});
  /// Loads model.safetensors bytes and config.json (file comment). Every tensor is checked
  /// against the config (ShapeMismatch names it, expected and found).
  static Gpt2 load(ExecContext& ctx, std::span<const uint8_t> safetensors, std::string_view config_json,
                   DType dtype = DType::f32);
  static Gpt2 load(ExecContext& ctx, std::span<const uint8_t> safetensors, std::string_view config_json,
                   const Gpt2Options& options);

  /// tokens{batch..., t} (i32/i64, 1 <= t <= positions) -> logits{batch..., t, vocab}.
  Tensor logits(ExecContext& ctx, const Tensor& tokens) const;
  /// The same for tokens that continue cache (positions cache.length() onwards, up to
  /// positions in all): runs only them, appending their keys and values (Note [KV cache],
  /// nn/generate.h). An empty cache starts at position 0. Blocks are not checkpointed.
  Tensor logits(ExecContext& ctx, const Tensor& tokens, KvCache& cache) const;
  /// Mean next-token cross-entropy of tokens[.., :-1] predicting tokens[.., 1:].
  Tensor loss(ExecContext& ctx, const Tensor& tokens) const;
  /// Samples up to options.max_tokens tokens after prompt, calling on_token with each as it is
  /// drawn (return false to stop): one position per token from a KV cache while prompt and
  /// tokens fit in `positions`, then the last `positions` tokens are the context of each step
  /// (nn::generate, nn/generate.h). Runs under noGrad. Returns the new tokens.
  std::vector<int32_t> generate(ExecContext& ctx, std::span<const int32_t> prompt, const GenerateOptions& options,
                                const std::function<bool(int32_t)>& on_token = {}) const;

  /// The base's tensors by Hugging Face name, in the file's order (Model::namedTensors).
  std::vector<std::pair<std::string, Tensor>> namedTensors() const override;

  const Gpt2Config& config() const { return config_; }
  /// The layers LoRA adapts (Model::layers): h.N.attn.c_attn, h.N.attn.c_proj, h.N.mlp.c_fc,
  /// h.N.mlp.c_proj; their adapters' PEFT names start "base_model.model.transformer.".
  std::vector<std::pair<std::string, LoraLinear*>> layers() override;
  std::vector<std::pair<std::string, const LoraLinear*>> layers() const override;
  void forEachTensor(const std::function<void(Tensor&)>& f) override;

 private:
  struct Block {
    Tensor ln1_w, ln1_b, ln2_w, ln2_b;
    LoraLinear c_attn, attn_proj, c_fc, mlp_proj;
  };
  Gpt2(const Gpt2Config& config, const Gpt2Options& options);
  template <class Self>
  static auto layersOf(Self& self);
  Tensor block(ExecContext& ctx, const Block& b, const Tensor& x, std::optional<uint64_t> dropout_seed,
               KvCache* cache = nullptr, size_t layer = 0) const;
  Tensor forward(ExecContext& ctx, const Tensor& tokens, KvCache* cache) const;

  Gpt2Config config_;
  Tensor wte_, wpe_, lnf_w_, lnf_b_;
  std::vector<Block> blocks_;
};

}  // namespace fucina::nn
