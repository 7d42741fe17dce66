/// @file
/// nn::Model: what the pretrained language models (nn::Gpt2, nn::Llama) share. Their frozen base
/// is stored in a chosen dtype, their linear layers (LoraLinear, by dotted name) take LoRA
/// adapters, and the adapters travel as files:
///   - saveAdapters / loadAdapters: adapter_model.safetensors with PEFT's tensor names, plus
///     fucina's LoRA options in the metadata ("fucina.lora"), so one file rebuilds them;
///   - exportPeft / loadPeft: PEFT's pair of files, adapter_model.safetensors and
///     adapter_config.json, for PyTorch's peft (PeftModel.from_pretrained) and back.
///
/// PEFT's names: "<prefix><layer>.lora_A.weight" [rank, in] and "...lora_B.weight" [out, rank],
/// prefix "base_model.model.transformer." for GPT-2 (its Conv1D layers, fan_in_fan_out true) and
/// "base_model.model.model." for Llama-family models.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fucina/ag/checkpoint.h"
#include "fucina/ag/tensor.h"
#include "fucina/nn/lora.h"

namespace fucina::nn {

/// How a pretrained model stores its base (nn::Gpt2, nn::Llama).
struct ModelOptions {
  DType dtype = DType::f32;        ///< the large matrices' dtype: f32, f16, bf16 or q8_0
  bool trainable = false;          ///< every parameter a leaf (f32 only)
  bool checkpoint_blocks = false;  ///< recompute each block in backward (frozen weights ride in
                                   ///< the checkpoint's captured block: constants, like `extra`)
};

/// The PEFT files of a model's adapters.
struct PeftAdapter {
  std::vector<uint8_t> safetensors;  ///< adapter_model.safetensors
  std::string config_json;           ///< adapter_config.json
};

class Model {
 public:
  virtual ~Model() = default;

  /// The layers LoRA can adapt, by dotted name ("h.0.attn.c_attn", "layers.0.self_attn.q_proj"),
  /// in model order.
  virtual std::vector<std::pair<std::string, LoraLinear*>> layers() = 0;
  virtual std::vector<std::pair<std::string, const LoraLinear*>> layers() const = 0;
  /// The base's tensors by Hugging Face name, in the file's order (as stored: their dtype, axes
  /// and, when trainable, the leaves themselves).
  virtual std::vector<std::pair<std::string, Tensor>> namedTensors() const = 0;

  /// The base in the Hugging Face layout (F32 for f32 models, F16/BF16 as stored, q8_0
  /// dequantized to F32), adapters not included (mergeAdapters first to fold them in).
  std::vector<uint8_t> save(ExecContext& ctx) const;

  /// The trainable tensors: every parameter when trainable, else the LoRA adapters (A, B of each
  /// adapted layer in model order), else none.
  std::vector<Tensor> parameters() const;

  /// LoRA: adapts the layers options.targets names (LoraOptions::targets); returns the new
  /// adapters (A, B per layer). InvalidArgument when a target matches no layer or the model
  /// already has adapters; a refused call changes nothing.
  std::vector<Tensor> addLora(ExecContext& ctx, const LoraOptions& options);
  /// The adapters alone as safetensors (PEFT's names, fucina's options in the metadata).
  /// `values`, when given, are the adapters' values on the host (A, B of each adapted layer in
  /// model order, as adapters() lists them), saved in place of the model's own: how a model on a
  /// device saves them once they are read back (the JS facade's exportPeftAsync). Without them a
  /// model on a device is DeviceReadIsAsync.
  std::vector<uint8_t> saveAdapters(ExecContext& ctx, std::span<const Tensor> values = {}) const;
  /// The adapters: A, B of each adapted layer, in model order.
  std::vector<Tensor> adapters() const;
  /// Loads saveAdapters' bytes (or PEFT's adapter_model.safetensors with `options`): adds the
  /// adapters first when the model has none, then copies the values in place. A model that has
  /// adapters takes only a file (and options) of the same rank, alpha and targets. A refused
  /// file leaves the model as it was.
  void loadAdapters(ExecContext& ctx, std::span<const uint8_t> bytes, std::optional<LoraOptions> options = {});
  /// Folds every adapter into its weight (LoraLinear::merge): those weights become f32 (leaves
  /// when the model is trainable, else constants) and the adapters are gone.
  void mergeAdapters(ExecContext& ctx);

  /// Moves every tensor of the model to device (Note [Device contexts]): its frozen weights as
  /// they are stored (q8_0 blocks too), its leaves (the adapters, or every parameter when
  /// trainable) as new leaves there, a tied head staying the embedding. The old tensors are
  /// released; a parameter list or optimizer made before holds the old leaves. To the cpu from a
  /// device is DeviceReadIsAsync, as Tensor::to.
  void to(ExecContext& ctx, Device device);
  /// Where the model's tensors are (Device::cpu until to()).
  Device device() const { return device_; }

  /// The adapters' options (none when the model has no adapters).
  const std::optional<LoraOptions>& loraOptions() const { return lora_; }
  DType dtype() const { return options_.dtype; }
  bool trainable() const { return options_.trainable; }
  bool checkpointBlocks() const { return options_.checkpoint_blocks; }
  void setCheckpointBlocks(bool on) { options_.checkpoint_blocks = on; }

  /// "Gpt2", "Llama": the prefix of the model's error messages.
  const std::string& kind() const { return kind_; }
  /// PEFT's prefix of the layers' names and its fan_in_fan_out (file comment).
  const std::string& peftPrefix() const { return peft_prefix_; }
  bool fanInFanOut() const { return fan_in_fan_out_; }

 protected:
  /// layer_hint lists the layer names for errors ("h.N.attn.c_attn, ..."). Checks the options
  /// (InvalidArgument: a dtype other than f32/f16/bf16/q8_0, or trainable with another than f32).
  Model(std::string kind, std::string layer_hint, std::string peft_prefix, bool fan_in_fan_out,
        const ModelOptions& options);
  Model(const Model&) = default;
  Model(Model&&) = default;
  Model& operator=(const Model&) = default;
  Model& operator=(Model&&) = default;

  /// Calls f with every tensor slot of the model (a tied head's slot too), in model order.
  virtual void forEachTensor(const std::function<void(Tensor&)>& f) = 0;

  /// value (a constant: decoded from a file or drawn) as the model stores it: an f32 leaf when
  /// trainable, else a constant, in the model's dtype when `large` (q8_0 blocks along
  /// block_axis) and f32 otherwise. A value that already has that dtype is kept as it is.
  Tensor store(ExecContext& ctx, const Tensor& value, bool large, Tag block_axis) const;
  /// Checks tokens{batch..., "t"} for a forward: i32 or i64 (else DTypeMismatch), with a "t" axis
  /// and none of the axes the model makes (`own` and "rank"; else ShapeMismatch).
  void checkTokens(const Tensor& tokens, std::initializer_list<Tag> own) const;
  /// Mean next-token cross-entropy of tokens[.., :-1] predicting tokens[.., 1:], the logits from
  /// `logits` (t from 2 to positions + 1, else InvalidArgument).
  Tensor nextTokenLoss(ExecContext& ctx, const Tensor& tokens, int64_t positions,
                       const std::function<Tensor(const Tensor&)>& logits) const;
  /// The LoRA dropout seed of a forward call (Note [Recompute-safe LoRA dropout]): a new one per
  /// recorded forward when the adapters drop out, none otherwise (no dropout).
  std::optional<uint64_t> callSeed() const;

  ModelOptions options_;
  std::optional<LoraOptions> lora_;

 private:
  std::string kind_, layer_hint_, peft_prefix_;
  bool fan_in_fan_out_;
  mutable uint64_t training_calls_ = 0;  // advances the dropout seed per recorded forward
  Device device_ = Device::cpu;
};

/// run(ctx, b, x) as a checkpointed block (ag/checkpoint.h): the block's trainable tensors (those
/// of slots(b) that require gradients) are the checkpoint's inputs with x and are rebound in the
/// recompute; the frozen ones stay captured in the block (constants, as through `extra`).
template <class Block, class Slots, class Run>
Tensor checkpointBlock(ExecContext& ctx, const Block& b, const Tensor& x, Slots slots, Run run) {
  std::vector<Tensor> inputs{x};
  for (const Tensor* s : slots(b))
    if (s->defined() && s->requiresGrad()) inputs.push_back(*s);
  return checkpointErased(ctx, [b, slots, run](ExecContext& c, const std::vector<Tensor>& xs) {
    Block local = b;
    size_t next = 1;
    for (Tensor* s : slots(local))
      if (s->defined() && s->requiresGrad()) *s = xs[next++];
    return run(c, local, xs[0]);
  }, inputs);
}

/// The adapters of nn::lora's users: model.addLora(ctx, options) (API.md's name).
std::vector<Tensor> lora(ExecContext& ctx, Model& model, const LoraOptions& options);

/// The model's adapters as PEFT's files (file comment): InvalidArgument when it has none.
/// adapter_config.json: peft_type "LORA", task_type "CAUSAL_LM", r, lora_alpha, target_modules,
/// lora_dropout, bias "none", fan_in_fan_out, and PEFT's defaults for the rest. values: as
/// Model::saveAdapters takes them.
PeftAdapter exportPeft(ExecContext& ctx, const Model& model, std::span<const Tensor> values = {});
/// Reads PEFT's files back (loadAdapters with the options adapter_config.json gives), onto a
/// model with no adapters or with adapters of the same options. target_modules is a list of
/// names (matched as PEFT does: the whole name or its last dotted parts) or "all-linear"; a
/// regular expression is InvalidArgument here (the JavaScript facade matches one against PEFT's
/// module names, "model.layers.0.self_attn.q_proj", and passes the list). What fucina's LoRA does
/// not do is InvalidArgument, named: a peft_type other than
/// LORA, bias other than "none", use_rslora, use_dora, rank_pattern, alpha_pattern,
/// layers_to_transform, modules_to_save.
void loadPeft(ExecContext& ctx, Model& model, std::span<const uint8_t> safetensors, std::string_view config_json);

}  // namespace fucina::nn
