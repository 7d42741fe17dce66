// Masked selection: maskedSelect (the elements where a mask is set, as one new axis) and
// maskedScatter (those elements replaced, in order, by a source's). Masks are as maskedFill's: u8
// or f32, set where nonzero, with axes among x's at equal extents (missing axes broadcast).
// Positions run row-major over x's axis order; both VJPs move gy through the same positions.
// maskedSelect's are 1-D indices into a tensor seen flat, so every move is a row copy of one
// element (Kernels::selectRows, updateRows); maskedScatter's result has x's size whatever the mask
// sets, so it is one primitive (Kernels::maskedScatter), which a device computes without reading
// the mask on the host.
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

// The mask checked and broadcast over a (a's axes and extents, any strides).
RawTensor checkedMask(std::string_view op, const RawTensor& a, const Tensor& mask) {
  const RawTensor& m = mask.value();
  if (m.dtype() != DType::u8 && m.dtype() != DType::f32)
    fail(ErrorCode::DTypeMismatch, std::string(op) + ": the mask must be u8 or f32, got " + std::string(name(m.dtype())) +
                                       " " + m.describe());
  for (size_t i = 0; i < m.rank(); ++i)
    if (!hasTag(a.tags(), m.tags()[i]) || a.extent(m.tags()[i]) != m.shape()[i])
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": mask " + m.describe() + " must broadcast to " + a.describe() +
                                         " (axis " + quoted(m.tags()[i]) + ")");
  return m.broadcastView(a.tags(), a.shape());
}

}  // namespace

Tensor Tensor::maskedSelect(ExecContext& ctx, const Tensor& mask, Tag into) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "maskedSelect", {this}, [&](std::span<const Tensor> f) { return f[0].maskedSelect(ctx, mask, into); });
  const RawTensor& a = value();
  RawTensor pos = backend::kernelsOf(ctx).maskPositions(ctx, checkedMask("maskedSelect", a, mask), into);
  RawTensor out = backend::kernelsOf(ctx).selectRows(ctx, backend::flatView(a.contiguous(ctx), into), into, pos);
  return ops::finishOp(ctx, "maskedSelect", out, {this}, [&] {
    return [pos, tags = a.tags(), shape = a.shape(), into](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, tags, shape);
      backend::kernelsOf(c).updateRows(c, backend::flatView(full, into), into, pos, gy.contiguous(c), RowUpdate::assign);
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(a.numel()));
}

Tensor Tensor::maskedScatter(ExecContext& ctx, const Tensor& mask, const Tensor& source) const {
  if (!ops::allF32({this, &source}))
    return ops::viaF32(ctx, "maskedScatter", {this, &source}, [&](std::span<const Tensor> f) { return f[0].maskedScatter(ctx, mask, f[1]); });
  const RawTensor& a = value();
  const RawTensor& s = source.value();
  backend::Kernels::MaskedScatter r = backend::kernelsOf(ctx).maskedScatter(
      ctx, a, checkedMask("maskedScatter", a, mask), s.contiguous(ctx));
  return ops::finishOp(ctx, "maskedScatter", std::move(r.out), {this, &source}, [&] {
    // this: gy zeroed at the set elements; source: gy there, in order, then zeros.
    return [where = std::move(r.where), tags = a.tags(), s_tags = s.tags(), s_shape = s.shape()](
               ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      backend::Kernels::MaskedScatterGrads grads =
          backend::kernelsOf(c).maskedScatterVjp(c, where, gy.permuted(tags), s_tags, s_shape, needs[0], needs[1]);
      if (needs[0]) g[0] = std::move(grads.a);
      if (needs[1]) g[1] = std::move(grads.src);
    };
  }, static_cast<size_t>(a.numel()));
}

}  // namespace fucina
