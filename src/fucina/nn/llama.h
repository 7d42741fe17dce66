/// @file
/// The Llama family in the Hugging Face layout (LlamaForCausalLM, Qwen2ForCausalLM: SmolLM2,
/// Qwen2.5, Llama 3.2, ...): RMSNorm, rotary positions, grouped-query attention and a SiLU-gated
/// MLP, for fine-tuning a pretrained model with LoRA (nn/model.h) on a frozen base held as f32,
/// f16, bf16 or q8_0.
///
/// Checkpoints: model.safetensors and config.json as Hugging Face saves them. Tensors (the
/// "model." prefix is optional; "lm_head.weight" is ignored when the head is tied, and so are
/// old files' "....rotary_emb.inv_freq"; anything else is InvalidArgument), in torch's [out, in]:
///   model.embed_tokens.weight [vocab, d]    model.norm.weight [d]    lm_head.weight [vocab, d]
///   model.layers.N.input_layernorm.weight [d]    model.layers.N.post_attention_layernorm.weight [d]
///   model.layers.N.self_attn.{q_proj [H·hd, d], k_proj [Hkv·hd, d], v_proj [Hkv·hd, d],
///                             o_proj [d, H·hd]}.weight  (+ .bias where the config has biases)
///   model.layers.N.mlp.{gate_proj [inter, d], up_proj [inter, d], down_proj [d, inter]}.weight
/// kept in that layout with axes {out, in} named e (model width), q (the query heads), kv (the
/// key/value heads), mlp (inner), vocab. F32, F16 and BF16 files load (Qwen ships bf16).
///
/// config.json: model_type "llama" or "qwen2"; hidden_size, num_hidden_layers,
/// num_attention_heads, intermediate_size, vocab_size, max_position_embeddings (required);
/// num_key_value_heads (default: the heads), head_dim (default hidden_size / heads),
/// rms_norm_eps (1e-6), rope_theta (10000), rope_scaling (null, "linear" or "llama3"),
/// hidden_act ("silu"), tie_word_embeddings (false), and the biases: qwen2 has them on q, k and v;
/// llama's attention_bias puts them on q, k, v and o, its mlp_bias on the MLP's three.
///
/// dtype: the large matrices (the seven projections of every block, the embeddings and the head)
/// are stored in the chosen dtype; the norms and biases stay f32. q8_0 puts its blocks of 32
/// along each matrix's input axis, so hidden_size, heads·head_dim and intermediate_size must be
/// multiples of 32. Loading converts tensor by tensor (Note [Loading tensor by tensor],
/// docs/design-notes.md): the peak is the model as stored plus one file tensor (and its f32
/// widening), never the file's tensors beside the model.
///
/// Axes: tokens{batch..., "t"} (i32/i64) -> logits{batch..., "t", "vocab"}.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fucina/ag/tensor.h"
#include "fucina/nn/generate.h"
#include "fucina/nn/lora.h"
#include "fucina/nn/model.h"
#include "fucina/nn/rotary_tables.h"

namespace fucina::nn {

/// A Llama-family model's sizes, as config.json gives them (file comment).
struct LlamaConfig {
  std::string model_type = "llama";  ///< "llama" or "qwen2"
  int64_t vocab = 0, d_model = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, inner = 0, positions = 0;
  double eps = 1e-6, rope_theta = 10000.0;
  bool tied = false;                                          ///< the head is embed_tokens
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  /// rope_scaling: none, linear (positions / factor) or llama3 (Llama 3.1+'s frequency bands).
  enum class RopeScaling { none, linear, llama3 } rope_scaling = RopeScaling::none;
  double rope_factor = 1, low_freq_factor = 1, high_freq_factor = 4;
  int64_t original_positions = 8192;

  /// Reads config.json (InvalidArgument names a missing, mistyped or unsupported field).
  static LlamaConfig fromJson(std::string_view json);
  /// The fields above in config.json's names, for Hugging Face tools.
  std::string toJson() const;
  /// The rotary inverse frequencies, one per pair of head dims (head_dim / 2), scaled as
  /// rope_scaling says.
  std::vector<double> inverseFrequencies() const;
};

class Llama : public Model {
 public:
  /// A model with Hugging Face's initialisation (weights N(0, 0.02), biases zero, norms ones)
  /// drawn from seed, then stored as options say.
  Llama(ExecContext& ctx, const LlamaConfig& config, uint64_t seed, const ModelOptions& options = {});
  /// Loads model.safetensors bytes and config.json (file comment), tensor by tensor. Every tensor
  /// is checked against the config (ShapeMismatch names it, expected and found).
  static Llama load(ExecContext& ctx, std::span<const uint8_t> safetensors, std::string_view config_json,
                    DType dtype = DType::f32);
  static Llama load(ExecContext& ctx, std::span<const uint8_t> safetensors, std::string_view config_json,
                    const ModelOptions& options);

  /// Builds a model from tensors given one at a time in any order (what load does with a file;
  /// the JavaScript facade feeds it from a file it keeps outside the wasm heap). Each tensor is
  /// checked and stored as it comes, so only it and the model are alive.
  class Loader {
   public:
    Loader(std::string_view config_json, const ModelOptions& options);
    Loader(Loader&&) noexcept;
    Loader& operator=(Loader&&) noexcept;
    ~Loader();
    /// One file tensor by its Hugging Face name (f32, f16 or bf16).
    void add(ExecContext& ctx, const std::string& name, const Tensor& value);
    /// The model (InvalidArgument when a tensor is missing). The loader is empty afterwards.
    Llama finish();

   private:
    std::unique_ptr<Llama> model_;
  };

  /// tokens{batch..., t} (i32/i64, 1 <= t <= positions) -> logits{batch..., t, vocab}.
  Tensor logits(ExecContext& ctx, const Tensor& tokens) const;
  /// The same for tokens that continue cache (Note [KV cache], nn/generate.h): keys (rotated) and
  /// values of the kv heads are cached. Blocks are not checkpointed.
  Tensor logits(ExecContext& ctx, const Tensor& tokens, KvCache& cache) const;
  /// Mean next-token cross-entropy of tokens[.., :-1] predicting tokens[.., 1:].
  Tensor loss(ExecContext& ctx, const Tensor& tokens) const;
  /// Samples up to options.max_tokens tokens after prompt (nn::generate, nn/generate.h).
  std::vector<int32_t> generate(ExecContext& ctx, std::span<const int32_t> prompt, const GenerateOptions& options,
                                const std::function<bool(int32_t)>& on_token = {}) const;

  /// The base's tensors by Hugging Face name ("model.embed_tokens.weight", ...; "lm_head.weight"
  /// only when untied).
  std::vector<std::pair<std::string, Tensor>> namedTensors() const override;

  const LlamaConfig& config() const { return config_; }
  /// The layers LoRA adapts (Model::layers): layers.N.self_attn.{q,k,v,o}_proj and
  /// layers.N.mlp.{gate,up,down}_proj; their adapters' PEFT names start "base_model.model.model.".
  std::vector<std::pair<std::string, LoraLinear*>> layers() override;
  std::vector<std::pair<std::string, const LoraLinear*>> layers() const override;
  void forEachTensor(const std::function<void(Tensor&)>& f) override;

 private:
  struct Block {
    Tensor ln1, ln2;
    LoraLinear q, k, v, o, gate, up, down;
  };
  Llama(const LlamaConfig& config, const ModelOptions& options);
  // Loading: put checks and stores one file tensor in its slot; assemble makes the blocks once
  // every slot is filled (InvalidArgument names a missing tensor).
  void put(ExecContext& ctx, const std::string& file_name, const Tensor& value);
  void assemble();
  template <class Self>
  static auto layersOf(Self& self);
  Tensor block(ExecContext& ctx, const Block& b, const Tensor& x, const Tensor& cos, const Tensor& sin,
               std::optional<uint64_t> dropout_seed, KvCache* cache = nullptr, size_t layer = 0) const;
  Tensor forward(ExecContext& ctx, const Tensor& tokens, KvCache* cache) const;

  LlamaConfig config_;
  RotaryTables rotary_;  // Note [Rotary tables kept]
  Tensor embed_, norm_, head_;  // head_ is embed_ when tied
  std::vector<Block> blocks_;
  // While loading: each block's tensors by slot (Loader), moved into blocks_ at the end.
  std::vector<std::vector<Tensor>> pending_;
};

}  // namespace fucina::nn
