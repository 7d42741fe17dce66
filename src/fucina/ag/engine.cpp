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

// Whether an operand slot takes part in a pass limited to states made at or after `boundary`.
bool inPass(const std::shared_ptr<GradState>& operand, uint64_t boundary) {
  return operand && operand->generation() >= boundary;
}

// Note [Pending counters]: one walk from the outputs adds one to a state's pending_grads per
// consumer edge and claims it on first visit. A record runs only when its counter drains to zero,
// i.e. after every downstream contribution has arrived, so a value used by several branches
// propagates its complete gradient exactly once. Leaves take no part in the counting: nothing
// runs for them, and accumulate() serializes their contributions.
//
// Note [Interior consumption] (extends one backward per graph): a completed pass consumes
// every record state it ran, not only its outputs, since each keeps the gradient it received and
// a second pass through it would add on top and propagate the sum (h = tanh(x): backward of
// sum(h), then of sum(2h), gave x 4·dh instead of 3·dh). So a pass that reaches a consumed state
// fails with BackwardAlreadyRun, and so does one that reaches a state claimed by another pass
// still in flight (another thread), instead of racing it; either way before any counter or seed
// is left behind: the walk releases what it claimed and throws. Leaves are shared by every graph
// built on them (the micro-batch idiom) and are never claimed or consumed. A failed pass consumes
// nothing (Note [Re-runnable exits]). Every reference example holds: each runs one pass per
// freshly built graph.
std::atomic<uint64_t> pass_counter{0};

[[noreturn]] void refuseReached(const GradState& s, bool consumed) {
  const std::string what = describe(s.tags(), s.shape()) + " (made by " +
                           std::string(s.gradFn()->name()) + ")";
  if (consumed)
    fail(ErrorCode::BackwardAlreadyRun,
         "backward reached " + what + ", whose graph an earlier backward already ran through (its "
         "interior gradients are spent); build a fresh forward graph for another pass");
  fail(ErrorCode::BackwardAlreadyRun,
       "backward reached " + what + ", which a backward pass still running on another thread is "
       "propagating through; one graph takes one backward");
}

// Claims every record state reachable from the seeds for pass `id` and counts its consumer
// edges; returns the claimed states. On a conflict it releases them all and throws.
std::vector<GradState*> preparePass(std::span<const Seed> seeds, uint64_t boundary, uint64_t id) {
  std::vector<GradState*> claimed, stack;
  auto release = [&] {
    for (GradState* s : claimed) {
      s->pending_grads.store(0);
      s->claimed_by.store(0);
    }
  };
  // Returns false for a state this pass already holds or a leaf: nothing more to walk.
  auto claim = [&](GradState* s) {
    if (s->isLeaf()) return false;
    uint64_t free = 0;
    if (!s->claimed_by.compare_exchange_strong(free, id)) {
      if (free == id) return false;
      release();
      refuseReached(*s, false);
    }
    claimed.push_back(s);
    if (s->backward_done.load()) {
      release();
      refuseReached(*s, true);
    }
    return true;
  };
  for (const Seed& seed : seeds)
    if (claim(seed.state)) stack.push_back(seed.state);
  while (!stack.empty()) {
    GradState* s = stack.back();
    stack.pop_back();
    for (const auto& operand : s->gradFn()->operands()) {
      if (!inPass(operand, boundary) || operand->isLeaf()) continue;
      // Claimed first: a counter is touched only on a state this pass holds.
      const bool fresh = claim(operand.get());
      operand->pending_grads.fetch_add(1, std::memory_order_relaxed);
      if (fresh) stack.push_back(operand.get());
    }
  }
  return claimed;
}

// Brings a produced gradient to the layout of its operand: same tags in the same order, and the
// operand's extents, or the slice's where the record places its gradient (Note [Placed gradients]).
RawTensor alignGradient(const RawTensor& g, const GradState& operand, const BackwardFunction& fn,
                        size_t slot) {
  Extents shape = operand.shape();
  if (const GradientSlice* slice = fn.placement()) shape[*findTag(operand.tags(), slice->axis)] = slice->count;
  auto mismatch = [&] {
    fail(ErrorCode::ShapeMismatch,
         std::string(fn.name()) + " backward produced a gradient " + g.describe() +
             " for operand " + std::to_string(slot) + " of shape " +
             describe(operand.tags(), shape));
  };
  if (!g.valid() || g.dtype() != DType::f32 || g.rank() != operand.tags().size()) mismatch();
  if (g.tags() == operand.tags()) {
    if (g.shape() != shape) mismatch();
    return g;
  }
  for (size_t i = 0; i < operand.tags().size(); ++i) {
    auto j = findTag(g.tags(), operand.tags()[i]);
    if (!j || g.shape()[*j] != shape[i]) mismatch();
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
          operand->accumulate(ctx_, std::move(*out[i]), fn->placement());
        } catch (...) {
          recordError(std::current_exception());
          failed = true;
        }
      }
      out[i].reset();
      if (!operand->isLeaf() && operand->pending_grads.fetch_sub(1) == 1) {
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
  const std::vector<GradState*> claimed = preparePass(seeds, boundary, ++pass_counter);
  Pass pass(ctx, pool, boundary);
  std::exception_ptr error;
  try {
    pass.run(seeds);
  } catch (...) {
    error = std::current_exception();
  }
  // Note [Re-runnable exits]: whatever happened, no state stays pending or claimed, so a failed
  // pass can run again. Contributions delivered before a failure remain accumulated (zeroGrad to
  // drop them). A completed pass consumes what it claimed (Note [Interior consumption]), marked
  // before the claim is dropped so that a pass waiting on the claim sees it.
  for (GradState* s : claimed) {
    s->pending_grads.store(0);
    if (!error) s->backward_done.store(true);
    s->claimed_by.store(0);
  }
  if (error) std::rethrow_exception(error);
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
