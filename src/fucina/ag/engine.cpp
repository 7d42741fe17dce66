#include "fucina/ag/engine.h"

#include <exception>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "fucina/core/error.h"

namespace fucina::ag {
namespace {

using internal::RawTensor;

// Note [Seeds before scheduling]: every output is validated and its implicit seed made before
// any pending counter is touched. A counter stranded by a failed seeding would make the next pass
// stop at a node still marked pending and report success with gradients missing.
struct Seed {
  GradState* state;
  std::optional<RawTensor> implicit;  // the +1 seed of a scalar output that holds no gradient
};

std::vector<Seed> validateOutputs(ExecContext& ctx, std::span<const Tensor> outputs) {
  std::vector<Seed> seeds;
  for (const Tensor& out : outputs) {
    GradState* state = out.gradState();
    if (!state)
      fail(ErrorCode::NoGradientGraph,
           "backward on a tensor that does not require gradients " + out.value().describe() +
               ": no operand was a variable, or it was computed under noGrad");
    if (state->backward_done)
      fail(ErrorCode::BackwardAlreadyRun,
           "backward already ran over this graph (its interior gradients are spent); build a "
           "fresh forward graph for another pass");
    Seed seed{state, std::nullopt};
    if (!state->hasGrad()) {
      if (out.numel() != 1)
        fail(ErrorCode::MissingOutputGradient,
             "output " + out.value().describe() +
                 " is not a scalar; seed it with backwardWithGrad(ctx, grad_output)");
      seed.implicit = RawTensor::full(ctx, out.tags(), out.shape(), 1.0);
    }
    seeds.push_back(std::move(seed));
  }
  return seeds;
}

// Note [Pending counters]: one walk from the outputs adds one to a state's pending_grads per
// consumer edge and flips it idle -> pending on first visit. A record runs only when its
// counter drains to zero, i.e. after every downstream contribution has arrived, so a value used
// by several branches propagates its complete gradient exactly once.
// Whether an operand slot takes part in a pass limited to states made at or after `boundary`.
bool inPass(const std::shared_ptr<GradState>& operand, uint64_t boundary) {
  return operand && operand->generation() >= boundary;
}

std::vector<GradState*> preparePass(std::span<const Seed> seeds, uint64_t boundary) {
  std::vector<GradState*> visited, stack;
  auto visit = [&](GradState* s) {
    uint8_t idle = GradState::kIdle;
    if (s->phase.compare_exchange_strong(idle, GradState::kPending)) {
      visited.push_back(s);
      stack.push_back(s);
    }
  };
  for (const Seed& seed : seeds) visit(seed.state);
  while (!stack.empty()) {
    GradState* s = stack.back();
    stack.pop_back();
    if (BackwardFunction* fn = s->gradFn()) {
      for (const auto& operand : fn->operands()) {
        if (!inPass(operand, boundary)) continue;
        operand->pending_grads.fetch_add(1, std::memory_order_relaxed);
        visit(operand.get());
      }
    }
  }
  return visited;
}

// Brings a produced gradient to the layout of its operand: same tags in the same order.
RawTensor alignGradient(const RawTensor& g, const GradState& operand, const BackwardFunction& fn,
                        size_t slot) {
  auto mismatch = [&] {
    fail(ErrorCode::ShapeMismatch,
         std::string(fn.name()) + " backward produced a gradient " + g.describe() +
             " for operand " + std::to_string(slot) + " of shape " +
             describe(operand.tags(), operand.shape()));
  };
  if (!g.valid() || g.dtype() != DType::f32 || g.rank() != operand.tags().size()) mismatch();
  if (g.tags() == operand.tags()) {
    if (g.shape() != operand.shape()) mismatch();
    return g;
  }
  for (size_t i = 0; i < operand.tags().size(); ++i) {
    auto j = findTag(g.tags(), operand.tags()[i]);
    if (!j || g.shape()[*j] != operand.shape()[i]) mismatch();
  }
  return g.permuted(operand.tags());
}

class Pass {
 public:
  Pass(ExecContext& ctx, WorkPool* pool, uint64_t boundary)
      : ctx_(ctx), pool_(pool), boundary_(boundary) {}

  void run(std::span<const Seed> seeds) {
    for (const Seed& seed : seeds)
      if (seed.implicit) seed.state->accumulate(ctx_, *seed.implicit);
    {
      std::lock_guard lock(mutex_);
      for (const Seed& seed : seeds)
        if (seed.state->pending_grads.load() == 0 && !isQueued(seed.state)) ready_.push_back(seed.state);
    }
    while (true) {
      GradState* node = nullptr;
      bool async = false;
      {
        std::unique_lock lock(mutex_);
        if (ready_.empty()) {
          if (in_flight_ == 0) break;
          lock.unlock();
          pool_->helpUntil([&] {
            std::lock_guard l(mutex_);
            return !ready_.empty() || in_flight_ == 0;
          });
          continue;
        }
        node = ready_.back();
        ready_.pop_back();
        // Spawn a heavy record when there is other work for this thread to take meanwhile.
        async = pool_ && !ready_.empty() && wantsAsync(node) && !error_;
        if (async) ++in_flight_;
      }
      if (async) {
        pool_->submit([this, node, pool = pool_] {
          execute(node);
          {
            std::lock_guard lock(mutex_);
            --in_flight_;
          }
          pool->notifyAll();  // `this` may be gone once in_flight_ reads 0: touch only `pool`
        });
      } else {
        execute(node);
      }
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static bool wantsAsync(GradState* node) {
    BackwardFunction* fn = node->gradFn();
    return fn && (fn->preferAsyncBackward() || fn->estimatedWork() >= kBackwardAsyncWorkThreshold);
  }

  bool isQueued(GradState* s) const {
    for (GradState* r : ready_)
      if (r == s) return true;
    return false;
  }

  // Runs one record and hands its gradients to its operands. After a failure elsewhere it only
  // releases counters (the pass is being drained).
  void execute(GradState* node) {
    node->phase.store(GradState::kOngoing);
    BackwardFunction* fn = node->gradFn();
    if (!fn) return;  // a leaf output: nothing to propagate
    const auto operands = fn->operands();
    const size_t n = operands.size();
    std::vector<std::optional<RawTensor>> out(n);
    bool failed = hasError();
    if (!failed) {
      try {
        std::unique_ptr<bool[]> needs(new bool[n]);
        for (size_t i = 0; i < n; ++i) needs[i] = inPass(operands[i], boundary_);
        const std::optional<RawTensor> gy = node->gradView();
        if (!gy)
          fail(ErrorCode::MissingBackwardGradient,
               std::string(fn->name()) + " was scheduled without an incoming gradient");
        fn->backward(ctx_, *gy, std::span<const bool>(needs.get(), n), out);
        for (size_t i = 0; i < n; ++i) {
          if (!needs[i]) continue;
          if (!out[i])
            fail(ErrorCode::MissingBackwardGradient,
                 std::string(fn->name()) + " backward left the gradient of operand " +
                     std::to_string(i) + " empty");
          out[i] = alignGradient(*out[i], *operands[i], *fn, i);
        }
      } catch (...) {
        recordError(std::current_exception());
        failed = true;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (!inPass(operands[i], boundary_)) continue;
      GradState* operand = operands[i].get();
      if (!failed) {
        try {
          operand->accumulate(ctx_, std::move(*out[i]));
        } catch (...) {
          recordError(std::current_exception());
          failed = true;
        }
      }
      out[i].reset();
      if (operand->pending_grads.fetch_sub(1) == 1 && operand->gradFn()) {
        std::lock_guard lock(mutex_);
        ready_.push_back(operand);
      }
    }
  }

  bool hasError() {
    std::lock_guard lock(mutex_);
    return error_ != nullptr;
  }

  void recordError(std::exception_ptr e) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(e);  // the first error wins
  }

  ExecContext& ctx_;
  WorkPool* pool_;
  uint64_t boundary_;
  std::mutex mutex_;
  std::vector<GradState*> ready_;
  int in_flight_ = 0;
  std::exception_ptr error_;
};

void runBackward(ExecContext& ctx, std::span<const Tensor> outputs, WorkPool* pool,
                 uint64_t boundary) {
  const std::vector<Seed> seeds = validateOutputs(ctx, outputs);
  const std::vector<GradState*> visited = preparePass(seeds, boundary);
  Pass pass(ctx, pool, boundary);
  std::exception_ptr error;
  try {
    pass.run(seeds);
  } catch (...) {
    error = std::current_exception();
  }
  // Note [Re-runnable exits]: whatever happened, no state stays pending, so the graph can run
  // again. Contributions delivered before a failure remain accumulated (zeroGrad to drop them).
  for (GradState* s : visited) {
    s->pending_grads.store(0);
    s->phase.store(GradState::kIdle);
  }
  if (error) std::rethrow_exception(error);
  // One backward per graph: a completed pass consumes its outputs (a bare leaf has no graph).
  for (const Seed& seed : seeds)
    if (!seed.state->isLeaf()) seed.state->backward_done = true;
}

}  // namespace

void backwardGrad(ExecContext& ctx, std::span<const Tensor> outputs) {
  runBackward(ctx, outputs, ctx.workPool(), 0);
}

void backwardGradSerial(ExecContext& ctx, std::span<const Tensor> outputs) {
  runBackward(ctx, outputs, nullptr, 0);
}

void backwardGradSerialWithin(ExecContext& ctx, std::span<const Tensor> outputs, uint64_t boundary) {
  runBackward(ctx, outputs, nullptr, boundary);
}

}  // namespace fucina::ag
