// Out-of-place updates of a slice along one axis: setSlice (the slice replaced by a source) and
// zeroSlice. Copies, so any dtype but q8_0 (as slice and pad). Gradients: x gets gy with the slice
// zeroed, the source the slice of gy (a view).
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;
using ops::refuseQ8;

namespace {

// A contiguous copy of t with [start, start + length) along axis zeroed.
RawTensor sliceZeroed(ExecContext& ctx, const RawTensor& t, Tag axis, int64_t start, int64_t length) {
  RawTensor out = t.clone(ctx);
  backend::kernelsOf(ctx).fill(ctx, out.narrowed(axis, start, length), 0.0);
  return out;
}

}  // namespace

Tensor Tensor::zeroSlice(ExecContext& ctx, Tag axis, int64_t start, int64_t end) const {
  const RawTensor& a = value();
  refuseQ8("zeroSlice", a);
  const int64_t n = a.extent(axis);
  if (start < 0 || end < start || end > n)
    fail(ErrorCode::IndexOutOfRange, "zeroSlice " + quoted(axis) + " of " + a.describe() + " to [" +
                                         std::to_string(start) + ", " + std::to_string(end) +
                                         "): need 0 <= start <= end <= " + std::to_string(n));
  const int64_t length = end - start;
  RawTensor out = sliceZeroed(ctx, a, axis, start, length);
  return ops::finishOp(ctx, "zeroSlice", out, {this}, [&] {
    return [tags = a.tags(), axis, start, length](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = sliceZeroed(c, gy.permuted(tags), axis, start, length);
    };
  });
}

Tensor Tensor::setSlice(ExecContext& ctx, Tag axis, int64_t start, const Tensor& source) const {
  const RawTensor& a = value();
  const RawTensor& s = source.value();
  refuseQ8("setSlice", a);
  if (s.dtype() != a.dtype())
    fail(ErrorCode::DTypeMismatch, "setSlice: the source is " + std::string(name(s.dtype())) + ", the tensor " +
                                       std::string(name(a.dtype())));
  bool same = s.rank() == a.rank() && hasTag(s.tags(), axis);
  for (size_t d = 0; same && d < a.rank(); ++d)
    same = hasTag(s.tags(), a.tags()[d]) && (a.tags()[d] == axis || s.extent(a.tags()[d]) == a.shape()[d]);
  if (!same)
    fail(ErrorCode::ShapeMismatch, "setSlice along " + quoted(axis) + ": the source " + s.describe() +
                                       " must have the axes of " + a.describe() + " with equal extents except " +
                                       quoted(axis));
  const int64_t length = s.extent(axis), n = a.extent(axis);
  if (start < 0 || start > n - length)
    fail(ErrorCode::IndexOutOfRange, "setSlice " + quoted(axis) + " of " + a.describe() + " at " +
                                         std::to_string(start) + " with a source of extent " + std::to_string(length) +
                                         ": need 0 <= start <= " + std::to_string(n - length));
  RawTensor out = a.clone(ctx);
  backend::kernelsOf(ctx).copy(ctx, s.permuted(a.tags()), out.narrowed(axis, start, length));
  return ops::finishOp(ctx, "setSlice", out, {this, &source}, [&] {
    return [tags = a.tags(), axis, start, length](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor ordered = gy.permuted(tags);
      if (needs[0]) g[0] = sliceZeroed(c, ordered, axis, start, length);
      if (needs[1]) g[1] = ordered.narrowed(axis, start, length);
    };
  });
}

}  // namespace fucina
