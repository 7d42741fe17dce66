#include "fucina/optim/sgd.h"

#include <cmath>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::optim {

namespace {

void requireNonNegative(double v, const char* option) {
  if (!std::isfinite(v) || v < 0)
    fail(ErrorCode::InvalidArgument,
         std::string("SGD option ") + option + " must be finite and >= 0, got " + std::to_string(v));
}

SgdOptions validated(SgdOptions o) {
  requireNonNegative(o.lr, "lr");
  requireNonNegative(o.momentum, "momentum");
  requireNonNegative(o.dampening, "dampening");
  requireNonNegative(o.weight_decay, "weight_decay");
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    fail(ErrorCode::InvalidArgument, "SGD option nesterov requires momentum > 0 and dampening == 0");
  return o;
}

}  // namespace

Sgd::Sgd(SgdOptions options)
    : Optimizer(validated(options).lr, options.master_weights), options_(options) {}

Sgd::Sgd(std::span<const Tensor> params, SgdOptions options) : Sgd(options) { add(params); }

void Sgd::update(ExecContext& ctx, size_t index, int64_t t, const internal::RawTensor& p, const internal::RawTensor& g) {
  const backend::SgdStep s{.lr = static_cast<float>(this->lr()),
                           .weight_decay = static_cast<float>(options_.weight_decay),
                           .momentum = static_cast<float>(options_.momentum),
                           .keep = static_cast<float>(1.0 - options_.dampening),
                           .first = t == 1,  // torch: the buffer starts as a copy of the first gradient
                           .nesterov = options_.nesterov};
  const internal::RawTensor none;
  backend::kernelsOf(ctx).sgdUpdate(ctx, s, p, g, options_.momentum == 0 ? none : stateBuffer(ctx, index, 0));
}

}  // namespace fucina::optim
