// Copies that move elements along an axis: flip, roll, rollBy, shiftBy, relposShift
// and repeatAxis. Each forward is a few strided copies (the backend's copy, any dtype but q8_0);
// each VJP is the adjoint move of the f32 gradient: flip and roll by the inverse
// permutation, shift the other way with zero fill, relposShift scattering back through the same
// padded layout, repeatAxis summing the copies.
#include <string>
#include <vector>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;
using ops::refuseQ8;

namespace {

// a read backwards along position p: a transient view with a negative stride that only
// the backend's copy reads (Note at the top of ops/strided_views.cpp).
RawTensor reversed(const RawTensor& a, size_t p) {
  std::vector<int64_t> strides = a.strides();
  const int64_t n = a.shape()[p];
  const int64_t offset = a.offset() + (a.numel() > 0 ? (n - 1) * strides[p] : 0);  // an empty view reads nothing
  strides[p] = -strides[p];
  return RawTensor::view(a.storage(), a.dtype(), a.tags(), a.shape(), std::move(strides), offset);
}

// Per-slice shifts (rollBy, shiftBy): i32/i64 with exactly the axis by_axis, extent matching a's.
void checkShifts(std::string_view op, const RawTensor& a, Tag axis, Tag by_axis, const RawTensor& s) {
  const std::string what = std::string(op) + " along " + quoted(axis) + " by " + quoted(by_axis) + " of " + a.describe();
  if (axis == by_axis) fail(ErrorCode::InvalidArgument, what + ": the two axes must differ");
  a.axis(axis);
  const int64_t b = a.extent(by_axis);
  if (s.dtype() != DType::i32 && s.dtype() != DType::i64)
    fail(ErrorCode::DTypeMismatch, what + ": shifts must be i32 or i64, got " + std::string(name(s.dtype())) + " " + s.describe());
  if (s.rank() != 1 || s.tags()[0] != by_axis || s.shape()[0] != b)
    fail(ErrorCode::ShapeMismatch, what + ": shifts " + s.describe() + " must have exactly the axis " + quoted(by_axis) +
                                       " with extent " + std::to_string(b));
}

// rollBy and shiftBy: the backend moves each slice by its shift (Kernels::moveSlices), which a
// device reads where it is; the VJP moves the gradient back.
Tensor perSliceOp(ExecContext& ctx, std::string_view op, backend::Kernels::SliceMove how, const Tensor& x, Tag axis,
                  Tag by_axis, const Tensor& shifts) {
  const RawTensor& a = x.value();
  refuseQ8(op, a);
  checkShifts(op, a, axis, by_axis, shifts.value());
  RawTensor out = backend::kernelsOf(ctx).moveSlices(ctx, how, a, axis, by_axis, shifts.value(), false);
  return ops::finishOp(ctx, op, out, {&x}, [&] {
    // The shifts as they are now: a later write into them does not reach the VJP.
    return [tags = a.tags(), how, axis, by_axis, k = shifts.value().clone(ctx)](ExecContext& c, const RawTensor& gy,
                                                                                NeedsGrad, Grads g) {
      g[0] = backend::kernelsOf(c).moveSlices(c, how, gy.permuted(tags), axis, by_axis, k, true);
    };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace

Tensor Tensor::flip(ExecContext& ctx, Tag axis) const {
  const RawTensor& a = value();
  const size_t p = a.axis(axis);
  refuseQ8("flip", a);
  RawTensor out = RawTensor::empty(ctx, a.tags(), a.shape(), a.dtype());
  backend::kernelsOf(ctx).copy(ctx, reversed(a, p), out);
  return ops::finishOp(ctx, "flip", out, {this}, [&] {
    return [tags = a.tags(), p](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::empty(c, tags, gy.permuted(tags).shape());
      backend::kernelsOf(c).copy(c, reversed(gy.permuted(tags), p), full);
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(out.numel()));
}

Tensor Tensor::roll(ExecContext& ctx, Tag axis, int64_t shift) const {
  const RawTensor& a = value();
  const int64_t n = a.extent(axis);
  refuseQ8("roll", a);
  const int64_t s = backend::wrapShift(shift, n);
  RawTensor out = RawTensor::empty(ctx, a.tags(), a.shape(), a.dtype());
  backend::rollInto(ctx, a, out, axis, s);
  return ops::finishOp(ctx, "roll", out, {this}, [&] {
    return [tags = a.tags(), axis, back = backend::wrapShift(n - s, n)](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor src = gy.permuted(tags);
      RawTensor full = RawTensor::empty(c, tags, src.shape());
      backend::rollInto(c, src, full, axis, back);
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(out.numel()));
}

Tensor Tensor::rollBy(ExecContext& ctx, Tag axis, Tag by_axis, const Tensor& shifts) const {
  return perSliceOp(ctx, "rollBy", backend::Kernels::SliceMove::roll, *this, axis, by_axis, shifts);
}

Tensor Tensor::shiftBy(ExecContext& ctx, Tag axis, Tag by_axis, const Tensor& shifts) const {
  return perSliceOp(ctx, "shiftBy", backend::Kernels::SliceMove::shift, *this, axis, by_axis, shifts);
}

namespace {

// relposShift's layout: the tensor padded with one zero column before key_axis, its axes in
// `order` (the batch axes, then query, key) and contiguous; the result reads it from element Q of
// each (Q, K+1) block with strides (K, 1), which is the Transformer-XL view/drop-a-row/view.
RawTensor relposView(const RawTensor& padded, int64_t q, int64_t k) {
  std::vector<int64_t> strides = padded.strides();
  Extents shape = padded.shape();
  const size_t r = shape.size();
  shape[r - 1] = k;
  strides[r - 2] = k;
  strides[r - 1] = 1;
  return RawTensor::view(padded.storage(), padded.dtype(), padded.tags(), std::move(shape), std::move(strides),
                         padded.offset() + q);
}

}  // namespace

Tensor Tensor::relposShift(ExecContext& ctx, Tag query_axis, Tag key_axis) const {
  const RawTensor& a = value();
  const int64_t q = a.extent(query_axis), k = a.extent(key_axis);
  if (query_axis == key_axis)
    fail(ErrorCode::InvalidArgument, "relposShift of " + a.describe() + ": the query and key axes are both " +
                                         quoted(query_axis));
  refuseQ8("relposShift", a);
  Tags order;
  for (Tag t : a.tags())
    if (t != query_axis && t != key_axis) order.push_back(t);
  order.push_back(query_axis);
  order.push_back(key_axis);
  const RawTensor src = a.permuted(order);
  Extents padded_shape = src.shape();
  padded_shape.back() = checkedAdd(k, 1, "relposShift");
  validateShape(order, padded_shape, "relposShift");
  RawTensor padded = RawTensor::zeros(ctx, order, padded_shape, a.dtype());
  backend::kernelsOf(ctx).copy(ctx, src, padded.narrowed(key_axis, 1, k));
  RawTensor out = relposView(padded, q, k);
  return ops::finishOp(ctx, "relposShift", out, {this}, [&] {
    return [order, padded_shape, q, k, key_axis](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      // Each result element reads a distinct padded element, so the adjoint is one copy back.
      RawTensor full = RawTensor::zeros(c, order, padded_shape);
      backend::kernelsOf(c).copy(c, gy.permuted(order), relposView(full, q, k));
      g[0] = full.narrowed(key_axis, 1, k);
    };
  }, static_cast<size_t>(out.numel()));
}

namespace {

// t with axis p read as two axes (outer, inner) of extents (e0, e1), row-major: repeatAxis's
// copies indexed apart. `extra` names the added axis, which only the copy and the sum see.
RawTensor splitView(const RawTensor& t, size_t p, int64_t e0, int64_t e1, int64_t s0, int64_t s1, Tag extra,
                    bool extra_outer) {
  Tags tags = t.tags();
  Extents shape = t.shape();
  std::vector<int64_t> strides = t.strides();
  const auto at = static_cast<std::ptrdiff_t>(p);
  shape[p] = e1;
  strides[p] = s1;
  shape.insert(shape.begin() + at, e0);
  strides.insert(strides.begin() + at, s0);
  tags.insert(tags.begin() + at + (extra_outer ? 0 : 1), extra);
  return RawTensor::view(t.storage(), t.dtype(), std::move(tags), std::move(shape), std::move(strides), t.offset());
}

// A tag that is not among tags: the axis that counts repeatAxis's copies.
Tag freshTag(const Tags& tags) {
  std::string name = "repeat";
  while (hasTag(tags, Tag(name))) name += "'";
  return Tag(name);
}

}  // namespace

Tensor Tensor::repeatAxis(ExecContext& ctx, Tag axis, int64_t times, bool interleave) const {
  const RawTensor& a = value();
  const size_t p = a.axis(axis);
  if (times < 0)
    fail(ErrorCode::InvalidArgument, "repeatAxis " + quoted(axis) + " of " + a.describe() + ": times " +
                                         std::to_string(times) + " must be >= 0");
  refuseQ8("repeatAxis", a);
  const int64_t n = a.shape()[p];
  Extents shape = a.shape();
  shape[p] = checkedMul(n, times, "repeatAxis");
  validateShape(a.tags(), shape, "repeatAxis");
  RawTensor out = RawTensor::empty(ctx, a.tags(), shape, a.dtype());
  const Tag copies = freshTag(a.tags());
  // Tiled: (times, n) with the copies outer; interleaved: (n, times) with the copies inner. The
  // source repeats through a stride-0 axis.
  auto layout = [&](const RawTensor& t, int64_t s, bool source) {
    if (interleave) return splitView(t, p, n, times, source ? s : times * s, source ? 0 : s, copies, false);
    return splitView(t, p, times, n, source ? 0 : n * s, s, copies, true);
  };
  // An empty result copies nothing; its strides may be too large to scale (an axis of extent 0
  // beside one of 2^62), so no split view of it is made.
  if (out.numel() > 0)
    backend::kernelsOf(ctx).copy(ctx, layout(a, a.strides()[p], true), layout(out, out.strides()[p], false));
  return ops::finishOp(ctx, "repeatAxis", out, {this}, [&] {
    return [tags = a.tags(), in_shape = a.shape(), p, n, times, interleave, copies](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      if (numelOf(in_shape) == 0) {  // as above: nothing to sum, and strides not to be scaled
        g[0] = RawTensor::empty(c, tags, in_shape, gy.dtype());
        return;
      }
      const RawTensor t = gy.permuted(tags);
      const int64_t s = t.strides()[p];
      const RawTensor split = interleave ? splitView(t, p, n, times, times * s, s, copies, false)
                                         : splitView(t, p, times, n, n * s, s, copies, true);
      g[0] = backend::sumTo(c, split, tags, in_shape);
    };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace fucina
