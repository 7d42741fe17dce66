// Masked selection: maskedSelect (the elements where a mask is set, as one new axis) and
// maskedScatter (those elements replaced, in order, by a source's). Masks are as maskedFill's: u8
// or f32, set where nonzero, with axes among x's at equal extents (missing axes broadcast).
// Positions run row-major over x's axis order; both VJPs move gy through the same positions. The
// positions are 1-D indices into a tensor seen flat, so every move is a row copy of one element
// (Kernels::selectRows, updateRows).
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;
using RowUpdate = backend::Kernels::RowUpdate;

namespace {

// The row-major offsets in a (contiguous, in a's axis order) where the mask is set, as i64 on axis
// `tag`.
RawTensor setPositions(ExecContext& ctx, std::string_view op, const RawTensor& a, const Tensor& mask, Tag tag) {
  const RawTensor& m = mask.value();
  if (m.dtype() != DType::u8 && m.dtype() != DType::f32)
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": the mask must be u8 or f32, got " + std::string(name(m.dtype())) +
                                       " " + m.describe());
  for (size_t i = 0; i < m.rank(); ++i)
    if (!hasTag(a.tags(), m.tags()[i]) || a.extent(m.tags()[i]) != m.shape()[i])
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": mask " + m.describe() + " must broadcast to " + a.describe() +
                                         " (axis " + quoted(m.tags()[i]) + ")");
  return backend::kernelsOf(ctx).maskPositions(ctx, m.broadcastView(a.tags(), a.shape()), tag);
}

// t (contiguous) seen as one axis `tag` of all its elements, sharing its buffer.
RawTensor flat(const RawTensor& t, Tag tag) {
  return RawTensor::view(t.storage(), t.dtype(), {tag}, {t.numel()}, {1}, t.offset());
}

// A contiguous copy of t with the elements at pos zeroed.
RawTensor zeroedAt(ExecContext& ctx, const RawTensor& t, const RawTensor& pos) {
  RawTensor out = t.clone(ctx);
  const Tag at = pos.tags()[0];
  backend::kernelsOf(ctx).updateRows(ctx, flat(out, at), at, pos, RawTensor(), RowUpdate::zero);
  return out;
}

}  // namespace

Tensor Tensor::maskedSelect(ExecContext& ctx, const Tensor& mask, Tag into) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "maskedSelect", {this}, [&](std::span<const Tensor> f) { return f[0].maskedSelect(ctx, mask, into); });
  const RawTensor& a = value();
  RawTensor pos = setPositions(ctx, "maskedSelect", a, mask, into);
  RawTensor out = backend::kernelsOf(ctx).selectRows(ctx, flat(a.contiguous(ctx), into), into, pos);
  return ops::finishOp(ctx, "maskedSelect", out, {this}, [&] {
    return [pos, tags = a.tags(), shape = a.shape(), into](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, tags, shape);
      backend::kernelsOf(c).updateRows(c, flat(full, into), into, pos, gy.contiguous(c), RowUpdate::assign);
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(a.numel()));
}

Tensor Tensor::maskedScatter(ExecContext& ctx, const Tensor& mask, const Tensor& source) const {
  if (!ops::allF32({this, &source}))
    return ops::viaF32(ctx, "maskedScatter", {this, &source}, [&](std::span<const Tensor> f) { return f[0].maskedScatter(ctx, mask, f[1]); });
  const RawTensor& a = value();
  const RawTensor& s = source.value();
  const Tag at = "position";
  RawTensor pos = setPositions(ctx, "maskedScatter", a, mask, at);
  if (s.numel() < pos.numel())
    fail(ErrorCode::ShapeMismatch, "maskedScatter: the mask sets " + std::to_string(pos.numel()) +
                                       " elements but the source " + s.describe() + " has only " +
                                       std::to_string(s.numel()));
  RawTensor out = a.clone(ctx);
  const RawTensor used = flat(s.contiguous(ctx), at).narrowed(at, 0, pos.numel());  // the first count, in order
  backend::kernelsOf(ctx).updateRows(ctx, flat(out, at), at, pos, used, RowUpdate::assign);
  return ops::finishOp(ctx, "maskedScatter", out, {this, &source}, [&] {
    // this: gy zeroed at the set positions; source: gy there, in order, then zeros.
    return [pos, at, tags = a.tags(), s_tags = s.tags(), s_shape = s.shape()](ExecContext& c, const RawTensor& gy,
                                                                             NeedsGrad needs, Grads g) {
      const RawTensor ordered = gy.permuted(tags);
      const backend::Kernels& k = backend::kernelsOf(c);
      if (needs[0]) g[0] = zeroedAt(c, ordered, pos);
      if (needs[1]) {
        RawTensor gs = RawTensor::zeros(c, s_tags, s_shape);
        // gy at the positions, added into the zeros of the source's first elements (a copy but for
        // the sign of a zero).
        k.addInto(c, flat(gs, at).narrowed(at, 0, pos.numel()), k.selectRows(c, flat(ordered.contiguous(c), at), at, pos));
        g[1] = std::move(gs);
      }
    };
  }, static_cast<size_t>(a.numel()));
}

}  // namespace fucina
