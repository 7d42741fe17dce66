// The scalars of one optimizer update (optim/sgd.cpp, optim/adam.cpp), as the backends' update
// primitives take them (backend/kernels.h).
#pragma once

#include <cmath>

namespace fucina::backend {

// clipGradNorm's factor for a total norm: max_norm / (total + 1e-6) in f32 (every gradient
// element is multiplied by the same float) when total > max_norm and finite, else 1.
inline float clipFactor(double total, double max_norm) {
  if (!(total > max_norm) || !std::isfinite(total)) return 1.0f;
  return static_cast<float>(max_norm / (total + 1e-6));
}

// SGD: d = g + weight_decay·p; with momentum, buf = d on the first step (torch), else
// momentum·buf + keep·d (keep = 1 − dampening), and d = buf, or d + momentum·buf for Nesterov;
// then p −= lr·d.
struct SgdStep {
  float lr, weight_decay, momentum, keep;
  bool first, nesterov;
};

// Adam(W): gi = g + l2·p; m = b1·m + one_b1·gi; v = b2·v + one_b2·gi²; p = p·shrink −
// step_size·m / (√v·inv_sqrt_bc2 + eps) (l2 = 0 for AdamW, shrink = 1 for Adam).
struct AdamStep {
  float b1, b2, one_b1, one_b2, step_size, inv_sqrt_bc2, eps, l2, shrink;
};

}  // namespace fucina::backend
