// Indexing by integer tensors: indexSelect (embedding lookup), gather / takeAlongAxis and
// scatterAdd / scatter (Kernels::gatherAlong, scatterAlong), and the row updates indexAdd, setRows
// and zeroRows (whole rows at 1-D indices: Kernels::selectRows, updateRows). Each forward gathers
// or scatters along a named axis; the VJPs use the other direction, so repeated indices
// accumulate. Indices are checked in range before any is used (Kernels::firstIndexOutside).
#include <string>
#include <utility>
#include <vector>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// indexSelect of a frozen 16-bit or q8_0 table (an embedding kept in its stored dtype): the rows
// are copied as they are stored, so the result has the table's dtype and no f32 copy of the whole
// table is made (the dtype rule's f32 computation would give the same values). q8_0 rows are
// selected along any axis but the block axis; tags are the result's axes in order.
RawTensor selectStoredRows(ExecContext& ctx, const RawTensor& a, Tag axis, const RawTensor& idx, const Tags& tags) {
  const backend::Kernels& k = backend::kernelsOf(ctx);
  if (a.dtype() != DType::q8_0) return k.selectRows(ctx, a.contiguous(ctx), axis, idx);
  const Tag block = internal::blockAxisOf(a);
  if (axis == block)
    fail(ErrorCode::InvalidArgument, "indexSelect along " + quoted(block) + ", the block axis of the q8_0 table " +
                                         a.describe() + ": dequantize it first (to(f32))");
  // In the order {other axes..., block axis} emptyQ8's layout is row-major, so rows along the
  // selected axis are runs of whole blocks.
  Tags order;
  for (Tag t : a.tags())
    if (t != block) order.push_back(t);
  order.push_back(block);
  return k.selectRows(ctx, a.permuted(order).contiguous(ctx), axis, idx).permuted(tags);
}

}  // namespace

Tensor Tensor::indexSelect(ExecContext& ctx, Tag axis, const Tensor& indices) const {
  const bool stored = !requiresGrad() && (dtype() == DType::f16 || dtype() == DType::bf16 || dtype() == DType::q8_0);
  if (!stored && !ops::allF32({this}))
    return ops::viaF32(ctx, "indexSelect", {this}, [&](std::span<const Tensor> f) { return f[0].indexSelect(ctx, axis, indices); });
  const RawTensor& a = value();
  const RawTensor& ix = indices.value();
  const size_t p = a.axis(axis);
  const std::string name_q = quoted(axis);
  if (ix.dtype() != DType::i32 && ix.dtype() != DType::i64)
    fail(ErrorCode::DTypeMismatch, "indexSelect along " + name_q + ": indices must be i32 or i64, got " +
                                       std::string(name(ix.dtype())) + " " + ix.describe());
  for (size_t i = 0; i < a.rank(); ++i)
    if (i != p && hasTag(ix.tags(), a.tags()[i]))
      fail(ErrorCode::ShapeMismatch, "indexSelect along " + name_q + ": the indices " + ix.describe() +
                                         " share axis '" + std::string(a.tags()[i].name()) + "' with the table " +
                                         a.describe());
  const Tags tags = backend::withIndexAxes(a, p, ix).first;
  const int64_t n = a.shape()[p];
  const backend::Kernels& k = backend::kernelsOf(ctx);
  // Row-major over the indices' axes, through ctx so that per-step indices come from its cache.
  const RawTensor idx = ix.to(ctx, DType::i64);
  if (const auto bad = k.firstIndexOutside(ctx, idx, n); bad.position >= 0)
    fail(ErrorCode::IndexOutOfRange, "indexSelect along " + name_q + ": index " + std::to_string(bad.value) +
                                         " at position " + std::to_string(bad.position) + " is outside [0, " +
                                         std::to_string(n) + ")");
  if (stored) return Tensor::fromRaw(ctx, selectStoredRows(ctx, a, axis, idx, tags));
  RawTensor out = k.selectRows(ctx, a.contiguous(ctx), axis, idx);
  return ops::finishOp(ctx, "indexSelect", out, {this}, [&] {
    // The rows of gy, seen as the table's axes with the indices' count along `axis`, added back at
    // the indices (repeated indices accumulate in order).
    return [in_tags = a.tags(), in_shape = a.shape(), out_tags = tags, idx, axis, p](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, in_tags, in_shape);
      const RawTensor gc = gy.permuted(out_tags).contiguous(c);
      Extents rows_shape = in_shape;
      rows_shape[p] = idx.numel();
      const RawTensor rows = RawTensor::view(gc.storage(), gc.dtype(), in_tags, rows_shape, contiguousStrides(rows_shape),
                                             gc.offset());
      const RawTensor flat_idx = RawTensor::view(idx.storage(), DType::i64, {axis}, {idx.numel()}, {1}, idx.offset());
      backend::kernelsOf(c).updateRows(c, full, axis, flat_idx, rows, backend::Kernels::RowUpdate::add);
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(out.numel()));
}

namespace {

// How integer indices address a table along `axis`, shared by gather, takeAlongAxis and
// scatterAdd: a view of the indices over the indexed positions (the table's axes in its order,
// `axis` with the indices' extent), with stride 0 where they broadcast.
struct IndexMap {
  RawTensor index;  // i32 or i64
  Tag axis;
};

const RawTensor& requireIndices(std::string_view op, Tag axis, const Tensor& indices) {
  const RawTensor& ix = indices.value();
  if (ix.dtype() != DType::i32 && ix.dtype() != DType::i64)
    fail(ErrorCode::DTypeMismatch, std::string(op) + " along " + quoted(axis) + ": indices must be i32 or i64, got " +
                                       std::string(name(ix.dtype())) + " " + ix.describe());
  return ix;
}

// Every index must lie in [0, extent) (no negative wrap-around).
void checkRange(ExecContext& ctx, std::string_view op, Tag axis, const RawTensor& ix, int64_t extent) {
  if (const auto bad = backend::kernelsOf(ctx).firstIndexOutside(ctx, ix, extent); bad.position >= 0)
    fail(ErrorCode::IndexOutOfRange, std::string(op) + " along " + quoted(axis) + ": index " +
                                         std::to_string(bad.value) + " is outside [0, " + std::to_string(extent) + ")");
}

// gather / scatterAdd: indices with exactly the table's axes, extents <= the table's except
// along `axis`.
IndexMap sameAxesMap(std::string_view op, const RawTensor& a, Tag axis, const RawTensor& ix) {
  const size_t p = a.axis(axis);
  const bool same = ix.rank() == a.rank() && [&] {
    for (Tag t : a.tags())
      if (!hasTag(ix.tags(), t)) return false;
    return true;
  }();
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": the indices " + ix.describe() +
                                       " must have exactly the axes of " + a.describe());
  for (size_t d = 0; d < a.rank(); ++d)
    if (d != p && ix.extent(a.tags()[d]) > a.shape()[d])
      fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": the indices " + ix.describe() +
                                         " exceed " + a.describe() + " on axis " + quoted(a.tags()[d]));
  return {ix.permuted(a.tags()), axis};
}

// The forward of gather and takeAlongAxis, and the values of gy that scatter and scatterAdd
// pass to their source.
RawTensor gatherValues(ExecContext& ctx, const IndexMap& m, const RawTensor& table) {
  return backend::kernelsOf(ctx).gatherAlong(ctx, table, m.axis, m.index);
}

RawTensor scatterIntoZeros(ExecContext& ctx, const IndexMap& m, const Tags& tags, const Extents& shape,
                           const RawTensor& dense) {
  RawTensor full = RawTensor::zeros(ctx, tags, shape);
  backend::kernelsOf(ctx).scatterAlong(ctx, full, m.axis, m.index, dense, true);
  return full;
}

// scatterAdd / scatter: indices as gather's, src with the indices' axes and extents, every index
// in range.
IndexMap scatterMap(ExecContext& ctx, std::string_view op, const RawTensor& a, Tag axis, const Tensor& indices,
                    const RawTensor& s) {
  const RawTensor& ix = requireIndices(op, axis, indices);
  IndexMap m = sameAxesMap(op, a, axis, ix);
  const bool same = s.rank() == ix.rank() && [&] {
    for (size_t j = 0; j < ix.rank(); ++j)
      if (!hasTag(s.tags(), ix.tags()[j]) || s.extent(ix.tags()[j]) != ix.shape()[j]) return false;
    return true;
  }();
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": src " + s.describe() +
                                       " must have the axes and extents of the indices " + ix.describe());
  checkRange(ctx, op, axis, ix, a.extent(axis));
  return m;
}

// gather and takeAlongAxis: forward gathers, the VJP scatter-adds into zeros.
Tensor gatherOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, const Tensor& indices,
                IndexMap m) {
  const RawTensor& a = x.value();
  checkRange(ctx, op, axis, indices.value(), a.extent(axis));
  RawTensor out = gatherValues(ctx, m, a);
  return ops::finishOp(ctx, op, out, {&x, &indices}, [&] {
    return [m = std::move(m), tags = a.tags(), shape = a.shape()](ExecContext& c, const RawTensor& gy,
                                                                     NeedsGrad needs, Grads g) {
      if (needs[0]) g[0] = scatterIntoZeros(c, m, tags, shape, gy);
    };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace

Tensor Tensor::gather(ExecContext& ctx, Tag axis, const Tensor& indices) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "gather", {this}, [&](std::span<const Tensor> f) { return f[0].gather(ctx, axis, indices); });
  const RawTensor& ix = requireIndices("gather", axis, indices);
  return gatherOp(ctx, "gather", *this, axis, indices, sameAxesMap("gather", value(), axis, ix));
}

Tensor Tensor::takeAlongAxis(ExecContext& ctx, Tag axis, const Tensor& indices) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "takeAlongAxis", {this}, [&](std::span<const Tensor> f) { return f[0].takeAlongAxis(ctx, axis, indices); });
  const RawTensor& a = value();
  const RawTensor& ix = requireIndices("takeAlongAxis", axis, indices);
  const std::string where = "takeAlongAxis along " + quoted(axis) + ": the indices " + ix.describe();
  if (!hasTag(ix.tags(), axis)) fail(ErrorCode::ShapeMismatch, where + " lack the axis");
  const size_t p = a.axis(axis);
  Extents shape = a.shape();
  std::vector<int64_t> strides(a.rank(), 0);  // 0 where the indices broadcast
  for (size_t j = 0; j < ix.rank(); ++j) {
    const Tag t = ix.tags()[j];
    if (!hasTag(a.tags(), t)) fail(ErrorCode::ShapeMismatch, where + " have axis " + quoted(t) + " that " + a.describe() + " lacks");
    const size_t d = a.axis(t);
    if (d == p) shape[d] = ix.shape()[j];
    else if (ix.shape()[j] != a.shape()[d] && ix.shape()[j] != 1)
      fail(ErrorCode::ShapeMismatch, where + " must match " + a.describe() + " on axis " + quoted(t) + " or have extent 1");
    if (ix.shape()[j] == shape[d]) strides[d] = ix.strides()[j];
  }
  IndexMap m{RawTensor::view(ix.storage(), ix.dtype(), a.tags(), shape, std::move(strides), ix.offset()), axis};
  return gatherOp(ctx, "takeAlongAxis", *this, axis, indices, std::move(m));
}

namespace {

// scatterAdd (add) and scatter (assign). Gradients: this gets gy, zeroed where written by
// scatter; src gets gy gathered at the indices (torch's rule for scatter too, so a repeated index
// passes gy to every src element that aimed at it, not only the last).
template <bool kAdd>
Tensor scatterOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, const Tensor& indices,
                 const Tensor& src) {
  const RawTensor& a = x.value();
  const RawTensor& s = src.value();
  IndexMap m = scatterMap(ctx, op, a, axis, indices, s);
  RawTensor out = a.clone(ctx);
  backend::kernelsOf(ctx).scatterAlong(ctx, out, axis, m.index, s, kAdd);
  return ops::finishOp(ctx, op, out, {&x, &indices, &src}, [&] {
    return [m = std::move(m), tags = a.tags()](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor ordered = gy.permuted(tags);
      if (needs[0]) {
        if constexpr (kAdd) {
          g[0] = gy;
        } else {
          RawTensor gx = ordered.clone(c);
          backend::kernelsOf(c).scatterAlong(
              c, gx, m.axis, m.index, RawTensor::zeros(c, {}, {}).broadcastView(m.index.tags(), m.index.shape()), false);
          g[0] = std::move(gx);
        }
      }
      if (needs[2]) g[2] = gatherValues(c, m, ordered);
    };
  }, static_cast<size_t>(s.numel()));
}

}  // namespace

Tensor Tensor::scatterAdd(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& src) const {
  if (!ops::allF32({this, &src}))
    return ops::viaF32(ctx, "scatterAdd", {this, &src}, [&](std::span<const Tensor> f) { return f[0].scatterAdd(ctx, axis, indices, f[1]); });
  return scatterOp<true>(ctx, "scatterAdd", *this, axis, indices, src);
}

Tensor Tensor::scatter(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& src) const {
  if (!ops::allF32({this, &src}))
    return ops::viaF32(ctx, "scatter", {this, &src}, [&](std::span<const Tensor> f) { return f[0].scatter(ctx, axis, indices, f[1]); });
  return scatterOp<false>(ctx, "scatter", *this, axis, indices, src);
}

namespace {

// indexAdd, setRows and zeroRows address whole rows: with x contiguous in its axis order as
// [outer, n, inner], row idx[j] of x pairs with row j of a source [outer, k, inner].

// 1-D i32/i64 indices, each in [0, extent of axis), as contiguous i64 on `axis`.
RawTensor rowsOf(ExecContext& ctx, std::string_view op, const RawTensor& a, Tag axis, const Tensor& indices) {
  const RawTensor& ix = requireIndices(op, axis, indices);
  if (ix.rank() != 1)
    fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": the indices " + ix.describe() +
                                       " must have one axis");
  checkRange(ctx, op, axis, ix, a.extent(axis));
  return ix.to(ctx, DType::i64).withTags({axis});
}

// A source for rows idx of a: a's axes (any order), a's extents except k along axis.
void requireRowSource(std::string_view op, const RawTensor& a, Tag axis, const RawTensor& idx, const RawTensor& s) {
  const int64_t k = idx.numel();
  bool same = s.rank() == a.rank();
  for (size_t d = 0; same && d < a.rank(); ++d)
    same = hasTag(s.tags(), a.tags()[d]) && s.extent(a.tags()[d]) == (a.tags()[d] == axis ? k : a.shape()[d]);
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": the source " + s.describe() +
                                       " must have the axes and extents of " + a.describe() + " except " +
                                       std::to_string(k) + " (the indices' extent) along " + quoted(axis));
}

// A copy of t (a's axes, in a's order) with rows idx zeroed.
RawTensor rowsZeroed(ExecContext& ctx, const RawTensor& idx, Tag axis, const RawTensor& t) {
  RawTensor out = t.clone(ctx);
  backend::kernelsOf(ctx).updateRows(ctx, out, axis, idx, RawTensor(), backend::Kernels::RowUpdate::zero);
  return out;
}

// indexAdd and setRows: the source's rows added to, or written over, rows idx of a copy of x.
template <bool kAdd>
Tensor rowUpdate(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, const Tensor& indices,
                 const Tensor& source) {
  const RawTensor& a = x.value();
  RawTensor idx = rowsOf(ctx, op, a, axis, indices);
  requireRowSource(op, a, axis, idx, source.value());
  const RawTensor s = source.value().permuted(a.tags()).contiguous(ctx);
  RawTensor out = a.clone(ctx);
  backend::kernelsOf(ctx).updateRows(ctx, out, axis, idx, s,
                                     kAdd ? backend::Kernels::RowUpdate::add : backend::Kernels::RowUpdate::assign);
  return ops::finishOp(ctx, op, out, {&x, &indices, &source}, [&] {
    // this: gy (indexAdd) or gy with the rows zeroed (setRows); source: the rows of gy.
    return [idx = std::move(idx), tags = a.tags(), axis](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor ordered = gy.permuted(tags);
      if constexpr (kAdd) {
        if (needs[0]) g[0] = gy;
      } else {
        if (needs[0]) g[0] = rowsZeroed(c, idx, axis, ordered);
      }
      if (needs[2]) g[2] = backend::kernelsOf(c).selectRows(c, ordered.contiguous(c), axis, idx);
    };
  }, static_cast<size_t>(s.numel()));
}

}  // namespace

Tensor Tensor::indexAdd(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& source) const {
  if (!ops::allF32({this, &source}))
    return ops::viaF32(ctx, "indexAdd", {this, &source}, [&](std::span<const Tensor> f) { return f[0].indexAdd(ctx, axis, indices, f[1]); });
  return rowUpdate<true>(ctx, "indexAdd", *this, axis, indices, source);
}

Tensor Tensor::setRows(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& source) const {
  if (!ops::allF32({this, &source}))
    return ops::viaF32(ctx, "setRows", {this, &source}, [&](std::span<const Tensor> f) { return f[0].setRows(ctx, axis, indices, f[1]); });
  return rowUpdate<false>(ctx, "setRows", *this, axis, indices, source);
}

Tensor Tensor::zeroRows(ExecContext& ctx, Tag axis, const Tensor& indices) const {
  if (!ops::allF32({this}))
    return ops::viaF32(ctx, "zeroRows", {this}, [&](std::span<const Tensor> f) { return f[0].zeroRows(ctx, axis, indices); });
  const RawTensor& a = value();
  RawTensor idx = rowsOf(ctx, "zeroRows", a, axis, indices);
  RawTensor out = rowsZeroed(ctx, idx, axis, a);
  return ops::finishOp(ctx, "zeroRows", out, {this, &indices}, [&] {
    return [idx = std::move(idx), axis, tags = a.tags()](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = rowsZeroed(c, idx, axis, gy.permuted(tags));
    };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace fucina
