// Views and layout: results share the input's storage where possible; VJPs route gradients back
// through the same layout (a broadcast's VJP sums, a narrow's pads with zeros).
#include <algorithm>
#include <limits>
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace ops {
RawTensor pendingPlaceholder(ExecContext& ctx, const Tags& tags, const Extents& shape) {
  return RawTensor::full(ctx, {}, {}, std::numeric_limits<double>::quiet_NaN()).broadcastView(tags, shape);
}

}  // namespace ops

Tensor Tensor::broadcastTo(ExecContext& ctx, Tags tags, Extents shape) const {
  const RawTensor& a = value();
  RawTensor out = a.broadcastView(tags, shape);
  return ops::finishOp(ctx, "broadcastTo", out, {this}, [&] {
    return [tags = a.tags(), shape = a.shape()](ExecContext& c, const RawTensor& gy, NeedsGrad,
                                                Grads g) { g[0] = backend::sumTo(c, gy, tags, shape); };
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

namespace {
// x's elements [start, start + length) along axis as a view, its gradient placed there.
Tensor narrowView(ExecContext& ctx, std::string_view name, const Tensor& x, Tag axis, int64_t start, int64_t length) {
  return ops::finishPlacedOp(ctx, name, x.value().narrowed(axis, start, length), x, {axis, start, length}, [] {
    return [](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) { g[0] = gy; };
  });
}
}  // namespace

Tensor Tensor::narrow(ExecContext& ctx, Tag axis, int64_t start, int64_t length) const {
  return narrowView(ctx, "narrow", *this, axis, start, length);
}

Tensor Tensor::contiguous(ExecContext& ctx) const {
  const RawTensor& a = value();
  RawTensor out = a.contiguous(ctx);  // q8_0: already in, or copied into, its canonical layout
  if (out.storage() == a.storage()) return *this;
  return ops::finishOp(ctx, "contiguous", out, {this}, [] {
    return [](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) { g[0] = gy; };
  });
}

// ---------------------------------------------------------------- structure
// Reshaping ops work on a view whose axis order is the logical one they are defined over
// (permuted by name first), so no op depends on the physical order of axes.

namespace {

RawTensor makeView(const RawTensor& a, Tags tags, Extents shape, std::vector<int64_t> strides,
                   int64_t offset) {
  return RawTensor::view(a.storage(), a.dtype(), std::move(tags), std::move(shape),
                         std::move(strides), offset);
}

// Fuses axes [first, first+count) of a (in a's order) into one axis `into`: a view when their
// strides nest row-major, else a contiguous copy.
RawTensor mergeRun(ExecContext& ctx, const RawTensor& a, size_t first, size_t count, Tag into) {
  int64_t extent = 1;
  for (size_t i = first; i < first + count; ++i) extent *= a.shape()[i];
  bool viewable = true;
  int64_t stride = 0, inner = 1;  // stride of the merged axis, extent nested inside the last axis
  bool have = false;
  for (size_t i = first + count; i-- > first;) {
    if (a.shape()[i] == 1) continue;
    if (!have) {
      stride = a.strides()[i];
      have = true;
    } else if (a.strides()[i] != stride * inner) {
      viewable = false;
    }
    inner *= a.shape()[i];
  }
  const RawTensor src = (viewable || extent == 0) ? a : a.clone(ctx);
  if (!viewable && extent != 0) {
    stride = 1;
    for (size_t i = first + count; i < src.rank(); ++i) stride *= src.shape()[i];
  }
  Tags tags;
  Extents shape;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < src.rank(); ++i) {
    if (i == first) {
      tags.push_back(into);
      shape.push_back(extent);
      strides.push_back(stride);
    }
    if (i >= first && i < first + count) continue;
    tags.push_back(src.tags()[i]);
    shape.push_back(src.shape()[i]);
    strides.push_back(src.strides()[i]);
  }
  validateShape(tags, shape, "merge");
  return makeView(src, std::move(tags), std::move(shape), std::move(strides), src.offset());
}

// Splits axis `axis` of a into `into` (row-major, in place): always a view.
RawTensor splitAxis(std::string_view op, const RawTensor& a, Tag axis, const Tags& into,
                    const Extents& extents) {
  const size_t p = a.axis(axis);
  if (into.size() != extents.size() || into.empty())
    fail(ErrorCode::InvalidArgument, std::string(op) + ": " + std::to_string(into.size()) +
                                         " tags " + describe(into) + " for " +
                                         std::to_string(extents.size()) + " extents");
  validateShape(into, extents, op);  // so their product fits (Note [Extent products fit])
  const int64_t prod = numelOf(extents);
  if (prod != a.shape()[p])
    fail(ErrorCode::ShapeMismatch, std::string(op) + " " + quoted(axis) + " of " + a.describe() +
                                       " into " + describe(into, extents) + ": the extents multiply to " +
                                       std::to_string(prod) + ", not " + std::to_string(a.shape()[p]));
  Tags tags;
  Extents shape;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < a.rank(); ++i) {
    if (i != p) {
      tags.push_back(a.tags()[i]);
      shape.push_back(a.shape()[i]);
      strides.push_back(a.strides()[i]);
      continue;
    }
    std::vector<int64_t> s(into.size());
    int64_t acc = a.strides()[p];
    for (size_t k = into.size(); k-- > 0;) {
      s[k] = acc;
      acc *= extents[k];
    }
    tags.insert(tags.end(), into.begin(), into.end());
    shape.insert(shape.end(), extents.begin(), extents.end());
    strides.insert(strides.end(), s.begin(), s.end());
  }
  validateShape(tags, shape, op);
  return makeView(a, std::move(tags), std::move(shape), std::move(strides), a.offset());
}

// The reshaping ops assume element-wise layouts (their copies are row-major): a q8_0 tensor, whose
// blocks must stay whole along a stride-1 axis, is refused instead.
void refuseQ8(std::string_view op, const RawTensor& a) {
  if (a.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, std::string(op) + " of q8_0 " + a.describe() +
                                       ": q8_0 views are permute, withTags, narrow (the block axis "
                                       "by whole blocks), select and slice of other axes, "
                                       "insertAxis and squeeze; dequantize with to(ctx, DType::f32) first");
}

// Row-major reshape over a's axis order: a view when a is contiguous, else a copy.
RawTensor reshapeRaw(ExecContext& ctx, const RawTensor& a, Tags tags, Extents shape) {
  const RawTensor src = a.contiguous(ctx);
  std::vector<int64_t> strides = contiguousStrides(shape);
  return makeView(src, std::move(tags), std::move(shape), std::move(strides), src.offset());
}

// a without its extent-1 axis at position p.
RawTensor dropUnitAxis(const RawTensor& a, size_t p) {
  Tags tags = a.tags();
  Extents shape = a.shape();
  std::vector<int64_t> strides = a.strides();
  tags.erase(tags.begin() + static_cast<std::ptrdiff_t>(p));
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(p));
  strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(p));
  return makeView(a, std::move(tags), std::move(shape), std::move(strides), a.offset());
}

RawTensor insertUnitAxis(const RawTensor& a, Tag name, size_t p) {
  Tags tags = a.tags();
  Extents shape = a.shape();
  std::vector<int64_t> strides = a.strides();
  tags.insert(tags.begin() + static_cast<std::ptrdiff_t>(p), name);
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(p), 1);
  strides.insert(strides.begin() + static_cast<std::ptrdiff_t>(p), 0);
  return makeView(a, std::move(tags), std::move(shape), std::move(strides), a.offset());
}

}  // namespace

Tensor Tensor::insertAxis(ExecContext& ctx, Tag name, size_t position) const {
  const RawTensor& a = value();
  if (position > a.rank())
    fail(ErrorCode::IndexOutOfRange, "insertAxis " + quoted(name) + " at position " +
                                         std::to_string(position) + " of " + a.describe() +
                                         ": positions run from 0 to " + std::to_string(a.rank()));
  if (hasTag(a.tags(), name))
    fail(ErrorCode::ShapeMismatch, "insertAxis: " + a.describe() + " already has an axis " + quoted(name));
  RawTensor out = insertUnitAxis(a, name, position);
  return ops::finishOp(ctx, "insertAxis", out, {this}, [&] {
    return [tags = out.tags(), name](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor ordered = gy.permuted(tags);
      g[0] = dropUnitAxis(ordered, ordered.axis(name));
    };
  });
}

Tensor Tensor::squeeze(ExecContext& ctx, Tag axis) const {
  const RawTensor& a = value();
  const size_t p = a.axis(axis);
  if (a.shape()[p] != 1)
    fail(ErrorCode::InvalidArgument, "squeeze " + quoted(axis) + " of " + a.describe() +
                                         ": only an axis of extent 1 can be removed");
  RawTensor out = dropUnitAxis(a, p);
  return ops::finishOp(ctx, "squeeze", out, {this}, [&] {
    return [tags = out.tags(), axis, p](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = insertUnitAxis(gy.permuted(tags), axis, p);
    };
  });
}

Tensor Tensor::merge(ExecContext& ctx, const Tags& axes, Tag into) const {
  const RawTensor& a = value();
  refuseQ8("merge", a);
  if (axes.empty())
    fail(ErrorCode::InvalidArgument, "merge into " + quoted(into) + ": no axes to merge in " + a.describe());
  size_t first = a.rank();
  for (Tag t : axes) {
    first = std::min(first, a.axis(t));
    if (std::count(axes.begin(), axes.end(), t) > 1)
      fail(ErrorCode::ShapeMismatch, "merge " + describe(axes) + ": axis " + quoted(t) + " listed twice");
  }
  // The merged group goes where its first axis was; other axes keep their order.
  Tags order;
  for (size_t i = 0; i < a.rank(); ++i) {
    if (i == first) order.insert(order.end(), axes.begin(), axes.end());
    if (!hasTag(axes, a.tags()[i])) order.push_back(a.tags()[i]);
  }
  for (size_t i = 0; i < a.rank(); ++i)
    if (!hasTag(axes, a.tags()[i]) && a.tags()[i] == into)
      fail(ErrorCode::ShapeMismatch, "merge " + describe(axes) + " into " + quoted(into) + ": " +
                                         a.describe() + " already has an axis " + quoted(into));
  RawTensor out = mergeRun(ctx, a.permuted(order), first, axes.size(), into);
  Extents extents;
  for (Tag t : axes) extents.push_back(a.extent(t));
  return ops::finishOp(ctx, "merge", out, {this}, [&] {
    return [tags = out.tags(), axes, into, extents](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = splitAxis("merge", gy.permuted(tags), into, axes, extents);
    };
  });
}

Tensor Tensor::split(ExecContext& ctx, Tag axis, Tags into, Extents extents) const {
  const RawTensor& a = value();
  refuseQ8("split", a);
  RawTensor out = splitAxis("split", a, axis, into, extents);
  return ops::finishOp(ctx, "split", out, {this}, [&] {
    return [tags = out.tags(), first = a.axis(axis), n = into.size(), axis](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = mergeRun(c, gy.permuted(tags), first, n, axis);
    };
  });
}

Tensor Tensor::flatten(ExecContext& ctx, Tag into) const {
  const RawTensor& a = value();
  if (a.rank() == 0) return insertAxis(ctx, into, 0);
  return merge(ctx, a.tags(), into);
}

Tensor Tensor::reshape(ExecContext& ctx, Tags tags, Extents shape) const {
  const RawTensor& a = value();
  refuseQ8("reshape", a);
  validateShape(tags, shape, "reshape");
  if (numelOf(shape) != a.numel())
    fail(ErrorCode::ShapeMismatch, "reshape " + a.describe() + " to " + describe(tags, shape) +
                                       ": " + std::to_string(a.numel()) + " elements cannot become " +
                                       std::to_string(numelOf(shape)));
  RawTensor out = reshapeRaw(ctx, a, tags, shape);
  return ops::finishOp(ctx, "reshape", out, {this}, [&] {
    return [in_tags = a.tags(), in_shape = a.shape(), tags](ExecContext& c, const RawTensor& gy,
                                                            NeedsGrad, Grads g) {
      g[0] = reshapeRaw(c, gy.permuted(tags), in_tags, in_shape);
    };
  });
}

Tensor Tensor::select(ExecContext& ctx, Tag axis, int64_t index) const {
  const RawTensor& a = value();
  const size_t p = a.axis(axis);
  const int64_t n = a.shape()[p];
  if (index < -n || index >= n)
    fail(ErrorCode::IndexOutOfRange, "select index " + std::to_string(index) + " of axis " +
                                         quoted(axis) + " in " + a.describe() + ": valid indices are [" +
                                         std::to_string(-n) + ", " + std::to_string(n) + ")");
  const int64_t i = index < 0 ? index + n : index;
  RawTensor out = dropUnitAxis(a.narrowed(axis, i, 1), p);
  return ops::finishPlacedOp(ctx, "select", out, *this, {axis, i, 1}, [&] {
    return [out_tags = out.tags(), axis, p](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = insertUnitAxis(gy.permuted(out_tags), axis, p);
    };
  });
}

namespace {
RawTensor strided(const RawTensor& a, size_t p, int64_t start, int64_t end, int64_t step) {
  Extents shape = a.shape();
  std::vector<int64_t> strides = a.strides();
  // A step past the range takes one element: clamped, so the stride cannot overflow.
  const int64_t s = std::min(step, std::max<int64_t>(end - start, 1));
  shape[p] = (end - start + s - 1) / s;
  strides[p] *= s;
  return makeView(a, a.tags(), std::move(shape), std::move(strides), a.offset() + start * a.strides()[p]);
}
}  // namespace

Tensor Tensor::slice(ExecContext& ctx, Tag axis, int64_t start, int64_t end, int64_t step) const {
  const RawTensor& a = value();
  const size_t p = a.axis(axis);
  const int64_t n = a.shape()[p];
  if (step < 1)
    fail(ErrorCode::InvalidArgument, "slice " + quoted(axis) + " of " + a.describe() + ": step " +
                                         std::to_string(step) + " must be at least 1");
  if (start < 0 || end < start || end > n)
    fail(ErrorCode::IndexOutOfRange, "slice " + quoted(axis) + " of " + a.describe() + " to [" +
                                         std::to_string(start) + ", " + std::to_string(end) +
                                         "): need 0 <= start <= end <= " + std::to_string(n));
  if (a.dtype() == DType::q8_0 && a.strides()[p] == 1 && step != 1) refuseQ8("slice with a step along the block axis", a);
  if (step == 1) return narrowView(ctx, "slice", *this, axis, start, end - start);
  RawTensor out = strided(a, p, start, end, step);
  return ops::finishOp(ctx, "slice", out, {this}, [&] {
    return [tags = a.tags(), shape = a.shape(), p, start, end, step](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, tags, shape);
      backend::kernelsOf(c).copy(c, gy.permuted(tags), strided(full, p, start, end, step));
      g[0] = std::move(full);
    };
  });
}

// Casts: differentiable between float types whose gradient stays f32 (the VJP passes gy
// through); a grad-carrying cast to f64 or an integer type is refused.
Tensor Tensor::to(ExecContext& ctx, DType dtype) const {
  const RawTensor& a = value();
  if (dtype == DType::q8_0 && a.dtype() != DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "to(q8_0) of " + std::string(name(a.dtype())) + " " + a.describe() +
                                       ": q8_0 is block-quantized; use quantize(ctx, DType::q8_0, "
                                       "block_axis), which picks the axis the blocks run along");
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

Tensor Tensor::to(ExecContext& ctx, Device device) const {
  const RawTensor& a = value();
  if (a.device() == device) return *this;
  if (device == Device::cpu)
    fail(ErrorCode::DeviceReadIsAsync, "to(cpu) of the " + std::string(name(a.device())) + " tensor " + a.describe() +
                                           ": a device's values are read asynchronously, by the JS facade's data() promise");
  if (requiresGrad() && isGradEnabled())
    fail(ErrorCode::UnsupportedOnDevice,
         "to(" + std::string(name(device)) + ") of a tensor that requires gradients: its gradient would have to be "
         "read back from the device synchronously; make the leaves on the device (a variable of a device tensor)");
  ExecContext& target = ctx.on(device);
  const RawTensor host = a.contiguous(ctx.on(a.device()));  // q8_0: in emptyQ8's layout
  RawTensor out = a.dtype() == DType::q8_0 ? RawTensor::emptyQ8(target, a.tags(), a.shape(), internal::blockAxisOf(host))
                                           : RawTensor::empty(target, a.tags(), a.shape(), a.dtype());
  backend::kernelsOf(target).copy(target, host, out);
  return Tensor::fromRaw(target, std::move(out));
}

}  // namespace fucina
