// Contractions: dot over a named axis, and its VJP (each operand's gradient is itself a
// contraction of gy with the other operand).
#include "fucina/kernels/gemm.h"
#include "fucina/ops/finish_op.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

Tensor Tensor::dot(ExecContext& ctx, const Tensor& y, Tag axis) const {
  ops::requireF32("dot", *this);
  ops::requireF32("dot", y);
  const RawTensor& a = value();
  const RawTensor& b = y.value();
  if (!hasTag(a.tags(), axis) || !hasTag(b.tags(), axis))
    fail(ErrorCode::ShapeMismatch, "dot over '" + std::string(axis.name()) +
                                       "': both operands need that axis, got " + a.describe() +
                                       " and " + b.describe());
  RawTensor out = kernels::contract(ctx, a, b, {axis});
  const auto work = static_cast<size_t>(2 * out.numel() * a.extent(axis));
  return ops::finishOp(ctx, "dot", out, {this, &y}, [&] {
    Tags a_free, b_free;  // axes only one operand has: what each gradient contracts over
    for (Tag t : a.tags())
      if (!hasTag(b.tags(), t)) a_free.push_back(t);
    for (Tag t : b.tags())
      if (!hasTag(a.tags(), t)) b_free.push_back(t);
    // Each gradient reads the other operand only.
    return [sa = y.requiresGrad() ? a : RawTensor(), sb = requiresGrad() ? b : RawTensor(), a_free,
            b_free](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      if (needs[0]) g[0] = kernels::contract(c, gy, sb, b_free);  // engine aligns the axis order
      if (needs[1]) g[1] = kernels::contract(c, gy, sa, a_free);
    };
  }, work);
}

}  // namespace fucina
