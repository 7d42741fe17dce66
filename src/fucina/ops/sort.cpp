// topK and sort along a named axis: values (differentiable) and i64 indices (constants). Each row,
// laid out with the axis last, is ordered by (value, index) so that the result never depends on
// the sorting algorithm: ties keep the lower index first, and NaN counts as larger than any number
// (torch's order). The VJP scatters each value's gradient back to the index it came from.
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

SortResult ordered(ExecContext& ctx, const char* op, const Tensor& x, Tag axis, int64_t k, bool largest) {
  if (!ops::allF32({&x})) {  // Note [Dtype rules]: 16-bit constants sort in f32, values keep their dtype
    const DType out = ops::typedResult(op, {&x});
    SortResult r = ordered(ctx, op, x.to(ctx, DType::f32), axis, k, largest);
    return {r.values.to(ctx, out), r.indices};
  }
  const RawTensor& a = x.value();
  const int64_t n = a.extent(axis);
  if (k < 0 || k > n)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": k = " + std::to_string(k) + " must be in [0, " +
                                         std::to_string(n) + "] (the extent of '" + std::string(axis.name()) +
                                         "' in " + a.describe() + ")");
  const RawTensor in = ops::axisLast(ctx, a, axis);
  backend::Kernels::SortedRows sorted = backend::kernelsOf(ctx).sortRows(ctx, in, k, largest);
  Tensor idx = Tensor::fromRaw(ctx, sorted.indices.permuted(a.tags()));
  Tensor val = ops::finishOp(ctx, op, sorted.values.permuted(a.tags()), {&x}, [&] {
    // Each row's k values go back to the distinct positions they came from; the rest get 0.
    return [indices = sorted.indices, in_tags = in.tags(), in_shape = in.shape(), a_tags = a.tags(), axis](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor gx = RawTensor::zeros(c, in_tags, in_shape);
      backend::kernelsOf(c).scatterAlong(c, gx, axis, indices, ops::axisLast(c, gy, axis), false);
      g[0] = gx.permuted(a_tags);
    };
  }, static_cast<size_t>(a.numel()));
  return {val, idx};
}

}  // namespace

SortResult Tensor::topK(ExecContext& ctx, Tag axis, int64_t k, bool largest) const {
  return ordered(ctx, "topK", *this, axis, k, largest);
}

SortResult Tensor::sort(ExecContext& ctx, Tag axis, bool descending) const {
  return ordered(ctx, "sort", *this, axis, extent(axis), descending);
}

// argmax/argmin: the first index of the largest (smallest) value of each line, NaN counting as
// the extreme (torch); i64 constants, the axis dropped. Any element type but q8_0, read as double.
namespace {

Tensor argExtremum(ExecContext& ctx, const char* op, const Tensor& x, Tag axis, bool largest) {
  const RawTensor& a = ops::elementwiseValue(op, x);
  const int64_t n = a.extent(axis);
  if (n == 0) fail(ErrorCode::InvalidArgument, std::string(op) + " over the empty axis '" + std::string(axis.name()) + "' of " + a.describe());
  if (a.device() != Device::cpu && a.dtype() == DType::f32) {
    // A device has no f64 rows: the position of its extremum along the axis (the same first one,
    // NaN the same extreme), exact in f32 for the lines a device holds (under 2^24 elements).
    using A = backend::Kernels::AlongAxis;
    const auto along = backend::kernelsOf(ctx).reduceAlong(ctx, largest ? A::max : A::min, a, axis);
    return Tensor::make(ctx, along.index.to(ctx, DType::i64), nullptr);
  }
  const RawTensor rows = ops::axisLastAs(ctx, a, axis, DType::f64);
  return Tensor::make(ctx, backend::kernelsOf(ctx).argExtremumRows(ctx, rows, largest), nullptr);
}

}  // namespace

Tensor Tensor::argmax(ExecContext& ctx, Tag axis) const { return argExtremum(ctx, "argmax", *this, axis, true); }
Tensor Tensor::argmin(ExecContext& ctx, Tag axis) const { return argExtremum(ctx, "argmin", *this, axis, false); }

Tensor Tensor::argsort(ExecContext& ctx, Tag axis, bool descending) const {
  return detach(ctx).sort(ctx, axis, descending).indices;  // only the indices: no record for the values
}

}  // namespace fucina
