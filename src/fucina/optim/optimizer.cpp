#include "fucina/backend/kernels.h"
#include "fucina/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fucina/ag/grad_state.h"
#include "fucina/core/error.h"

namespace fucina::optim {

using internal::RawTensor;

namespace {

void checkParam(const Tensor& p, const char* what) {
  if (!p.defined()) fail(ErrorCode::InvalidArgument, std::string(what) + ": empty Tensor handle");
  const RawTensor& v = p.value();  // TensorReleased when disposed
  if (p.gradState() == nullptr)
    fail(ErrorCode::InvalidArgument, std::string(what) + ": a parameter must be a variable (this tensor is a constant)");
  if (!p.gradState()->isLeaf())
    fail(ErrorCode::InvalidArgument, std::string(what) + ": a parameter must be a leaf variable, not an op result");
  if (v.dtype() != DType::f32 && v.dtype() != DType::f16 && v.dtype() != DType::bf16)
    fail(ErrorCode::InvalidArgument, std::string(what) + ": a parameter must be f32, f16 or bf16");
  if (!v.isContiguous())
    fail(ErrorCode::InvalidArgument, std::string(what) + ": a parameter must be contiguous " + v.describe());
}

bool sameParam(const Tensor& a, const Tensor& b) { return a.impl() == b.impl(); }

}  // namespace

Optimizer::Optimizer(double lr, bool master_weights) : lr_(0), master_weights_(master_weights) { setLr(lr); }
Optimizer::~Optimizer() = default;

void Optimizer::setLr(double lr) {
  if (!std::isfinite(lr) || lr < 0)
    fail(ErrorCode::InvalidArgument, "optimizer option lr must be finite and >= 0, got " + std::to_string(lr));
  lr_ = lr;
}

void Optimizer::add(const Tensor& param) {
  checkParam(param, "Optimizer::add");
  for (const Tensor& p : params_)
    if (sameParam(p, param))
      fail(ErrorCode::InvalidArgument, "Optimizer::add: this parameter is already registered");
  params_.push_back(param);
  states_.emplace_back();
}

void Optimizer::add(std::span<const Tensor> params) {
  for (const Tensor& p : params) add(p);
}

void Optimizer::step(ExecContext& ctx) {
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& param = params_[i];
    checkParam(param, "Optimizer::step");
    std::optional<RawTensor> grad = param.gradState()->gradView();
    if (!grad) continue;  // no gradient: skipped, as torch does
    if (grad->shape() != param.shape() || grad->tags() != param.tags())
      fail(ErrorCode::ShapeMismatch, "Optimizer::step: gradient " + grad->describe() +
                                         " does not match its parameter " + param.value().describe());
    // A gradient may be a strided or broadcast view of an upstream one: read it contiguously.
    RawTensor g = grad->dtype() == DType::f32 ? grad->contiguous(ctx) : grad->to(ctx, DType::f32);
    const int64_t t = ++states_[i].steps;
    const RawTensor& value = param.value();
    if (value.dtype() == DType::f32) {
      update(ctx, i, t, value, g);
      continue;
    }
    // Note [16-bit parameters]: the update runs on f32 values, then is rounded into the parameter.
    RawTensor& master = states_[i].master;
    if (master_weights_ && !master.valid()) master = value.to(ctx, DType::f32);
    RawTensor work = master_weights_ ? master : value.to(ctx, DType::f32);
    update(ctx, i, t, work, g);
    backend::kernelsOf(ctx).copy(ctx, work, value);
    param.impl()->dropF32Cache();  // dataConst's f32 copy of the old values
  }
}

void Optimizer::zeroGrad() {
  for (const Tensor& p : params_) p.zeroGrad();
}

RawTensor Optimizer::stateBuffer(ExecContext& ctx, size_t index, size_t slot) {
  std::vector<RawTensor>& buffers = states_.at(index).buffers;
  if (buffers.size() <= slot) buffers.resize(slot + 1);
  if (!buffers[slot].valid()) {
    const Tensor& p = params_[index];
    buffers[slot] = RawTensor::zeros(ctx, p.tags(), p.shape());
  }
  return buffers[slot];
}

// ---------------------------------------------------------------- OptimizerSet

void OptimizerSet::checkDisjoint(const Optimizer& incoming) const {
  for (const Optimizer* o : optimizers_) {
    if (o == &incoming) fail(ErrorCode::InvalidArgument, "OptimizerSet::add: this optimizer is already in the set");
    for (const Tensor& a : o->params())
      for (const Tensor& b : incoming.params())
        if (sameParam(a, b))
          fail(ErrorCode::InvalidArgument, "OptimizerSet: a parameter belongs to two optimizers of the set");
  }
}

Optimizer& OptimizerSet::add(std::unique_ptr<Optimizer> optimizer) {
  if (!optimizer) fail(ErrorCode::InvalidArgument, "OptimizerSet::add: null optimizer");
  checkDisjoint(*optimizer);
  optimizers_.push_back(optimizer.get());
  owned_.push_back(std::move(optimizer));
  return *optimizers_.back();
}

Optimizer& OptimizerSet::add(Optimizer& optimizer) {
  checkDisjoint(optimizer);
  optimizers_.push_back(&optimizer);
  return optimizer;
}

void OptimizerSet::addParams(Optimizer& optimizer, std::span<const Tensor> params) {
  if (std::find(optimizers_.begin(), optimizers_.end(), &optimizer) == optimizers_.end())
    fail(ErrorCode::InvalidArgument, "OptimizerSet::addParams: the optimizer is not in this set");
  for (const Tensor& p : params) {
    for (const Optimizer* o : optimizers_)
      for (const Tensor& q : o->params())
        if (sameParam(p, q))
          fail(ErrorCode::InvalidArgument, "OptimizerSet::addParams: this parameter is already registered");
    optimizer.add(p);
  }
}

void OptimizerSet::step(ExecContext& ctx) {
  for (Optimizer* o : optimizers_) o->step(ctx);
}

void OptimizerSet::zeroGrad() {
  for (Optimizer* o : optimizers_) o->zeroGrad();
}

void OptimizerSet::setLr(double lr) {
  for (Optimizer* o : optimizers_) o->setLr(lr);
}

std::vector<Tensor> OptimizerSet::params() const {
  std::vector<Tensor> all;
  for (const Optimizer* o : optimizers_) all.insert(all.end(), o->params().begin(), o->params().end());
  return all;
}

}  // namespace fucina::optim
