// The scalars of one optimizer update (optim/sgd.cpp, optim/adam.cpp), as the backends' update
// primitives take them (backend/kernels.h).
#pragma once

namespace fucina::backend {

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
