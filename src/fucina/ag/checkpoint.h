/// @file
/// Activation checkpointing (§5.5): the block's forward runs grad-free and keeps only its inputs
/// (as views) and one copy of its output; backward re-runs the block to rebuild the subgraph.
/// Memory per checkpoint is O(inputs + output) instead of O(intermediates).
///
/// Contract for block: any callable Tensor(ExecContext&, const Tensor&...) (after `extra` for
/// checkpointWithContext), deterministic and pure in its inputs (dropout with explicit seeds is);
/// no nested checkpoint (its recompute fails with NestedCheckpointRecompute). `extra` is kept by
/// value and passed to every run; tensors reached through it are constants and never receive
/// gradients, so trainable tensors must travel through the inputs.
#pragma once

#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "fucina/ag/tensor.h"

namespace fucina {

using CheckpointBlock = std::function<Tensor(ExecContext&, const std::vector<Tensor>&)>;
/// The type-erased form both templates (and the JS facade) go through.
Tensor checkpointErased(ExecContext& ctx, CheckpointBlock block, const std::vector<Tensor>& inputs);

template <class Block, class... In>
Tensor checkpoint(ExecContext& ctx, Block&& block, const In&... inputs) {
  static_assert((std::is_same_v<In, Tensor> && ...), "checkpoint: inputs must be fucina::Tensor");
  return checkpointErased(
      ctx,
      [block = std::forward<Block>(block)](ExecContext& c, const std::vector<Tensor>& xs) {
        return [&]<size_t... I>(std::index_sequence<I...>) {
          return Tensor(block(c, xs[I]...));
        }(std::index_sequence_for<In...>{});
      },
      std::vector<Tensor>{inputs...});
}

template <class Block, class Extra, class... In>
Tensor checkpointWithContext(ExecContext& ctx, Block&& block, Extra extra, const In&... inputs) {
  static_assert((std::is_same_v<In, Tensor> && ...), "checkpoint: inputs must be fucina::Tensor");
  return checkpointErased(
      ctx,
      [block = std::forward<Block>(block), extra = std::move(extra)](
          ExecContext& c, const std::vector<Tensor>& xs) {
        return [&]<size_t... I>(std::index_sequence<I...>) {
          return Tensor(block(c, extra, xs[I]...));
        }(std::index_sequence_for<In...>{});
      },
      std::vector<Tensor>{inputs...});
}

}  // namespace fucina
