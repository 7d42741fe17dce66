// Optimizer updates as their definition: one element after another on the calling thread, each
// quantity in f32 as the formulas of backend/optim_steps.h write it (the cpu backend's scalar
// path, which its SIMD Adam is tested against).
#include <cmath>

#include "fucina/backend/reference/row_kernels.h"

namespace fucina::backend::reference {

void sgdUpdate(const SgdStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& buf) {
  float* pp = p.f32();
  const float* gp = g.f32();
  for (int64_t i = 0, n = p.numel(); i < n; ++i) {
    float d = gp[i] + s.weight_decay * pp[i];
    if (buf.valid()) {
      float& b = buf.f32()[i];
      b = s.first ? d : s.momentum * b + s.keep * d;
      d = s.nesterov ? d + s.momentum * b : b;
    }
    pp[i] -= s.lr * d;
  }
}

void adamUpdate(const AdamStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& m, const RawTensor& v) {
  for (int64_t i = 0, n = p.numel(); i < n; ++i) {
    float &pi = p.f32()[i], &mi = m.f32()[i], &vi = v.f32()[i];
    const float gi = g.f32()[i] + s.l2 * pi;
    mi = s.b1 * mi + s.one_b1 * gi;
    vi = s.b2 * vi + s.one_b2 * gi * gi;
    pi = pi * s.shrink - s.step_size * (mi / (std::sqrt(vi) * s.inv_sqrt_bc2 + s.eps));
  }
}

double sumSquares(const RawTensor& x) {
  double sum = 0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) sum += static_cast<double>(x.f32()[i]) * x.f32()[i];
  return sum;
}

}  // namespace fucina::backend::reference
