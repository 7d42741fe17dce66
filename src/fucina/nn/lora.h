/// @file
/// LoRA (low-rank adaptation, Hu et al. 2021; PyTorch's peft): a frozen linear layer plus a
/// trainable low-rank update,
///   y{..., out} = x{..., in} · W{in, out} (+ bias{out}) + (alpha / rank) · (drop(x) · Aᵀ) · Bᵀ
/// with W frozen in any of f32/f16/bf16/q8_0 (the mixed-precision contractions read it as it is
/// stored), A{rank, in} and B{out, rank} trainable f32 leaves (peft's lora_A.weight and
/// lora_B.weight): A ~ U(±1/sqrt(in)) from a seed (peft's kaiming_uniform(a=√5)), B zero, so a
/// fresh adapter leaves the layer's output unchanged. The axis of the rank is "rank".
///
/// Note [Recompute-safe LoRA dropout]: the adapter's dropout mask is a function of (seed, index)
/// (Tensor::dropout), and both the seed and the choice to drop at all are arguments of the
/// forward call, made by the caller before any checkpoint captures them: a checkpointed block's
/// forward runs without recording and its recompute with it, so neither may decide by itself.
/// The recompute therefore draws the same mask as the forward run, and a model that advances the
/// seed per training call (nn::Gpt2: while gradients are recorded) gets a new mask per step;
/// without a seed (evaluation, generation) the adapter reads x as it is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina::nn {

/// What nn::lora adds to a model (names as peft's LoraConfig).
struct LoraOptions {
  int64_t rank = 8;        ///< r: the inner width of the update
  double alpha = 8;        ///< lora_alpha: the update is scaled by alpha / rank
  double dropout = 0;      ///< lora_dropout: on the adapter's input only, in [0, 1)
  /// Layers to adapt: a layer whose dotted name (nn::Gpt2: "h.3.attn.c_attn") equals one of
  /// these or ends with "." + one of these. "c_proj" matches the attention's and the MLP's.
  std::vector<std::string> targets = {"c_attn"};
  uint64_t seed = 0;       ///< A's initialisation and the dropout masks
};

/// Checks an adapter's hyperparameters: InvalidArgument on rank < 1, a negative or non-finite
/// alpha, or dropout outside [0, 1).
void checkLora(int64_t rank, double alpha, double dropout);

/// A frozen linear map with an optional LoRA adapter (see the file comment).
struct LoraLinear {
  Tensor weight;  ///< {in, out} or {out, in}: frozen, any of f32/f16/bf16/q8_0
  Tensor bias;    ///< {out} f32 constant, or an empty handle
  Tensor a, b;    ///< {rank, in}, {out, rank} f32 leaves; empty handles when not adapted
  Tag in, out;
  double scale = 0;    ///< alpha / rank
  double dropout = 0;

  /// The frozen layer alone (weight and bias are stored as given; detach them first if they
  /// were leaves).
  LoraLinear(Tensor weight, Tensor bias, Tag in, Tag out);
  /// Adds (or replaces) the adapter (checkLora's errors).
  void adapt(ExecContext& ctx, int64_t rank, double alpha, double dropout, uint64_t seed);
  bool adapted() const { return a.defined(); }
  /// x{..., in} -> {..., out}. With a dropout_seed (training), the adapter's input goes through
  /// dropout with the mask that seed chooses (Note [Recompute-safe LoRA dropout]).
  Tensor operator()(ExecContext& ctx, const Tensor& x, std::optional<uint64_t> dropout_seed = std::nullopt) const;
  /// W + scale·(B·A) as a new f32 constant with W's axes and layout (W alone when not adapted):
  /// the adapter folded in, for export or faster inference.
  Tensor merge(ExecContext& ctx) const;
};

}  // namespace fucina::nn
