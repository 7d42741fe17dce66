#include "fucina/optim/adam.h"

#include <cmath>
#include <string>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"
#include "fucina/backend/kernels.h"

namespace fucina::optim {

namespace {

[[noreturn]] void bad(const char* who, const char* option, const char* rule, double v) {
  fail(ErrorCode::InvalidArgument,
       std::string(who) + " option " + option + " must be " + rule + ", got " + std::to_string(v));
}

AdamOptions validated(AdamOptions o, const char* who) {
  if (!std::isfinite(o.lr) || o.lr < 0) bad(who, "lr", "finite and >= 0", o.lr);
  if (!(o.beta1 >= 0 && o.beta1 < 1)) bad(who, "beta1", "in [0, 1)", o.beta1);
  if (!(o.beta2 >= 0 && o.beta2 < 1)) bad(who, "beta2", "in [0, 1)", o.beta2);
  if (!std::isfinite(o.eps) || o.eps < 0) bad(who, "eps", "finite and >= 0", o.eps);
  if (!std::isfinite(o.weight_decay) || o.weight_decay < 0)
    bad(who, "weight_decay", "finite and >= 0", o.weight_decay);
  return o;
}

}  // namespace

Adam::Adam(AdamOptions options) : Adam(options, false) {}
Adam::Adam(std::span<const Tensor> params, AdamOptions options) : Adam(options, false) { add(params); }
Adam::Adam(AdamOptions options, bool decoupled)
    : Optimizer(validated(options, decoupled ? "AdamW" : "Adam").lr, options.master_weights),
      options_(options),
      decoupled_(decoupled) {}

AdamW::AdamW(AdamOptions options) : Adam(options, true) {}
AdamW::AdamW(std::span<const Tensor> params, AdamOptions options) : Adam(options, true) { add(params); }

void Adam::update(ExecContext& ctx, size_t index, int64_t t, const internal::RawTensor& p, const internal::RawTensor& g) {
  // Scalars in double (as torch's Python floats), elements in f32.
  const double lr = this->lr();
  const double bc1 = 1.0 - std::pow(options_.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(options_.beta2, static_cast<double>(t));
  const float step_size = static_cast<float>(lr / bc1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  const float b1 = static_cast<float>(options_.beta1), b2 = static_cast<float>(options_.beta2);
  const float one_b1 = static_cast<float>(1.0 - options_.beta1);
  const float one_b2 = static_cast<float>(1.0 - options_.beta2);
  const float eps = static_cast<float>(options_.eps);
  const float l2 = decoupled_ ? 0.0f : static_cast<float>(options_.weight_decay);
  const float shrink = decoupled_ ? static_cast<float>(1.0 - lr * options_.weight_decay) : 1.0f;
  const backend::AdamStep s{b1, b2, one_b1, one_b2, step_size, inv_sqrt_bc2, eps, l2, shrink};
  backend::kernelsOf(ctx).adamUpdate(ctx, s, p, g, stateBuffer(ctx, index, 0), stateBuffer(ctx, index, 1));
}

}  // namespace fucina::optim
