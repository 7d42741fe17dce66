/// @file
/// GradState: the accumulated gradient, the VJP record and the scheduling state of one
/// tensor that takes part in autograd. Leaves (variables) have no record.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "fucina/ag/backward_function.h"
#include "fucina/core/raw_tensor.h"

namespace fucina {

class GradState {
 public:
  /// tags/shape: those of the tensor this state belongs to (gradients must match them).
  GradState(Tags tags, Extents shape, std::unique_ptr<BackwardFunction> grad_fn = nullptr);
  ~GradState();
  GradState(const GradState&) = delete;
  GradState& operator=(const GradState&) = delete;

  // Reading, seeding and resetting the gradient, all thread-safe under grad_mutex.
  void setGrad(internal::RawTensor grad);  ///< replaces; unchecked low-level hook
  void zeroGrad();
  std::optional<internal::RawTensor> gradClone(ExecContext& ctx);  ///< deep copy
  std::optional<internal::RawTensor> gradView();                   ///< shares the buffer
  bool hasGrad();

  bool isLeaf() const { return grad_fn_ == nullptr; }
  BackwardFunction* gradFn() const { return grad_fn_.get(); }
  const Tags& tags() const { return tags_; }
  const Extents& shape() const { return shape_; }
  /// States are numbered in creation order; a pass may be limited to states made at or after a
  /// given number (the checkpoint recompute, so tensors reached through `extra` stay constant).
  uint64_t generation() const { return generation_; }
  static uint64_t nextGeneration();

  // --- engine internals (ag/engine.cpp) ---
  /// Adds a contribution, copying first when the accumulator's buffer is shared (copy-on-write).
  /// With a slice, the contribution is that slice's gradient, zero elsewhere (Note [Placed
  /// gradients], ag/backward_function.h).
  void accumulate(ExecContext& ctx, internal::RawTensor contribution, const GradientSlice* slice = nullptr);
  /// Note [Interior consumption] (engine.cpp): the pass in flight that claimed this record's
  /// state (0 when none), and whether a completed pass consumed it. Leaves are never claimed.
  std::atomic<uint64_t> claimed_by{0};
  std::atomic<uint32_t> pending_grads{0};
  std::atomic<bool> backward_done{false};

 private:
  Tags tags_;
  Extents shape_;
  uint64_t generation_;
  std::unique_ptr<BackwardFunction> grad_fn_;
  std::mutex grad_mutex_;
  std::optional<internal::RawTensor> grad_;
};

}  // namespace fucina
