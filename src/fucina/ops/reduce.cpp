// Reductions over named axes, each with its VJP (a broadcast of the gradient back).
#include "fucina/kernels/elementwise.h"
#include "fucina/kernels/reduce.h"
#include "fucina/ops/finish_op.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// sum over `axes` times `factor` (1 for sum, 1/n for mean). VJP: gy broadcast to x's axes, scaled.
Tensor sumScaled(ExecContext& ctx, std::string_view name, const Tensor& x, const Tags& axes,
                 double factor) {
  ops::requireF32(name, x);
  const RawTensor& a = x.value();
  RawTensor out = kernels::sumAxes(ctx, a, axes);
  const float f = static_cast<float>(factor);
  if (f != 1.0f) out = kernels::map1(ctx, out, [f](float v) { return v * f; });
  return ops::finishOp(ctx, name, out, {&x}, [&] {
    return [tags = a.tags(), shape = a.shape(), f](ExecContext& c, const RawTensor& gy, NeedsGrad,
                                                   Grads g) {
      g[0] = kernels::map<1>(c, tags, shape, {&gy}, [f](float v) { return v * f; });
    };
  }, static_cast<size_t>(a.numel()));
}

}  // namespace

Tensor Tensor::sumAll(ExecContext& ctx) const { return sumScaled(ctx, "sumAll", *this, tags(), 1.0); }

Tensor Tensor::meanAll(ExecContext& ctx) const {
  const int64_t n = numel();
  if (n == 0) fail(ErrorCode::InvalidArgument, "meanAll of an empty tensor " + value().describe());
  return sumScaled(ctx, "meanAll", *this, tags(), 1.0 / static_cast<double>(n));
}

Tensor Tensor::sum(ExecContext& ctx, Tag axis) const {
  value().axis(axis);  // ShapeMismatch naming the axes when absent
  return sumScaled(ctx, "sum", *this, {axis}, 1.0);
}

Tensor Tensor::mean(ExecContext& ctx, Tag axis) const {
  const int64_t n = value().extent(axis);
  if (n == 0)
    fail(ErrorCode::InvalidArgument, "mean over the empty axis '" + std::string(axis.name()) +
                                         "' of " + value().describe());
  return sumScaled(ctx, "mean", *this, {axis}, 1.0 / static_cast<double>(n));
}

}  // namespace fucina
