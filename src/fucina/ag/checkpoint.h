/// @file
/// Activation checkpointing: the block's forward runs grad-free and keeps only its inputs
/// (as views) and one copy of its output; backward re-runs the block to rebuild the subgraph.
/// Memory per checkpoint is O(inputs + output) instead of O(intermediates).
///
/// Contract for block: any callable Tensor(ExecContext&, const Tensor&...) (after `extra` for
/// checkpointWithContext), deterministic and pure in its inputs (dropout with explicit seeds is);
/// no nested checkpoint (its recompute fails with NestedCheckpointRecompute). `extra` is kept by
/// value and passed to every run; tensors reached through it are constants and never receive
/// gradients, so trainable tensors must travel through the inputs.
///
/// Note [Checkpoint tail]: the recompute rebuilds the block's graph so that the inner backward can
/// read what the VJPs saved. The block output's own value is never read there (the outer pass
/// already holds it; its gradient is installed with setGrad), and neither is any value that only
/// feeds the output through VJPs that do not read it: in a residual block `h + out(g)`, the last
/// product and the sum (a third of a transformer block's products). Inside checkpointTail(f),
/// during a recompute, the ops that can (contractions, and elementwise ops whose VJP does not read
/// their own result) record their VJP and leave their value pending: its tags, shape and dtype are
/// known, and the first read of the value (a later op, a VJP saving it) computes it with the same
/// kernel, so every value that is read has the same bits as without the tail. Values nobody reads
/// are never computed. Anywhere else — the block's first run, a plain forward — checkpointTail(f)
/// just returns f().
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

namespace internal {
// Marks the running block's tail for this thread (Note [Checkpoint tail]).
class TailScope {
 public:
  TailScope();
  ~TailScope();
  TailScope(const TailScope&) = delete;
  TailScope& operator=(const TailScope&) = delete;
};
}  // namespace internal

/// Runs tail(), the last ops of a checkpointed block, whose values the recompute computes only
/// where something reads them (Note [Checkpoint tail]). Outside a recompute it is tail().
template <class Tail>
Tensor checkpointTail(Tail&& tail) {
  internal::TailScope scope;
  return Tensor(std::forward<Tail>(tail)());
}

}  // namespace fucina
