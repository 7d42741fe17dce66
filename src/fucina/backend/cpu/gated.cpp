#include "fucina/backend/cpu/gated.h"

#include <algorithm>

#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/cpu/strided.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;

RawTensor gated(ExecContext& ctx, const backend::GateFn& fn, const RawTensor& up, const RawTensor& gate) {
  return backend::gates::withGate(fn, [&](const auto& f) {
    return map<2>(ctx, up.tags(), up.shape(), {&up, &gate}, [f](float uv, float gv) { return f.u(uv) * f.g(gv); });
  });
}

void gatedVjp(ExecContext& c, const backend::GateFn& fn, const RawTensor& gy, const RawTensor& up,
              const RawTensor& gate, const RawTensor& gup, const RawTensor& ggate) {
  if (up.numel() == 0) return;
  const RawTensor gyv = gy.permuted(up.tags());
  const auto plan =
      planStrided<5>(up.shape(), {&gyv.strides(), &up.strides(), &gate.strides(), &gup.strides(), &ggate.strides()});
  const float* pg = gyv.f32();
  const float* pu = up.f32();
  const float* pa = gate.f32();
  float* ou = gup.f32();
  float* oa = ggate.f32();
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / plan.inner());
  backend::gates::withGate(fn, [&](const auto& f) {
    c.parallelFor(plan.outer(), grain, [&](int64_t begin, int64_t end) {
      forEachRow(plan, begin, end, [&](const auto& off, int64_t len, const auto& st) {
        for (int64_t i = 0; i < len; ++i) {
          const float gv = pg[off[0] + i * st[0]];
          const float uv = pu[off[1] + i * st[1]];
          const float av = pa[off[2] + i * st[2]];
          ou[off[3] + i * st[3]] = gv * f.du(uv) * f.g(av);
          oa[off[4] + i * st[4]] = gv * f.u(uv) * f.dg(av);
        }
      });
    });
  });
}

}  // namespace fucina::kernels
