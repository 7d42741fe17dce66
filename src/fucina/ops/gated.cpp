// Gated linear units (swiglu, geglu): `axis` holds [gate | up]; the result is act(gate)·up with
// `axis` halved. The forward is one map over two views of the input; the VJP writes both halves
// of the input gradient in one strided pass, so neither makes an intermediate tensor.
#include <algorithm>
#include <string>

#include "fucina/kernels/elementwise.h"
#include "fucina/kernels/strided.h"
#include "fucina/ops/activation.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

template <class Act, class ActGrad>
Tensor gatedOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, Act act, ActGrad act_grad) {
  if (!ops::allF32({&x}))
    return ops::viaF32(ctx, op, {&x}, [&](std::span<const Tensor> f) { return gatedOp(ctx, op, f[0], axis, act, act_grad); });
  const RawTensor& a = x.value();
  const int64_t n = a.extent(axis);
  if (n % 2 != 0)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": axis '" + std::string(axis.name()) +
                                         "' must have an even extent to split into [gate | up], got " + a.describe());
  const int64_t h = n / 2;
  const RawTensor gate = a.narrowed(axis, 0, h);
  const RawTensor up = a.narrowed(axis, h, h);
  RawTensor out = kernels::map<2>(ctx, gate.tags(), gate.shape(), {&gate, &up},
                                  [act](float gv, float uv) { return act(gv) * uv; });
  return ops::finishOp(ctx, op, out, {&x}, [&] {
    return [gate, up, a_tags = a.tags(), a_shape = a.shape(), axis, h, act, act_grad](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor gx = RawTensor::empty(c, a_tags, a_shape);
      if (gx.numel() == 0) {
        g[0] = std::move(gx);
        return;
      }
      const RawTensor gx_gate = gx.narrowed(axis, 0, h);
      const RawTensor gx_up = gx.narrowed(axis, h, h);
      const RawTensor gyv = gy.permuted(gate.tags());
      const auto plan = kernels::planStrided<5>(
          gate.shape(), {&gyv.strides(), &gate.strides(), &up.strides(), &gx_gate.strides(), &gx_up.strides()});
      const float* pg = gyv.f32();
      const float* pa = gate.f32();
      const float* pu = up.f32();
      float* oa = gx_gate.f32();
      float* ou = gx_up.f32();
      const int64_t grain = std::max<int64_t>(1, kernels::kElementwiseGrain / plan.inner());
      c.parallelFor(plan.outer(), grain, [&](int64_t begin, int64_t end) {
        kernels::forEachRow(plan, begin, end, [&](const auto& off, int64_t len, const auto& st) {
          for (int64_t i = 0; i < len; ++i) {
            const float gv = pg[off[0] + i * st[0]];
            const float av = pa[off[1] + i * st[1]];
            const float uv = pu[off[2] + i * st[2]];
            oa[off[3] + i * st[3]] = gv * uv * act_grad(av);
            ou[off[4] + i * st[4]] = gv * act(av);
          }
        });
      });
      g[0] = std::move(gx);
    };
  }, static_cast<size_t>(a.numel()) * 2);
}

}  // namespace

Tensor Tensor::swiglu(ExecContext& ctx, Tag axis) const {
  return gatedOp(ctx, "swiglu", *this, axis, ops::act::silu<float>, ops::act::siluGrad);
}

Tensor Tensor::geglu(ExecContext& ctx, Tag axis) const {
  return gatedOp(ctx, "geglu", *this, axis, ops::act::geluErf<float>, ops::act::geluErfGrad);
}

}  // namespace fucina
