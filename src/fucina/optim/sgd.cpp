#include "fucina/optim/sgd.h"

#include <cmath>
#include <string>

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

void Sgd::update(ExecContext& ctx, size_t index, int64_t t, float* p, const float* g, int64_t n) {
  const float lr = static_cast<float>(this->lr());
  const float wd = static_cast<float>(options_.weight_decay);
  const float mu = static_cast<float>(options_.momentum);
  const float keep = static_cast<float>(1.0 - options_.dampening);
  if (options_.momentum == 0) {
    ctx.parallelFor(n, kParallelGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float d = g[i] + wd * p[i];
        p[i] -= lr * d;
      }
    });
    return;
  }
  float* buf = stateBuffer(ctx, index, 0);
  const bool first = t == 1;  // torch: the buffer starts as a copy of the first gradient
  const bool nesterov = options_.nesterov;
  ctx.parallelFor(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float d = g[i] + wd * p[i];
      buf[i] = first ? d : mu * buf[i] + keep * d;
      d = nesterov ? d + mu * buf[i] : buf[i];
      p[i] -= lr * d;
    }
  });
}

}  // namespace fucina::optim
