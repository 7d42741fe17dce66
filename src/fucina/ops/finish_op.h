// The single tail every differentiable op ends in (the reference's finishOp).
//
// Note [One forward path]: an op computes its value with the same kernels whether or not
// gradients are tracked; only here is it decided whether to attach a VJP record. The record
// is built by a factory that runs only when recording, so saved operands cost nothing in
// inference (and each op saves only what the gradients it may need actually read).
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "fucina/ag/backward_function.h"
#include "fucina/ag/control.h"
#include "fucina/ag/tensor.h"
#include "fucina/core/error.h"

namespace fucina::ops {

using internal::RawTensor;
using Grads = std::span<std::optional<RawTensor>>;
using NeedsGrad = std::span<const bool>;

// A BackwardFunction whose VJP is a lambda written next to its op's forward.
template <class Vjp>
class OpRecord final : public BackwardFunction {
 public:
  OpRecord(std::string_view name, std::vector<std::shared_ptr<GradState>> operands, size_t work,
           Vjp vjp, std::optional<GradientSlice> placement = std::nullopt)
      : name_(name),
        operands_(std::move(operands)),
        work_(work),
        vjp_(std::move(vjp)),
        placement_(std::move(placement)) {}
  std::span<const std::shared_ptr<GradState>> operands() const override { return operands_; }
  void backward(ExecContext& ctx, const RawTensor& gy, NeedsGrad needs_grad, Grads out) override {
    vjp_(ctx, gy, needs_grad, out);
  }
  std::string_view name() const override { return name_; }
  size_t estimatedWork() const override { return work_; }
  const GradientSlice* placement() const override { return placement_ ? &*placement_ : nullptr; }

 private:
  std::string_view name_;
  std::vector<std::shared_ptr<GradState>> operands_;
  size_t work_;
  Vjp vjp_;
  std::optional<GradientSlice> placement_;
};

// A pending value's stand-in: one NaN broadcast to (tags, shape), so that its metadata is exact
// and a kernel that read it by mistake would see NaN, never stale memory.
RawTensor pendingPlaceholder(ExecContext& ctx, const Tags& tags, const Extents& shape);

inline bool anyRequiresGrad(std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    if (t->requiresGrad()) return true;
  return false;
}

// The op's grad state: a record holding makeVjp()'s VJP when some operand requires gradients
// and gradients are enabled (no noGrad scope open), else null (makeVjp is then never invoked).
template <class MakeVjp>
std::shared_ptr<GradState> recordOp(std::string_view name, const Tags& tags, const Extents& shape,
                                    std::initializer_list<const Tensor*> operands, MakeVjp&& makeVjp,
                                    size_t estimated_work, std::optional<GradientSlice> placement = std::nullopt) {
  if (!isGradEnabled() || !anyRequiresGrad(operands)) return nullptr;
  std::vector<std::shared_ptr<GradState>> states;
  states.reserve(operands.size());
  for (const Tensor* t : operands) states.push_back(t->impl()->gradState());
  auto vjp = makeVjp();
  auto record = std::make_unique<OpRecord<decltype(vjp)>>(name, std::move(states), estimated_work,
                                                          std::move(vjp), std::move(placement));
  return std::make_shared<GradState>(tags, shape, std::move(record));
}

// Wraps value as the op's result. makeVjp() -> callable (ctx, gy, needs_grad, out) is invoked
// only when some operand requires gradients and gradients are enabled (no noGrad scope open).
template <class MakeVjp>
Tensor finishOp(ExecContext& ctx, std::string_view name, RawTensor value,
                std::initializer_list<const Tensor*> operands, MakeVjp&& makeVjp,
                size_t estimated_work = 0) {
  auto state = recordOp(name, value.tags(), value.shape(), operands, makeVjp, estimated_work);
  return Tensor::make(ctx, std::move(value), std::move(state));
}

// finishOp for a view of one slice of `operand`, whose VJP writes the gradient of that slice
// alone (Note [Placed gradients], ag/backward_function.h).
template <class MakeVjp>
Tensor finishPlacedOp(ExecContext& ctx, std::string_view name, RawTensor value, const Tensor& operand,
                      GradientSlice slice, MakeVjp&& makeVjp) {
  auto state = recordOp(name, value.tags(), value.shape(), {&operand}, makeVjp, 0, std::move(slice));
  return Tensor::make(ctx, std::move(value), std::move(state));
}

// finishOp for a value left pending (Note [Checkpoint tail]): a result with tags and shape whose
// value compute() makes on first read. makeVjp must not read the result. Callers check
// internal::deferringValues() first.
template <class Compute, class MakeVjp>
Tensor finishPending(ExecContext& ctx, std::string_view name, const Tags& tags, const Extents& shape,
                     Compute compute, std::initializer_list<const Tensor*> operands, MakeVjp&& makeVjp,
                     size_t estimated_work = 0) {
  internal::countPendingValueDeferred();
  auto state = recordOp(name, tags, shape, operands, makeVjp, estimated_work);
  return Tensor::makePending(ctx, pendingPlaceholder(ctx, tags, shape), std::move(compute), std::move(state));
}

}  // namespace fucina::ops
