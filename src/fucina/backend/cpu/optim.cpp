#include "fucina/backend/cpu/optim.h"

#include <cmath>

#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;

namespace {
// Elements per pool task.
constexpr int64_t kGrain = 32 * 1024;
}  // namespace

void sgdUpdate(ExecContext& ctx, const backend::SgdStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& buf) {
  float* pp = p.f32();
  const float* gp = g.f32();
  if (!buf.valid()) {
    ctx.parallelFor(p.numel(), kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) pp[i] -= s.lr * (gp[i] + s.weight_decay * pp[i]);
    });
    return;
  }
  float* b = buf.f32();
  ctx.parallelFor(p.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float d = gp[i] + s.weight_decay * pp[i];
      b[i] = s.first ? d : s.momentum * b[i] + s.keep * d;
      d = s.nesterov ? d + s.momentum * b[i] : b[i];
      pp[i] -= s.lr * d;
    }
  });
}

void adamUpdate(ExecContext& ctx, const backend::AdamStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& m,
                const RawTensor& v) {
  float *pp = p.f32(), *mp = m.f32(), *vp = v.f32();
  const float* gp = g.f32();
  const bool simd = vec::enabled();
  ctx.parallelFor(p.numel(), kGrain, [&](int64_t begin, int64_t end) {
    if (simd) return vec::adam(s, pp + begin, gp + begin, mp + begin, vp + begin, end - begin);
    for (int64_t i = begin; i < end; ++i) {  // the scalar reference vec::adam is tested against
      const float gi = gp[i] + s.l2 * pp[i];
      const float pi = pp[i] * s.shrink;
      mp[i] = s.b1 * mp[i] + s.one_b1 * gi;
      vp[i] = s.b2 * vp[i] + s.one_b2 * gi * gi;
      const float denom = std::sqrt(vp[i]) * s.inv_sqrt_bc2 + s.eps;
      pp[i] = pi - s.step_size * (mp[i] / denom);
    }
  });
}

double sumSquares(const RawTensor& x) {
  const float* d = x.f32();
  double sum = 0;
  for (int64_t i = 0, n = x.numel(); i < n; ++i) sum += static_cast<double>(d[i]) * d[i];
  return sum;
}

}  // namespace fucina::kernels
