// Indexing by integer tensors: indexSelect (embedding lookup), gather / takeAlongAxis (one
// strided gather loop), scatterAdd and scatter (the same loop adding or overwriting), and the
// row updates indexAdd, setRows and zeroRows (whole rows at 1-D indices). Each forward gathers or
// scatters along a named axis; the VJPs use the other direction, so repeated indices accumulate.
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fucina/core/q8.h"
#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/cpu/strided.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

// out[u, j, :] = src[u, idx[j], :] on contiguous buffers, a row being `row` bytes: one copy loop
// for every dtype (a q8_0 row is whole blocks).
void copyRows(const std::byte* s, std::byte* o, int64_t outer, int64_t n, std::span<const int64_t> idx, size_t row) {
  const auto k = static_cast<int64_t>(idx.size());
  for (int64_t u = 0; u < outer; ++u)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(o + static_cast<size_t>(u * k + j) * row, s + static_cast<size_t>(u * n + idx[j]) * row, row);
}

int64_t extentsProduct(const Extents& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= shape[i];
  return p;
}

// indexSelect's result axes: t's axes with the one at position p replaced, in place, by the
// indices' axes.
std::pair<Tags, Extents> withIndexAxes(const RawTensor& t, size_t p, const RawTensor& ix) {
  Tags tags;
  Extents shape;
  for (size_t i = 0; i < t.rank(); ++i) {
    if (i == p) {
      tags.insert(tags.end(), ix.tags().begin(), ix.tags().end());
      shape.insert(shape.end(), ix.shape().begin(), ix.shape().end());
    } else {
      tags.push_back(t.tags()[i]);
      shape.push_back(t.shape()[i]);
    }
  }
  return {std::move(tags), std::move(shape)};
}

// indexSelect of a frozen 16-bit or q8_0 table (an embedding kept in its stored dtype): the rows
// are copied as they are stored, so the result has the table's dtype and no f32 copy of the whole
// table is made (the dtype rule's f32 computation would give the same values). q8_0 rows are
// selected along any axis but the block axis; tags/shape are the result's.
RawTensor selectStoredRows(ExecContext& ctx, const RawTensor& a, size_t p, const RawTensor& ix,
                           std::span<const int64_t> idx, const Tags& tags, const Extents& shape) {
  if (a.dtype() != DType::q8_0) {
    const RawTensor src = a.contiguous(ctx);
    RawTensor out = RawTensor::empty(ctx, tags, shape, a.dtype());
    if (out.numel() > 0)
      copyRows(reinterpret_cast<const std::byte*>(src.data<uint16_t>()), reinterpret_cast<std::byte*>(out.data<uint16_t>()),
               extentsProduct(a.shape(), 0, p), a.shape()[p], idx,
               static_cast<size_t>(extentsProduct(a.shape(), p + 1, a.rank())) * elementSize(a.dtype()));
    return out;
  }
  const Tag block = internal::blockAxisOf(a);
  if (a.tags()[p] == block)
    fail(ErrorCode::InvalidArgument, "indexSelect along " + quoted(block) + ", the block axis of the q8_0 table " +
                                         a.describe() + ": dequantize it first (to(f32))");
  // In the order {other axes..., block axis} emptyQ8's layout is row-major, so rows along the
  // selected axis are runs of whole blocks.
  Tags order;
  for (Tag t : a.tags())
    if (t != block) order.push_back(t);
  order.push_back(block);
  const RawTensor src = a.permuted(order).contiguous(ctx);
  const size_t q = src.axis(a.tags()[p]);
  const auto [out_tags, out_shape] = withIndexAxes(src, q, ix);
  RawTensor out = RawTensor::emptyQ8(ctx, out_tags, out_shape, block);
  if (out.numel() > 0)
    copyRows(q8::blockOf(src.storage()->data(), src.offset()), out.storage()->data(), extentsProduct(src.shape(), 0, q),
             src.shape()[q], idx, q8::bytesFor(extentsProduct(src.shape(), q + 1, src.rank())));
  return out.permuted(tags);
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
  // Not a structured binding: clang 14 refuses to capture one in the backward lambda below.
  const std::pair<Tags, Extents> axes = withIndexAxes(a, p, ix);
  const Tags& tags = axes.first;
  const Extents& shape = axes.second;
  const int64_t n = a.shape()[p];
  // Row-major over the indices' axes, through ctx so that per-step indices come from its cache.
  const RawTensor idx_values = ix.to(ctx, DType::i64);
  const std::span<const int64_t> idx(idx_values.data<int64_t>(), static_cast<size_t>(idx_values.numel()));
  for (size_t i = 0; i < idx.size(); ++i) {
    const int64_t v = idx[i];
    if (v < 0 || v >= n)
      fail(ErrorCode::IndexOutOfRange, "indexSelect along " + name_q + ": index " + std::to_string(v) +
                                           " at position " + std::to_string(i) + " is outside [0, " +
                                           std::to_string(n) + ")");
  }
  if (stored) return Tensor::fromRaw(ctx, selectStoredRows(ctx, a, p, ix, idx, tags, shape));
  const int64_t outer = extentsProduct(a.shape(), 0, p), inner = extentsProduct(a.shape(), p + 1, a.rank());
  const RawTensor src = a.contiguous(ctx);
  RawTensor out = RawTensor::empty(ctx, tags, shape);
  if (out.numel() > 0) {  // else outer could be 2^40 with nothing to copy (ops_fuzz hung)
    const float* s = src.f32();
    float* o = out.f32();
    const auto k = static_cast<int64_t>(idx.size());
    for (int64_t u = 0; u < outer; ++u)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t v = 0; v < inner; ++v) o[(u * k + j) * inner + v] = s[(u * n + idx[j]) * inner + v];
  }
  return ops::finishOp(ctx, "indexSelect", out, {this}, [&] {
    return [in_tags = a.tags(), in_shape = a.shape(), out_tags = tags, idx_values, idx, outer, inner, n](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, in_tags, in_shape);
      const RawTensor gc = gy.permuted(out_tags).contiguous(c);
      const float* s = gc.f32();
      float* o = full.f32();
      const auto k = static_cast<int64_t>(idx.size());
      for (int64_t u = 0; gc.numel() > 0 && u < outer; ++u)
        for (int64_t j = 0; j < k; ++j)
          for (int64_t v = 0; v < inner; ++v) o[(u * n + idx[j]) * inner + v] += s[(u * k + j) * inner + v];
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(out.numel()));
}

namespace {

// How integer indices address a table along `axis`, shared by gather, takeAlongAxis and
// scatterAdd: the indexed positions (the table's axes in its order, `axis` with the indices'
// extent), and for each of those axes the indices' stride (0 where they broadcast).
struct IndexMap {
  Tags tags;
  Extents shape;
  RawTensor indices;  // i32 or i64, any strides
  std::vector<int64_t> index_strides;
  size_t axis = 0;
};

const RawTensor& requireIndices(std::string_view op, Tag axis, const Tensor& indices) {
  const RawTensor& ix = indices.value();
  if (ix.dtype() != DType::i32 && ix.dtype() != DType::i64)
    fail(ErrorCode::DTypeMismatch, std::string(op) + " along " + quoted(axis) + ": indices must be i32 or i64, got " +
                                       std::string(name(ix.dtype())) + " " + ix.describe());
  return ix;
}

// Every index must lie in [0, extent) (no negative wrap-around).
template <class I>
void checkRange(std::string_view op, Tag axis, const RawTensor& ix, int64_t extent) {
  if (ix.numel() == 0) return;
  const auto plan = kernels::planStrided<1>(ix.shape(), {&ix.strides()});
  const I* p = ix.data<I>();
  kernels::forEachRow(plan, 0, plan.outer(), [&](const auto& off, int64_t n, const auto& st) {
    for (int64_t i = 0; i < n; ++i) {
      const auto v = static_cast<int64_t>(p[off[0] + i * st[0]]);
      if (v < 0 || v >= extent)
        fail(ErrorCode::IndexOutOfRange, std::string(op) + " along " + quoted(axis) + ": index " +
                                             std::to_string(v) + " is outside [0, " + std::to_string(extent) + ")");
    }
  });
}

template <class F>
void withIndexType(DType t, F&& f) {
  if (t == DType::i32) f.template operator()<int32_t>();
  else f.template operator()<int64_t>();
}

// gather / scatterAdd: indices with exactly the table's axes, extents <= the table's except
// along `axis`.
IndexMap sameAxesMap(std::string_view op, const RawTensor& a, Tag axis, const RawTensor& ix) {
  IndexMap m{a.tags(), {}, ix, {}, a.axis(axis)};
  const bool same = ix.rank() == a.rank() && [&] {
    for (Tag t : a.tags())
      if (!hasTag(ix.tags(), t)) return false;
    return true;
  }();
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": the indices " + ix.describe() +
                                       " must have exactly the axes of " + a.describe());
  for (size_t d = 0; d < a.rank(); ++d) {
    const size_t j = ix.axis(a.tags()[d]);
    if (d != m.axis && ix.shape()[j] > a.shape()[d])
      fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": the indices " + ix.describe() +
                                         " exceed " + a.describe() + " on axis " + quoted(a.tags()[d]));
    m.shape.push_back(ix.shape()[j]);
    m.index_strides.push_back(ix.strides()[j]);
  }
  return m;
}

// The one strided loop behind every op here. At each position of m, the table element whose
// `axis` coordinate is the index there is copied into `dense` (gather), gets `dense` added to it
// (add) or is overwritten by it (assign: row-major over m, so of the positions aiming at one
// element, which differ only along `axis`, the last along it wins).
// table has m's axes in m's order (extents >= m's); dense has m's axes, any strides. add and
// assign run on one thread, since repeated indices hit the same element.
enum class Loop { gather, add, assign };

template <Loop kLoop>
void indexLoop(ExecContext& ctx, const IndexMap& m, const RawTensor& table, const RawTensor& dense) {
  if (numelOf(m.shape) == 0) return;
  const RawTensor d = dense.permuted(m.tags);
  std::vector<int64_t> table_strides = table.strides();
  const int64_t axis_stride = table_strides[m.axis];
  table_strides[m.axis] = 0;
  const auto plan = kernels::planStrided<3>(m.shape, {&d.strides(), &table_strides, &m.index_strides});
  float* pt = table.f32();
  float* pd = d.f32();
  withIndexType(m.indices.dtype(), [&]<class I>() {
    const I* pi = m.indices.data<I>();
    auto rows = [&](int64_t begin, int64_t end) {
      kernels::forEachRow(plan, begin, end, [&](const auto& off, int64_t n, const auto& st) {
        for (int64_t i = 0; i < n; ++i) {
          float& t = pt[off[1] + i * st[1] + static_cast<int64_t>(pi[off[2] + i * st[2]]) * axis_stride];
          if constexpr (kLoop == Loop::add) t += pd[off[0] + i * st[0]];
          else if constexpr (kLoop == Loop::assign) t = pd[off[0] + i * st[0]];
          else pd[off[0] + i * st[0]] = t;
        }
      });
    };
    if constexpr (kLoop != Loop::gather) rows(0, plan.outer());
    else ctx.parallelFor(plan.outer(), std::max<int64_t>(1, kernels::kElementwiseGrain / plan.inner()), rows);
  });
}

RawTensor gatherValues(ExecContext& ctx, const IndexMap& m, const RawTensor& table) {
  RawTensor out = RawTensor::empty(ctx, m.tags, m.shape);
  indexLoop<Loop::gather>(ctx, m, table, out);
  return out;
}

RawTensor scatterIntoZeros(ExecContext& ctx, const IndexMap& m, const Tags& tags, const Extents& shape,
                           const RawTensor& dense) {
  RawTensor full = RawTensor::zeros(ctx, tags, shape);
  indexLoop<Loop::add>(ctx, m, full, dense);
  return full;
}

// scatterAdd / scatter: indices as gather's, src with the indices' axes and extents, every index
// in range.
IndexMap scatterMap(std::string_view op, const RawTensor& a, Tag axis, const Tensor& indices, const RawTensor& s) {
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
  withIndexType(ix.dtype(), [&]<class I>() { checkRange<I>(op, axis, ix, a.extent(axis)); });
  return m;
}

// gather and takeAlongAxis: forward gathers, the VJP scatter-adds into zeros.
Tensor gatherOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, const Tensor& indices,
                IndexMap m) {
  const RawTensor& a = x.value();
  withIndexType(m.indices.dtype(), [&]<class I>() { checkRange<I>(op, axis, m.indices, a.extent(axis)); });
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
  IndexMap m{a.tags(), a.shape(), ix, std::vector<int64_t>(a.rank(), 0), a.axis(axis)};
  for (size_t j = 0; j < ix.rank(); ++j) {
    const Tag t = ix.tags()[j];
    if (!hasTag(a.tags(), t)) fail(ErrorCode::ShapeMismatch, where + " have axis " + quoted(t) + " that " + a.describe() + " lacks");
    const size_t d = a.axis(t);
    if (d == m.axis) m.shape[d] = ix.shape()[j];
    else if (ix.shape()[j] != a.shape()[d] && ix.shape()[j] != 1)
      fail(ErrorCode::ShapeMismatch, where + " must match " + a.describe() + " on axis " + quoted(t) + " or have extent 1");
    if (ix.shape()[j] == m.shape[d]) m.index_strides[d] = ix.strides()[j];  // else broadcast: stride 0
  }
  return gatherOp(ctx, "takeAlongAxis", *this, axis, indices, std::move(m));
}

namespace {

// scatterAdd (kLoop add) and scatter (assign). Gradients: this gets gy, zeroed where written by
// scatter; src gets gy gathered at the indices (torch's rule for scatter too, so a repeated index
// passes gy to every src element that aimed at it, not only the last).
template <Loop kLoop>
Tensor scatterOp(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, const Tensor& indices,
                 const Tensor& src) {
  const RawTensor& a = x.value();
  const RawTensor& s = src.value();
  IndexMap m = scatterMap(op, a, axis, indices, s);
  RawTensor out = a.clone(ctx);
  indexLoop<kLoop>(ctx, m, out, s);
  return ops::finishOp(ctx, op, out, {&x, &indices, &src}, [&] {
    return [m = std::move(m)](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor ordered = gy.permuted(m.tags);
      if (needs[0]) {
        if constexpr (kLoop == Loop::add) {
          g[0] = gy;
        } else {
          RawTensor gx = ordered.clone(c);
          indexLoop<Loop::assign>(c, m, gx, RawTensor::zeros(c, {}, {}).broadcastView(m.tags, m.shape));
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
  return scatterOp<Loop::add>(ctx, "scatterAdd", *this, axis, indices, src);
}

Tensor Tensor::scatter(ExecContext& ctx, Tag axis, const Tensor& indices, const Tensor& src) const {
  if (!ops::allF32({this, &src}))
    return ops::viaF32(ctx, "scatter", {this, &src}, [&](std::span<const Tensor> f) { return f[0].scatter(ctx, axis, indices, f[1]); });
  return scatterOp<Loop::assign>(ctx, "scatter", *this, axis, indices, src);
}

namespace {

// indexAdd, setRows and zeroRows address whole rows: with x contiguous in its axis order as
// [outer, n, inner], row idx[j] of x pairs with row j of a source [outer, k, inner].
struct Rows {
  RawTensor values;  // the indices as contiguous i64
  int64_t outer = 0, n = 0, k = 0, inner = 0;
  const int64_t* idx() const { return values.data<int64_t>(); }
};

// 1-D i32/i64 indices, each in [0, extent of axis).
Rows rowsOf(ExecContext& ctx, std::string_view op, const RawTensor& a, Tag axis, const Tensor& indices) {
  const RawTensor& ix = requireIndices(op, axis, indices);
  if (ix.rank() != 1)
    fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": the indices " + ix.describe() +
                                       " must have one axis");
  const size_t p = a.axis(axis);
  withIndexType(ix.dtype(), [&]<class I>() { checkRange<I>(op, axis, ix, a.shape()[p]); });
  return {ix.to(ctx, DType::i64), extentsProduct(a.shape(), 0, p), a.shape()[p], ix.numel(),
          extentsProduct(a.shape(), p + 1, a.rank())};
}

// A source for rows r of a: a's axes (any order), a's extents except k along axis.
void requireRowSource(std::string_view op, const RawTensor& a, Tag axis, const Rows& r, const RawTensor& s) {
  bool same = s.rank() == a.rank();
  for (size_t d = 0; same && d < a.rank(); ++d)
    same = hasTag(s.tags(), a.tags()[d]) && s.extent(a.tags()[d]) == (a.tags()[d] == axis ? r.k : a.shape()[d]);
  if (!same)
    fail(ErrorCode::ShapeMismatch, std::string(op) + " along " + quoted(axis) + ": the source " + s.describe() +
                                       " must have the axes and extents of " + a.describe() + " except " +
                                       std::to_string(r.k) + " (the indices' extent) along " + quoted(axis));
}

// f(x row, source row) for every outer u and, within it, j = 0..k-1 in order: rows of different
// u never meet, so u is split over threads and each element sees the same order on any count.
template <class F>
void forEachRowPair(ExecContext& ctx, const Rows& r, F f) {
  if (r.outer == 0 || r.k == 0 || r.inner == 0) return;
  const int64_t* idx = r.idx();
  ctx.parallelFor(r.outer, std::max<int64_t>(1, kernels::kElementwiseGrain / r.inner / r.k),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t u = begin; u < end; ++u)
                      for (int64_t j = 0; j < r.k; ++j) f((u * r.n + idx[j]) * r.inner, (u * r.k + j) * r.inner);
                  });
}

// A copy of t (a's axes, in a's order) with rows r zeroed.
RawTensor rowsZeroed(ExecContext& ctx, const Rows& r, const RawTensor& t) {
  RawTensor out = t.clone(ctx);
  float* o = out.f32();
  forEachRowPair(ctx, r, [&](int64_t d, int64_t) { std::fill(o + d, o + d + r.inner, 0.0f); });
  return out;
}

// Rows r of t (a's axes, in a's order) as a source-shaped tensor.
RawTensor rowsTaken(ExecContext& ctx, const Rows& r, const RawTensor& t, Tag axis) {
  const RawTensor src = t.contiguous(ctx);
  Extents shape = src.shape();
  shape[src.axis(axis)] = r.k;
  RawTensor out = RawTensor::empty(ctx, src.tags(), shape);
  const float* s = src.f32();
  float* o = out.f32();
  forEachRowPair(ctx, r, [&](int64_t d, int64_t j) { std::copy(s + d, s + d + r.inner, o + j); });
  return out;
}

// indexAdd and setRows: the source's rows added to, or written over, rows r of a copy of x.
template <bool kAdd>
Tensor rowUpdate(ExecContext& ctx, std::string_view op, const Tensor& x, Tag axis, const Tensor& indices,
                 const Tensor& source) {
  const RawTensor& a = x.value();
  Rows r = rowsOf(ctx, op, a, axis, indices);
  requireRowSource(op, a, axis, r, source.value());
  const RawTensor s = source.value().permuted(a.tags()).contiguous(ctx);
  RawTensor out = a.clone(ctx);
  float* o = out.f32();
  const float* sp = s.f32();
  forEachRowPair(ctx, r, [&](int64_t d, int64_t j) {
    if constexpr (kAdd) std::transform(o + d, o + d + r.inner, sp + j, o + d, std::plus<float>());
    else std::copy(sp + j, sp + j + r.inner, o + d);
  });
  return ops::finishOp(ctx, op, out, {&x, &indices, &source}, [&] {
    // this: gy (indexAdd) or gy with the rows zeroed (setRows); source: the rows of gy.
    return [r = std::move(r), tags = a.tags(), axis](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor ordered = gy.permuted(tags);
      if constexpr (kAdd) {
        if (needs[0]) g[0] = gy;
      } else {
        if (needs[0]) g[0] = rowsZeroed(c, r, ordered);
      }
      if (needs[2]) g[2] = rowsTaken(c, r, ordered, axis);
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
  Rows r = rowsOf(ctx, "zeroRows", a, axis, indices);
  RawTensor out = rowsZeroed(ctx, r, a);
  return ops::finishOp(ctx, "zeroRows", out, {this, &indices}, [&] {
    return [r = std::move(r), tags = a.tags()](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      g[0] = rowsZeroed(c, r, gy.permuted(tags));
    };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace fucina
