// Diagonals: diagonal (a strided view), trace, diag (both directions) and diagEmbed. The view reads
// the offset diagonal of two axes with stride stride_a + stride_b; diagEmbed writes through that
// same view of a zeroed result, so each op's VJP is the other one through one layout. Layout ops:
// any dtype but q8_0 (whose blocks a diagonal would split).
#include <algorithm>
#include <limits>
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

// Start (row, col) and length of the offset diagonal of an na x nb matrix, as torch: offset > 0
// is above the main diagonal, and an offset past the matrix gives length 0.
struct DiagSpan {
  int64_t row = 0, col = 0, length = 0;
};

DiagSpan diagSpan(int64_t na, int64_t nb, int64_t offset) {
  DiagSpan s;
  if (offset >= 0) {
    if (offset < nb) s = {0, offset, std::min(na, nb - offset)};
  } else if (offset > -na) {  // checked first, so -offset cannot overflow
    s = {-offset, 0, std::min(na + offset, nb)};
  }
  return s.length > 0 ? s : DiagSpan{};
}

// The offset diagonal of axes a and b of t as a view: t's other axes in t's order, then `into`.
RawTensor diagonalView(const RawTensor& t, Tag a, Tag b, int64_t offset, Tag into) {
  const size_t pa = t.axis(a), pb = t.axis(b);
  const DiagSpan s = diagSpan(t.shape()[pa], t.shape()[pb], offset);
  Tags tags;
  Extents shape;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < t.rank(); ++i) {
    if (i == pa || i == pb) continue;
    tags.push_back(t.tags()[i]);
    shape.push_back(t.shape()[i]);
    strides.push_back(t.strides()[i]);
  }
  tags.push_back(into);
  shape.push_back(s.length);
  strides.push_back(t.strides()[pa] + t.strides()[pb]);
  validateShape(tags, shape, "diagonal");
  return RawTensor::view(t.storage(), t.dtype(), std::move(tags), std::move(shape), std::move(strides),
                         t.offset() + s.row * t.strides()[pa] + s.col * t.strides()[pb]);
}

// Two distinct axes; `into` (or each of `made`) must not clash with an axis that stays.
void checkAxes(std::string_view op, const RawTensor& t, Tags gone, const Tags& made) {
  refuseQ8(op, t);
  for (Tag g : gone) t.axis(g);
  if (gone.size() == 2 && gone[0] == gone[1])
    fail(ErrorCode::InvalidArgument, std::string(op) + ": both axes are " + quoted(gone[0]));
  if (made.size() == 2 && made[0] == made[1])
    fail(ErrorCode::InvalidArgument, std::string(op) + ": both new axes are " + quoted(made[0]));
  for (Tag m : made)
    if (hasTag(t.tags(), m) && !hasTag(gone, m))
      fail(ErrorCode::ShapeMismatch, std::string(op) + ": " + t.describe() + " already has an axis " + quoted(m));
}

Tensor diagonalOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag a, Tag b, int64_t offset, Tag into) {
  const RawTensor& t = x.value();
  checkAxes(op, t, {a, b}, {into});
  RawTensor out = diagonalView(t, a, b, offset, into);
  return ops::finishOp(ctx, op, out, {&x}, [&] {
    return [tags = t.tags(), shape = t.shape(), out_tags = out.tags(), a, b, offset, into](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, tags, shape);
      backend::kernelsOf(c).copy(c, gy.permuted(out_tags), diagonalView(full, a, b, offset, into));
      g[0] = std::move(full);
    };
  });
}

Tensor embedOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, Tag into_a, Tag into_b,
               int64_t offset) {
  const RawTensor& t = x.value();
  checkAxes(op, t, {axis}, {into_a, into_b});
  const size_t p = t.axis(axis);
  if (offset == std::numeric_limits<int64_t>::min())
    fail(ErrorCode::InvalidArgument, std::string(op) + ": offset " + std::to_string(offset) + " overflows");
  const int64_t m = checkedAdd(t.shape()[p], offset < 0 ? -offset : offset, op);
  Tags tags, rest;
  Extents shape;
  for (size_t i = 0; i < t.rank(); ++i) {
    if (i == p) {
      tags.insert(tags.end(), {into_a, into_b});
      shape.insert(shape.end(), {m, m});
      continue;
    }
    tags.push_back(t.tags()[i]);
    shape.push_back(t.shape()[i]);
    rest.push_back(t.tags()[i]);
  }
  rest.push_back(axis);
  RawTensor out = RawTensor::zeros(ctx, tags, shape, t.dtype());
  backend::kernelsOf(ctx).copy(ctx, t.permuted(rest), diagonalView(out, into_a, into_b, offset, axis));
  return ops::finishOp(ctx, op, out, {&x}, [&] {
    return [tags, into_a, into_b, offset, axis](ExecContext&, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = diagonalView(gy.permuted(tags), into_a, into_b, offset, axis);
    };
  });
}

}  // namespace

Tensor Tensor::diagonal(ExecContext& ctx, Tag a, Tag b, int64_t offset, Tag into) const {
  return diagonalOp(ctx, "diagonal", *this, a, b, offset, into);
}

Tensor Tensor::trace(ExecContext& ctx, Tag a, Tag b) const {
  checkAxes("trace", value(), {a, b}, {});
  // The diagonal takes a's name, which is free once a and b are gone.
  return diagonalOp(ctx, "trace", *this, a, b, 0, a).sum(ctx, a);
}

Tensor Tensor::diag(ExecContext& ctx, Tag axis, Tag into_a, Tag into_b, int64_t offset) const {
  return embedOp(ctx, "diag", *this, axis, into_a, into_b, offset);
}

Tensor Tensor::diag(ExecContext& ctx, Tag a, Tag b, int64_t offset, Tag into) const {
  if (rank() != 2)
    fail(ErrorCode::InvalidArgument, "diag from a matrix takes a tensor with two axes, got " + value().describe() +
                                         "; diagonal takes batches");
  return diagonalOp(ctx, "diag", *this, a, b, offset, into);
}

Tensor Tensor::diagEmbed(ExecContext& ctx, Tag axis, Tag into_a, Tag into_b, int64_t offset) const {
  return embedOp(ctx, "diagEmbed", *this, axis, into_a, into_b, offset);
}

}  // namespace fucina
