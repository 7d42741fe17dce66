// Views by layout: alignTo (permute plus new extent-1 axes), viewWithStrides
// (torch.as_strided), materialize (a copy that never aliases), sliceStep (Python slicing with
// negative steps) and unbindInto (select views). Forward beside VJP, as in view.cpp.
//
// Views never get negative strides: RawTensor does not document them and the kernels past
// copyConvert (GEMM packing, the reductions' row planning, safetensors) assume strides >= 0.
// A negative step is therefore a copy (slice then flip, ops/shift.cpp).
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// a without the axes `drop` (each of extent 1), the others in a's order.
RawTensor withoutUnitAxes(const RawTensor& a, const Tags& drop) {
  Tags tags;
  Extents shape;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < a.rank(); ++i) {
    if (hasTag(drop, a.tags()[i])) continue;
    tags.push_back(a.tags()[i]);
    shape.push_back(a.shape()[i]);
    strides.push_back(a.strides()[i]);
  }
  return RawTensor::view(a.storage(), a.dtype(), std::move(tags), std::move(shape), std::move(strides), a.offset());
}

}  // namespace

Tensor Tensor::alignTo(ExecContext& ctx, const Tags& tags) const {
  const RawTensor& a = value();
  for (size_t i = 0; i < tags.size(); ++i)
    if (std::count(tags.begin(), tags.end(), tags[i]) > 1)
      fail(ErrorCode::InvalidArgument, "alignTo " + describe(tags) + ": axis " + quoted(tags[i]) + " listed twice");
  for (Tag t : a.tags())
    if (!hasTag(tags, t))
      fail(ErrorCode::ShapeMismatch, "alignTo " + describe(tags) + ": axis " + quoted(t) + " of " + a.describe() +
                                         " is not among the tags (alignTo only adds and reorders axes)");
  Extents shape;
  std::vector<int64_t> strides;
  Tags added;
  for (Tag t : tags) {
    if (const auto i = findTag(a.tags(), t)) {
      shape.push_back(a.shape()[*i]);
      strides.push_back(a.strides()[*i]);
    } else {
      shape.push_back(1);
      strides.push_back(0);
      added.push_back(t);
    }
  }
  validateShape(tags, shape, "alignTo");
  RawTensor out = RawTensor::view(a.storage(), a.dtype(), tags, std::move(shape), std::move(strides), a.offset());
  return ops::finishOp(ctx, "alignTo", out, {this}, [&] {
    return [tags, added](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = withoutUnitAxes(gy.permuted(tags), added);
    };
  });
}

Tensor Tensor::viewWithStrides(ExecContext& ctx, Tags tags, Extents shape, std::vector<int64_t> strides,
                               int64_t offset) const {
  const RawTensor& a = value();
  const std::string op = "viewWithStrides " + describe(tags, shape) + " of " + a.describe();
  if (a.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, op + ": a q8_0 tensor's elements are not addressable one by one; "
                                        "dequantize with to(ctx, DType::f32) first");
  if (tags.size() != shape.size() || strides.size() != shape.size())
    fail(ErrorCode::InvalidArgument, op + ": " + std::to_string(tags.size()) + " tags, " + std::to_string(shape.size()) +
                                         " extents and " + std::to_string(strides.size()) + " strides must agree");
  validateShape(tags, shape, "viewWithStrides");
  if (offset < 0)
    fail(ErrorCode::InvalidArgument, op + ": offset " + std::to_string(offset) + " must be >= 0");
  for (size_t k = 0; k < strides.size(); ++k)
    if (strides[k] < 0)
      fail(ErrorCode::InvalidArgument, op + ": stride " + std::to_string(strides[k]) + " of axis " + quoted(tags[k]) +
                                           " must be >= 0 (views have no negative strides; see flip and sliceStep)");
  // The last element reached: offset + Σ (extent - 1)·stride, checked so that it cannot wrap.
  const int64_t n = a.numel();
  int64_t last = offset;
  const bool empty = numelOf(shape) == 0;
  for (size_t k = 0; k < shape.size() && !empty; ++k)
    last = checkedAdd(last, checkedMul(shape[k] - 1, strides[k], "viewWithStrides"), "viewWithStrides");
  if (empty ? offset > n : last >= n)
    fail(ErrorCode::InvalidArgument, op + ": offset " + std::to_string(offset) + " and these strides reach element " +
                                         std::to_string(empty ? offset : last) + ", past the " + std::to_string(n) +
                                         " elements");
  const RawTensor src = a.contiguous(ctx);
  RawTensor out = RawTensor::view(src.storage(), a.dtype(), tags, shape, strides, src.offset() + offset);
  return ops::finishOp(ctx, "viewWithStrides", out, {this}, [&] {
    return [in_tags = a.tags(), in_shape = a.shape(), tags, strides, offset](ExecContext& c, const RawTensor& gy,
                                                                               NeedsGrad, Grads g) {
      // The view's elements may coincide (overlapping strides), so the adjoint scatter-adds.
      RawTensor full = RawTensor::zeros(c, in_tags, in_shape);
      if (full.numel() > 0) {
        const RawTensor src = gy.permuted(tags);
        const RawTensor dst = RawTensor::view(full.storage(), DType::f32, tags, src.shape(), strides, full.offset() + offset);
        backend::kernelsOf(c).scatterAddView(c, dst, src);
      }
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(out.numel()));
}

Tensor Tensor::materialize(ExecContext& ctx) const {
  RawTensor out = value().clone(ctx);
  return ops::finishOp(ctx, "materialize", out, {this}, [] {
    return [](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) { g[0] = gy; };
  });
}

Tensor Tensor::sliceStep(ExecContext& ctx, Tag axis, int64_t start, int64_t end, int64_t step) const {
  const RawTensor& a = value();
  const int64_t n = a.extent(axis);
  if (step == 0)
    fail(ErrorCode::InvalidArgument, "sliceStep " + quoted(axis) + " of " + a.describe() + ": step must not be 0");
  // Python's slice.indices(n): negative indices count from the end, then clamp to [lo, hi].
  const int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
  auto clampIndex = [&](int64_t i) {
    if (i < 0) i = i < -n ? lo : i + n;  // i < -n: i + n < 0, also for the most negative i
    return std::clamp(i, lo, hi);
  };
  const int64_t s = clampIndex(start), e = clampIndex(end);
  if (step > 0) return slice(ctx, axis, s, std::max(s, e), step);
  if (a.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "sliceStep with a negative step of q8_0 " + a.describe() +
                                       ": the copy would split its blocks; dequantize with to(ctx, DType::f32) first");
  // Elements s, s - m, ..., down to above e: the slice from the lowest of them up to s, flipped.
  const int64_t m = step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
  const int64_t count = e < s ? (s - e - 1) / m + 1 : 0;
  if (count == 0) return slice(ctx, axis, 0, 0);
  const int64_t first = s - (count - 1) * m;
  return slice(ctx, axis, first, s + 1, m).flip(ctx, axis);
}

std::vector<Tensor> Tensor::unbindInto(ExecContext& ctx, Tag axis) const {
  const int64_t n = extent(axis);
  // One handle per index, each a few hundred bytes outside the context's allocator: an empty
  // tensor's axis may be 2^40 long, which would exhaust memory one handle at a time.
  constexpr int64_t kMaxParts = int64_t{1} << 24;
  if (n > kMaxParts)
    fail(ErrorCode::InvalidArgument, "unbindInto " + quoted(axis) + " of " + value().describe() + ": " +
                                         std::to_string(n) + " results, more than the 2^24 unbindInto makes");
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(select(ctx, axis, i));
  return out;
}

}  // namespace fucina
