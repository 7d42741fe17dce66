/// @file
/// Learning-rate schedules: pure functions of the step number (0-based: the step about to run).
/// ```
///   linearWarmup(s, W, base)     = base * s / W          for s < W,   base afterwards (and when W == 0)
///   cosineDecay(s, T, base, min) = min + (base - min) * (1 + cos(pi * min(s, T) / T)) / 2
///                                  (torch's CosineAnnealingLR closed form; held at min after T)
///   WarmupCosine(base, W, T, min)(s) = linearWarmup(s, W, base) for s < W,
///                                      cosineDecay(s - W, T - W, base, min) afterwards
/// ```
/// Negative steps or counts, and T < W, are InvalidArgument.
#pragma once

#include <cstdint>

namespace fucina::optim {

double linearWarmup(int64_t step, int64_t warmup_steps, double base_lr);
double cosineDecay(int64_t step, int64_t total_steps, double base_lr, double min_lr = 0);

class WarmupCosine {
 public:
  WarmupCosine(double base_lr, int64_t warmup_steps, int64_t total_steps, double min_lr = 0);
  double operator()(int64_t step) const;
  double lrAt(int64_t step) const { return (*this)(step); }

 private:
  double base_lr_;
  int64_t warmup_steps_;
  int64_t total_steps_;
  double min_lr_;
};

}  // namespace fucina::optim
