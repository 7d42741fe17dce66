#include "fucina/optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "fucina/core/error.h"

namespace fucina::optim {

namespace {
void requireCount(int64_t v, const char* what) {
  if (v < 0) fail(ErrorCode::InvalidArgument, std::string("schedule ") + what + " must be >= 0, got " + std::to_string(v));
}
void requireLr(double v, const char* what) {
  if (!std::isfinite(v) || v < 0)
    fail(ErrorCode::InvalidArgument, std::string("schedule ") + what + " must be finite and >= 0, got " + std::to_string(v));
}
}  // namespace

double linearWarmup(int64_t step, int64_t warmup_steps, double base_lr) {
  requireCount(step, "step");
  requireCount(warmup_steps, "warmup_steps");
  requireLr(base_lr, "base_lr");
  if (step >= warmup_steps) return base_lr;
  return base_lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
}

double cosineDecay(int64_t step, int64_t total_steps, double base_lr, double min_lr) {
  requireCount(step, "step");
  requireLr(base_lr, "base_lr");
  requireLr(min_lr, "min_lr");
  if (total_steps <= 0)
    fail(ErrorCode::InvalidArgument, "schedule total_steps must be > 0, got " + std::to_string(total_steps));
  const double t = static_cast<double>(std::min(step, total_steps));
  return min_lr + (base_lr - min_lr) * (1.0 + std::cos(std::numbers::pi * t / static_cast<double>(total_steps))) / 2.0;
}

WarmupCosine::WarmupCosine(double base_lr, int64_t warmup_steps, int64_t total_steps, double min_lr)
    : base_lr_(base_lr), warmup_steps_(warmup_steps), total_steps_(total_steps), min_lr_(min_lr) {
  requireLr(base_lr, "base_lr");
  requireLr(min_lr, "min_lr");
  requireCount(warmup_steps, "warmup_steps");
  if (total_steps <= warmup_steps)
    fail(ErrorCode::InvalidArgument, "schedule total_steps must be > warmup_steps, got " +
                                         std::to_string(total_steps) + " <= " + std::to_string(warmup_steps));
}

double WarmupCosine::operator()(int64_t step) const {
  requireCount(step, "step");
  if (step < warmup_steps_) return linearWarmup(step, warmup_steps_, base_lr_);
  return cosineDecay(step - warmup_steps_, total_steps_ - warmup_steps_, base_lr_, min_lr_);
}

}  // namespace fucina::optim
