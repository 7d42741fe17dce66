// Masked selection: maskedSelect (the elements where a mask is set, as one new axis) and
// maskedScatter (those elements replaced, in order, by a source's). Masks are as maskedFill's: u8
// or f32, set where nonzero, with axes among x's at equal extents (missing axes broadcast).
// Positions run row-major over x's axis order; both VJPs move gy through the same positions.
#include <string>

#include "fucina/backend/cpu/copy.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

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
  RawTensor dense = RawTensor::empty(ctx, a.tags(), a.shape());  // f32: a u8 cast would truncate 0.5
  kernels::copyConvert(m.broadcastView(a.tags(), a.shape()), dense, &ctx);
  const float* d = dense.f32();
  const int64_t n = dense.numel();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += d[i] != 0.0f;
  RawTensor pos = RawTensor::empty(ctx, {tag}, {count}, DType::i64);
  int64_t* p = pos.data<int64_t>();
  for (int64_t i = 0, k = 0; i < n; ++i)
    if (d[i] != 0.0f) p[k++] = i;
  return pos;
}

// A contiguous copy of t with the elements at pos zeroed.
RawTensor zeroedAt(ExecContext& ctx, const RawTensor& t, const RawTensor& pos) {
  RawTensor out = t.clone(ctx);
  float* o = out.f32();
  const int64_t* p = pos.data<int64_t>();
  for (int64_t i = 0, k = pos.numel(); i < k; ++i) o[p[i]] = 0.0f;
  return out;
}

}  // namespace

Tensor Tensor::maskedSelect(ExecContext& ctx, const Tensor& mask, Tag into) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "maskedSelect", {this}, [&](std::span<const Tensor> f) { return f[0].maskedSelect(ctx, mask, into); });
  const RawTensor& a = value();
  RawTensor pos = setPositions(ctx, "maskedSelect", a, mask, into);
  const RawTensor src = a.contiguous(ctx);
  RawTensor out = RawTensor::empty(ctx, {into}, {pos.numel()});
  const float* s = src.f32();
  const int64_t* p = pos.data<int64_t>();
  float* o = out.f32();
  for (int64_t i = 0, k = pos.numel(); i < k; ++i) o[i] = s[p[i]];
  return ops::finishOp(ctx, "maskedSelect", out, {this}, [&] {
    return [pos, tags = a.tags(), shape = a.shape()](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, tags, shape);
      const RawTensor gc = gy.contiguous(c);
      const float* gp = gc.f32();
      const int64_t* pp = pos.data<int64_t>();
      float* f = full.f32();
      for (int64_t i = 0, k = pos.numel(); i < k; ++i) f[pp[i]] = gp[i];
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(a.numel()));
}

Tensor Tensor::maskedScatter(ExecContext& ctx, const Tensor& mask, const Tensor& source) const {
  if (!ops::allF32({this, &source}))
    return ops::viaF32(ctx, "maskedScatter", {this, &source}, [&](std::span<const Tensor> f) { return f[0].maskedScatter(ctx, mask, f[1]); });
  const RawTensor& a = value();
  const RawTensor& s = source.value();
  RawTensor pos = setPositions(ctx, "maskedScatter", a, mask, "position");
  if (s.numel() < pos.numel())
    fail(ErrorCode::ShapeMismatch, "maskedScatter: the mask sets " + std::to_string(pos.numel()) +
                                       " elements but the source " + s.describe() + " has only " +
                                       std::to_string(s.numel()));
  const RawTensor sc = s.contiguous(ctx);
  RawTensor out = a.clone(ctx);
  const float* sp = sc.f32();
  const int64_t* p = pos.data<int64_t>();
  float* o = out.f32();
  for (int64_t i = 0, k = pos.numel(); i < k; ++i) o[p[i]] = sp[i];
  return ops::finishOp(ctx, "maskedScatter", out, {this, &source}, [&] {
    // this: gy zeroed at the set positions; source: gy there, in order, then zeros.
    return [pos, tags = a.tags(), s_tags = s.tags(), s_shape = s.shape()](ExecContext& c, const RawTensor& gy,
                                                                         NeedsGrad needs, Grads g) {
      const RawTensor ordered = gy.permuted(tags);
      if (needs[0]) g[0] = zeroedAt(c, ordered, pos);
      if (needs[1]) {
        const RawTensor gc = ordered.contiguous(c);
        RawTensor gs = RawTensor::zeros(c, s_tags, s_shape);
        const float* gp = gc.f32();
        const int64_t* pp = pos.data<int64_t>();
        float* o = gs.f32();
        for (int64_t i = 0, k = pos.numel(); i < k; ++i) o[i] = gp[pp[i]];
        g[1] = std::move(gs);
      }
    };
  }, static_cast<size_t>(a.numel()));
}

}  // namespace fucina
