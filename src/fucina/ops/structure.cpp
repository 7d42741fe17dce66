// Structure ops that make new values: concat, stack, pad, where, maskedFill and the band masks
// (tril, triu, bandPart). Each forward is beside its VJP; concat/stack take any number of
// operands, so they build their record here instead of through finishOp's fixed operand list.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// concat along an existing axis; `op` names the public op in errors.
Tensor concatImpl(ExecContext& ctx, std::string_view op, std::span<const Tensor> ts, Tag axis) {
  if (ts.empty()) fail(ErrorCode::InvalidArgument, std::string(op) + ": no tensors to join");
  const RawTensor& first = ts[0].value();
  const size_t p = first.axis(axis);
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (size_t k = 0; k < ts.size(); ++k) {
    const RawTensor& t = ts[k].value();
    if (t.dtype() != first.dtype())
      fail(ErrorCode::DTypeMismatch, std::string(op) + ": tensor " + std::to_string(k) + " is " +
                                         std::string(name(t.dtype())) + ", tensor 0 is " +
                                         std::string(name(first.dtype())));
    bool same = t.rank() == first.rank() && hasTag(t.tags(), axis);
    for (size_t i = 0; same && i < first.rank(); ++i)
      same = hasTag(t.tags(), first.tags()[i]) &&
             (i == p || t.extent(first.tags()[i]) == first.shape()[i]);
    if (!same)
      fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": tensor " +
                                         std::to_string(k) + " " + t.describe() +
                                         " must have the axes of tensor 0 " + first.describe() +
                                         " with equal extents except " + quoted(axis));
    offsets.push_back(total);
    total += t.extent(axis);
  }
  Extents shape = first.shape();
  shape[p] = total;
  RawTensor out = RawTensor::empty(ctx, first.tags(), shape, first.dtype());
  for (size_t k = 0; k < ts.size(); ++k) {
    const RawTensor& t = ts[k].value();
    backend::kernelsOf(ctx).copy(ctx, t.permuted(first.tags()), out.narrowed(axis, offsets[k], t.extent(axis)));
  }
  bool record = isGradEnabled();
  if (record) {
    record = false;
    for (const Tensor& t : ts) record = record || t.requiresGrad();
  }
  if (!record) return Tensor::make(ctx, std::move(out), nullptr);
  std::vector<std::shared_ptr<GradState>> states;
  std::vector<int64_t> lengths;
  for (const Tensor& t : ts) {
    states.push_back(t.impl()->gradState());
    lengths.push_back(t.extent(axis));
  }
  auto vjp = [tags = first.tags(), axis, offsets, lengths](ExecContext&, const RawTensor& gy,
                                                           NeedsGrad needs, Grads g) {
    const RawTensor ordered = gy.permuted(tags);
    for (size_t k = 0; k < g.size(); ++k)
      if (needs[k]) g[k] = ordered.narrowed(axis, offsets[k], lengths[k]);
  };
  auto rec = std::make_unique<ops::OpRecord<decltype(vjp)>>(op, std::move(states), 0, std::move(vjp));
  auto state = std::make_shared<GradState>(out.tags(), out.shape(), std::move(rec));
  return Tensor::make(ctx, std::move(out), std::move(state));
}

// Unbounded sides of a band: j - i is never outside [kBelowAll, kAboveAll].
constexpr int64_t kBelowAll = std::numeric_limits<int64_t>::min(), kAboveAll = std::numeric_limits<int64_t>::max();

// A copy of x with the elements whose row index i along `row` and column index j along `col` have
// j - i outside [lo, hi] zeroed (the backend's band); its VJP zeroes the same elements of gy.
Tensor bandOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag row, Tag col, int64_t lo, int64_t hi) {
  if (!ops::allF32({&x}))
    return ops::viaF32(ctx, op, {&x}, [&](std::span<const Tensor> f) { return bandOp(ctx, op, f[0], row, col, lo, hi); });
  const RawTensor& a = x.value();
  a.axis(row);
  a.axis(col);
  if (row == col)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": row and column are both " + quoted(row));
  RawTensor out = backend::kernelsOf(ctx).band(ctx, a, row, col, lo, hi);
  return ops::finishOp(ctx, op, out, {&x}, [&] {
    return [tags = a.tags(), row, col, lo, hi](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = backend::kernelsOf(c).band(c, gy.permuted(tags), row, col, lo, hi);
    };
  }, static_cast<size_t>(out.numel()));
}

RawTensor maskOf(ExecContext& ctx, std::string_view op, const Tensor& m) {
  const RawTensor& r = m.value();
  if (r.dtype() != DType::u8 && r.dtype() != DType::f32)
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": the mask must be u8 or f32, got " +
                                       std::string(name(r.dtype())) + " " + r.describe());
  return r.dtype() == DType::f32 ? r : r.to(ctx, DType::f32);
}

// gy where the mask is set (`where_set`) or where it is not, 0 elsewhere: the VJPs of where and
// maskedFill.
RawTensor maskedGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& m, bool where_set) {
  const RawTensor zero = RawTensor::full(ctx, {}, {}, 0.0);
  const std::array<const RawTensor*, 3> in{&m, where_set ? &gy : &zero, where_set ? &zero : &gy};
  return backend::kernelsOf(ctx).select(ctx, gy.tags(), gy.shape(), in);
}

}  // namespace

Tensor Tensor::concat(ExecContext& ctx, std::span<const Tensor> tensors, Tag axis) {
  return concatImpl(ctx, "concat", tensors, axis);
}

Tensor Tensor::stack(ExecContext& ctx, std::span<const Tensor> tensors, Tag new_axis) {
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors) expanded.push_back(t.insertAxis(ctx, new_axis, 0));
  return concatImpl(ctx, "stack", expanded, new_axis);
}

Tensor Tensor::pad(ExecContext& ctx, Tag axis, int64_t before, int64_t after, double value) const {
  const RawTensor& a = this->value();
  const size_t p = a.axis(axis);
  if (before < 0 || after < 0)
    fail(ErrorCode::InvalidArgument, "pad " + quoted(axis) + " of " + a.describe() + " by (" +
                                         std::to_string(before) + ", " + std::to_string(after) +
                                         "): padding must be non-negative");
  Extents shape = a.shape();
  const int64_t n = shape[p];
  shape[p] = checkedAdd(n, checkedAdd(before, after, "pad"), "pad");
  RawTensor out = RawTensor::full(ctx, a.tags(), shape, value, a.dtype());
  backend::kernelsOf(ctx).copy(ctx, a, out.narrowed(axis, before, n));
  return ops::finishOp(ctx, "pad", out, {this}, [&] {
    return [tags = a.tags(), axis, before, n](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = gy.permuted(tags).narrowed(axis, before, n);
    };
  });
}

Tensor Tensor::where(ExecContext& ctx, const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (!ops::allF32({&a, &b}))
    return ops::viaF32(ctx, "where", {&a, &b}, [&](std::span<const Tensor> f) { return where(ctx, cond, f[0], f[1]); });
  const RawTensor m = maskOf(ctx, "where", cond);
  const RawTensor& ra = a.value();
  const RawTensor& rb = b.value();
  const ops::AlignedShape ab = ops::alignShapes("where", ra, rb);
  const ops::AlignedShape s = ops::alignShapes("where", ra.broadcastView(ab.tags, ab.shape), m);
  const std::array<const RawTensor*, 3> in{&m, &ra, &rb};
  RawTensor out = backend::kernelsOf(ctx).select(ctx, s.tags, s.shape, in);
  return ops::finishOp(ctx, "where", out, {&a, &b}, [&] {
    return [m, ta = ra.tags(), sa = ra.shape(), tb = rb.tags(), sb = rb.shape()](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      if (needs[0]) g[0] = backend::sumTo(c, maskedGrad(c, gy, m, true), ta, sa);
      if (needs[1]) g[1] = backend::sumTo(c, maskedGrad(c, gy, m, false), tb, sb);
    };
  }, static_cast<size_t>(out.numel()));
}

Tensor Tensor::maskedFill(ExecContext& ctx, const Tensor& mask, double value) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "maskedFill", {this}, [&](std::span<const Tensor> f) { return f[0].maskedFill(ctx, mask, value); });
  const RawTensor& a = this->value();
  const RawTensor m = maskOf(ctx, "maskedFill", mask);
  for (size_t i = 0; i < m.rank(); ++i)
    if (!hasTag(a.tags(), m.tags()[i]) || a.extent(m.tags()[i]) != m.shape()[i])
      fail(ErrorCode::ShapeMismatch, "maskedFill: mask " + m.describe() + " must broadcast to " +
                                         a.describe() + " (axis " + quoted(m.tags()[i]) + ")");
  const auto fill = static_cast<float>(value);
  const RawTensor filler = RawTensor::full(ctx, {}, {}, fill);
  const std::array<const RawTensor*, 3> in{&m, &filler, &a};
  RawTensor out = backend::kernelsOf(ctx).select(ctx, a.tags(), a.shape(), in);
  return ops::finishOp(ctx, "maskedFill", out, {this}, [&] {
    return [m](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) { g[0] = maskedGrad(c, gy, m, false); };
  }, static_cast<size_t>(out.numel()));
}

Tensor Tensor::tril(ExecContext& ctx, Tag row, Tag col, int64_t diagonal) const {
  return bandOp(ctx, "tril", *this, row, col, kBelowAll, diagonal);  // kept: j - i <= diagonal
}

Tensor Tensor::triu(ExecContext& ctx, Tag row, Tag col, int64_t diagonal) const {
  return bandOp(ctx, "triu", *this, row, col, diagonal, kAboveAll);  // kept: j - i >= diagonal
}

Tensor Tensor::bandPart(ExecContext& ctx, Tag row, Tag col, int64_t lower, int64_t upper) const {
  if (lower < -1 || upper < -1)
    fail(ErrorCode::InvalidArgument, "bandPart: lower " + std::to_string(lower) + " and upper " +
                                         std::to_string(upper) + " must be -1 (unbounded) or >= 0");
  // Kept: (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper).
  return bandOp(ctx, "bandPart", *this, row, col, lower < 0 ? kBelowAll : -lower, upper < 0 ? kAboveAll : upper);
}

}  // namespace fucina
