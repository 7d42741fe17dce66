#include "fucina/backend/kernels.h"
#include "fucina/ag/grad_state.h"

#include <vector>


namespace fucina {

using internal::RawTensor;

namespace {
std::atomic<uint64_t> generation_counter{1};
}

uint64_t GradState::nextGeneration() { return generation_counter.load(); }

GradState::GradState(Tags tags, Extents shape, std::unique_ptr<BackwardFunction> grad_fn)
    : tags_(std::move(tags)),
      shape_(std::move(shape)),
      generation_(generation_counter.fetch_add(1)),
      grad_fn_(std::move(grad_fn)) {}

// Note [Iterative teardown]: a record owns references to its operands' states, so dropping the
// last handle of a long chain would recurse once per op. Records released while a teardown is
// running on this thread are queued and destroyed by the outermost destructor instead.
GradState::~GradState() {
  thread_local std::vector<std::unique_ptr<BackwardFunction>> queue;
  thread_local bool tearing_down = false;
  if (!grad_fn_) return;
  queue.push_back(std::move(grad_fn_));
  if (tearing_down) return;
  tearing_down = true;
  while (!queue.empty()) {
    std::unique_ptr<BackwardFunction> fn = std::move(queue.back());
    queue.pop_back();
    fn.reset();  // may push more records onto the queue
  }
  tearing_down = false;
}

void GradState::setGrad(RawTensor grad) {
  std::lock_guard lock(grad_mutex_);
  grad_ = std::move(grad);
}

void GradState::zeroGrad() {
  std::lock_guard lock(grad_mutex_);
  grad_.reset();
}

std::optional<RawTensor> GradState::gradClone(ExecContext& ctx) {
  std::lock_guard lock(grad_mutex_);
  if (!grad_) return std::nullopt;
  return grad_->clone(ctx);
}

std::optional<RawTensor> GradState::gradView() {
  std::lock_guard lock(grad_mutex_);
  return grad_;
}

bool GradState::hasGrad() {
  std::lock_guard lock(grad_mutex_);
  return grad_.has_value();
}

void GradState::accumulate(ExecContext& ctx, RawTensor contribution, const GradientSlice* slice) {
  const backend::Kernels& k = backend::kernelsOf(ctx);
  const auto ownable = [](const RawTensor& t) {
    return t.isExclusive() && t.isContiguous() && t.dtype() == DType::f32;
  };
  std::lock_guard lock(grad_mutex_);
  if (!grad_ && !slice) {
    // First contribution: installed as is (it may share a buffer, e.g. a view of gy); the
    // copy-on-write check below makes it private before anything is added to it.
    grad_ = std::move(contribution);
    return;
  }
  if (!grad_) {
    // A first slice: each element written once, the slice, then zeros on either side of it.
    RawTensor full = RawTensor::empty(ctx, tags_, shape_);
    k.copy(ctx, contribution, full.narrowed(slice->axis, slice->start, slice->count));
    const int64_t end = slice->start + slice->count, extent = shape_[*findTag(tags_, slice->axis)];
    if (slice->start > 0) k.fill(ctx, full.narrowed(slice->axis, 0, slice->start), 0.0);
    if (end < extent) k.fill(ctx, full.narrowed(slice->axis, end, extent - end), 0.0);
    grad_ = std::move(full);
    return;
  }
  if (!ownable(*grad_)) {
    if (!slice && ownable(contribution)) {
      // The sum is the same either way round (addition commutes, bit for bit): add the shared
      // accumulator into the private contribution rather than copy the accumulator first.
      k.addInto(ctx, contribution, *grad_);
      grad_ = std::move(contribution);
      return;
    }
    grad_ = grad_->to(ctx, DType::f32);  // private contiguous copy (leaves held views stale)
  }
  k.addInto(ctx, slice ? grad_->narrowed(slice->axis, slice->start, slice->count) : *grad_, contribution);
}

}  // namespace fucina
