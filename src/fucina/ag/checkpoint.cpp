#include "fucina/ag/checkpoint.h"

#include <atomic>
#include <mutex>
#include <utility>

#include "fucina/ag/control.h"
#include "fucina/ag/engine.h"
#include "fucina/core/error.h"
#include "fucina/exec/scope.h"

namespace fucina {

using internal::RawTensor;

namespace {

// Note [Recompute lock]: recomputes are serialized by one process-wide mutex. The lock is not
// reentrant, so a nested checkpoint's recompute (which would run on the same thread, the inner
// backward being serial) is detected by a thread-local flag and refused instead of deadlocking.
std::mutex recompute_mutex;
thread_local bool recomputing = false;
thread_local int tail_depth = 0;  // open TailScopes on this thread
std::atomic<uint64_t> deferred_count{0}, computed_count{0};

Tensor requireOutput(const Tensor& y) {
  if (!y.defined()) fail(ErrorCode::InvalidArgument, "checkpoint: the block returned an empty tensor");
  ops::requireF32("checkpoint", y);
  return y;
}

class CheckpointRecord final : public BackwardFunction {
 public:
  CheckpointRecord(CheckpointBlock block, std::vector<RawTensor> inputs,
                   std::vector<std::shared_ptr<GradState>> operands, Tags tags, Extents shape)
      : block_(std::move(block)),
        inputs_(std::move(inputs)),
        operands_(std::move(operands)),
        tags_(std::move(tags)),
        shape_(std::move(shape)) {}

  std::span<const std::shared_ptr<GradState>> operands() const override { return operands_; }
  std::string_view name() const override { return "checkpoint"; }

  void backward(ExecContext& ctx, const RawTensor& gy, std::span<const bool> needs_grad,
                std::span<std::optional<RawTensor>> out) override {
    if (recomputing)
      fail(ErrorCode::NestedCheckpointRecompute,
           "a checkpoint inside a checkpointed block cannot be recomputed; checkpoint the blocks "
           "side by side instead of nesting them");
    std::lock_guard lock(recompute_mutex);
    recomputing = true;
    struct Reset {
      int tail = std::exchange(tail_depth, 0);  // only the block's own checkpointTail counts
      ~Reset() { recomputing = false, tail_depth = tail; }
    } reset;
    internal::ForceGradScope grad_on;  // rebuild the subgraph even if backward runs under noGrad
    ExecScope scope(ctx);              // everything the recompute makes dies with it
    const uint64_t boundary = GradState::nextGeneration();
    std::vector<Tensor> xs;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      auto leaf = needs_grad[i] ? std::make_shared<GradState>(inputs_[i].tags(), inputs_[i].shape())
                                : nullptr;
      xs.push_back(Tensor::make(ctx, inputs_[i], std::move(leaf)));  // views, no copies
    }
    Tensor y = requireOutput(block_(ctx, xs));
    if (!y.requiresGrad())
      fail(ErrorCode::CheckpointOutputNotDifferentiable,
           "checkpoint: the re-run block's output carries no graph (it does not depend on any "
           "grad-requiring input through differentiable ops)");
    if (y.tags() != tags_ || y.shape() != shape_)
      fail(ErrorCode::ShapeMismatch, "checkpoint: the re-run block returned " + y.value().describe() +
                                         " but the first run returned " + describe(tags_, shape_) +
                                         "; the block must be deterministic");
    y.gradState()->setGrad(gy);  // installed, so the inner pass adds no implicit seed
    const Tensor outputs[] = {y};
    ag::backwardGradSerialWithin(ctx, outputs, boundary);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!needs_grad[i]) continue;
      auto g = xs[i].gradState()->gradView();
      if (!g)
        fail(ErrorCode::CheckpointMissingInputGradient,
             "checkpoint: input " + std::to_string(i) + " " + inputs_[i].describe() +
                 " requires gradients but the block's graph gave it none");
      out[i] = std::move(*g);
    }
  }

 private:
  CheckpointBlock block_;
  std::vector<RawTensor> inputs_;
  std::vector<std::shared_ptr<GradState>> operands_;
  Tags tags_;
  Extents shape_;
};

}  // namespace

namespace internal {
TailScope::TailScope() { ++tail_depth; }
TailScope::~TailScope() { --tail_depth; }
bool deferringValues() { return recomputing && tail_depth > 0; }
PendingValueCounts pendingValueCounts() { return {deferred_count.load(), computed_count.load()}; }
void countPendingValueDeferred() { deferred_count.fetch_add(1, std::memory_order_relaxed); }
void countPendingValueComputed() { computed_count.fetch_add(1, std::memory_order_relaxed); }
}  // namespace internal

Tensor checkpointErased(ExecContext& ctx, CheckpointBlock block, const std::vector<Tensor>& inputs) {
  bool any_grad = false;
  for (const Tensor& t : inputs) any_grad = any_grad || t.requiresGrad();
  if (!any_grad) {  // nothing to differentiate: a plain grad-free forward
    NoGradScope no_grad = noGrad();
    return requireOutput(block(ctx, inputs));
  }
  // Checkpoint keys on its inputs alone: inside noGrad it still records its node.
  RawTensor output;
  {
    ExecScope scope(ctx);  // the block's intermediates are released when it closes
    NoGradScope no_grad = noGrad();
    std::vector<Tensor> constants;
    for (const Tensor& t : inputs) constants.push_back(t.detach(ctx));
    // One deep copy, so a view into an intermediate cannot keep the intermediate alive.
    output = requireOutput(block(ctx, constants)).value().clone(ctx);
  }
  std::vector<RawTensor> saved;
  std::vector<std::shared_ptr<GradState>> operands;
  for (const Tensor& t : inputs) {
    saved.push_back(t.value());
    operands.push_back(t.impl()->gradState());
  }
  auto record = std::make_unique<CheckpointRecord>(std::move(block), std::move(saved),
                                                   std::move(operands), output.tags(), output.shape());
  auto state = std::make_shared<GradState>(output.tags(), output.shape(), std::move(record));
  return Tensor::make(ctx, std::move(output), std::move(state));
}

}  // namespace fucina
