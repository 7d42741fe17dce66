// Views and layout: results share the input's storage where possible; VJPs route gradients back
// through the same layout (a broadcast's VJP sums, a narrow's pads with zeros).
#include "fucina/kernels/copy.h"
#include "fucina/kernels/reduce.h"
#include "fucina/ops/finish_op.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace ops {
void requireF32(std::string_view op, const Tensor& t) {
  if (t.dtype() != DType::f32)
    fail(ErrorCode::DTypeMismatch, std::string(op) + " computes in f32, got a " +
                                       std::string(name(t.dtype())) + " tensor " +
                                       t.value().describe() + "; convert with to(ctx, DType::f32)");
}
}  // namespace ops

Tensor Tensor::broadcastTo(ExecContext& ctx, Tags tags, Extents shape) const {
  const RawTensor& a = value();
  RawTensor out = a.broadcastView(tags, shape);
  return ops::finishOp(ctx, "broadcastTo", out, {this}, [&] {
    return [tags = a.tags(), shape = a.shape()](ExecContext& c, const RawTensor& gy, NeedsGrad,
                                                Grads g) { g[0] = kernels::sumTo(c, gy, tags, shape); };
  });
}

Tensor Tensor::permuteTo(ExecContext& ctx, const Tags& order) const {
  RawTensor out = value().permuted(order);
  return ops::finishOp(ctx, "permuteTo", out, {this}, [&] {
    // The engine lays each gradient out in its operand's axis order.
    return [](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) { g[0] = gy; };
  });
}

Tensor Tensor::withTags(ExecContext& ctx, Tags new_tags) const {
  const RawTensor& a = value();
  RawTensor out = a.withTags(new_tags);
  return ops::finishOp(ctx, "withTags", out, {this}, [&] {
    return [old = a.tags(), renamed = out.tags()](ExecContext&, const RawTensor& gy, NeedsGrad,
                                                  Grads g) {
      g[0] = gy.permuted(renamed).withTags(old);
    };
  });
}

Tensor Tensor::narrow(ExecContext& ctx, Tag axis, int64_t start, int64_t length) const {
  const RawTensor& a = value();
  RawTensor out = a.narrowed(axis, start, length);
  return ops::finishOp(ctx, "narrow", out, {this}, [&] {
    return [tags = a.tags(), shape = a.shape(), axis, start, length](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, tags, shape);
      kernels::copyConvert(gy.permuted(tags), full.narrowed(axis, start, length));
      g[0] = std::move(full);
    };
  });
}

Tensor Tensor::contiguous(ExecContext& ctx) const {
  const RawTensor& a = value();
  if (a.isContiguous()) return *this;
  RawTensor out = a.clone(ctx);
  return ops::finishOp(ctx, "contiguous", out, {this}, [] {
    return [](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) { g[0] = gy; };
  });
}

// Casts (§3.8): differentiable between float types whose gradient stays f32 (the VJP passes gy
// through); a grad-carrying cast to f64 or an integer type is refused.
Tensor Tensor::to(ExecContext& ctx, DType dtype) const {
  const RawTensor& a = value();
  if (requiresGrad() && isGradEnabled() &&
      !(dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16))
    fail(ErrorCode::GradientCastUnsupported,
         "to(" + std::string(name(dtype)) + ") of a tensor that requires gradients: only f32, "
         "f16 and bf16 targets are differentiable; detach() first to cast a value");
  RawTensor out = a.to(ctx, dtype);
  return ops::finishOp(ctx, "to", out, {this}, [] {
    return [](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) { g[0] = gy; };
  });
}

}  // namespace fucina
