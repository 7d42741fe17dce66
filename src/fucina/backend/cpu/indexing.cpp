// Gathers and scatters along one axis, row copies at 1-D indices, and mask positions. A gather
// or a row update runs on the pool (its writes never meet); a scatter runs on one thread, since
// repeated indices hit the same element, in row-major order so that the result is fixed.
#include "fucina/backend/cpu/indexing.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include "fucina/backend/cpu/copy.h"
#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/cpu/strided.h"
#include "fucina/core/q8.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {
namespace {

using RowUpdate = backend::Kernels::RowUpdate;

template <class F>
void withIndexType(DType t, F&& f) {
  if (t == DType::i32) f.template operator()<int32_t>();
  else f.template operator()<int64_t>();
}

int64_t extentsProduct(const Extents& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= shape[i];
  return p;
}

// The one strided loop of gatherAlong and scatterAlong. At each position of index, the table
// element whose `axis` coordinate is the index there is copied into `dense` (gather), gets
// `dense` added to it (add) or is overwritten by it (assign: row-major, so of the positions aiming
// at one element, which differ only along `axis`, the last along it wins). table has index's axes
// in index's order (extents >= index's); dense has index's axes, any strides.
enum class Loop { gather, add, assign };

template <Loop kLoop>
void indexLoop(ExecContext* ctx, const RawTensor& index, Tag axis, const RawTensor& table, const RawTensor& dense) {
  if (index.numel() == 0) return;
  const RawTensor d = dense.permuted(index.tags());
  const RawTensor tv = table.permuted(index.tags());
  const size_t a = index.axis(axis);
  std::vector<int64_t> table_strides = tv.strides();
  const int64_t axis_stride = table_strides[a];
  table_strides[a] = 0;
  const auto plan = planStrided<3>(index.shape(), {&d.strides(), &table_strides, &index.strides()});
  float* pt = tv.f32();
  float* pd = d.f32();
  withIndexType(index.dtype(), [&]<class I>() {
    const I* pi = index.data<I>();
    auto rows = [&](int64_t begin, int64_t end) {
      forEachRow(plan, begin, end, [&](const auto& off, int64_t n, const auto& st) {
        for (int64_t i = 0; i < n; ++i) {
          float& t = pt[off[1] + i * st[1] + static_cast<int64_t>(pi[off[2] + i * st[2]]) * axis_stride];
          if constexpr (kLoop == Loop::add) t += pd[off[0] + i * st[0]];
          else if constexpr (kLoop == Loop::assign) t = pd[off[0] + i * st[0]];
          else pd[off[0] + i * st[0]] = t;
        }
      });
    };
    if constexpr (kLoop != Loop::gather) rows(0, plan.outer());
    else ctx->parallelFor(plan.outer(), std::max<int64_t>(1, kElementwiseGrain / plan.inner()), rows);
  });
}

// Rows of a contiguous [outer, n, inner] tensor at 1-D indices, paired with the rows of a
// contiguous [outer, k, inner] one.
struct Rows {
  const int64_t* idx;
  int64_t outer, n, k, inner;
};

Rows rowsOf(const RawTensor& t, Tag axis, const RawTensor& index) {
  const size_t p = t.axis(axis);
  return {index.data<int64_t>(), extentsProduct(t.shape(), 0, p), t.shape()[p], index.numel(),
          extentsProduct(t.shape(), p + 1, t.rank())};
}

// f(row of the n-sided tensor, row of the k-sided one) for every outer u and, within it,
// j = 0..k-1 in order: rows of different u never meet, so u is split over threads and each
// element sees the same order on any thread count.
template <class F>
void forEachRowPair(ExecContext& ctx, const Rows& r, F f) {
  if (r.outer == 0 || r.k == 0 || r.inner == 0) return;
  ctx.parallelFor(r.outer, std::max<int64_t>(1, kElementwiseGrain / r.inner / r.k), [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u)
      for (int64_t j = 0; j < r.k; ++j) f((u * r.n + r.idx[j]) * r.inner, (u * r.k + j) * r.inner);
  });
}

// out[u, j, :] = src[u, idx[j], :] on contiguous buffers, a row being `row` bytes: one copy loop
// for the stored dtypes (a q8_0 row is whole blocks).
void copyRows(const std::byte* s, std::byte* o, int64_t outer, int64_t n, std::span<const int64_t> idx, size_t row) {
  const auto k = static_cast<int64_t>(idx.size());
  for (int64_t u = 0; u < outer; ++u)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(o + static_cast<size_t>(u * k + j) * row, s + static_cast<size_t>(u * n + idx[j]) * row, row);
}


}  // namespace

// Scanned in the plan's order, which drops size-1 axes and fuses others but keeps row-major
// order, so the first fault found is the row-major first.
backend::Kernels::IndexFault firstIndexOutside(const RawTensor& index, int64_t extent) {
  backend::Kernels::IndexFault fault;
  if (index.numel() == 0) return fault;
  const auto plan = planStrided<1>(index.shape(), {&index.strides()});
  withIndexType(index.dtype(), [&]<class I>() {
    const I* p = index.data<I>();
    int64_t position = 0;
    forEachRow(plan, 0, plan.outer(), [&](const auto& off, int64_t n, const auto& st) {
      for (int64_t i = 0; i < n && fault.position < 0; ++i, ++position) {
        const auto v = static_cast<int64_t>(p[off[0] + i * st[0]]);
        if (v < 0 || v >= extent) fault = {position, v};
      }
    });
  });
  return fault;
}

backend::Kernels::ValueFault firstValueOutside(const RawTensor& x, double lo, double hi) {
  backend::Kernels::ValueFault fault;
  if (x.numel() == 0) return fault;
  const auto plan = planStrided<1>(x.shape(), {&x.strides()});
  const float* p = x.f32();
  int64_t position = 0;
  forEachRow(plan, 0, plan.outer(), [&](const auto& off, int64_t n, const auto& st) {
    for (int64_t i = 0; i < n && fault.position < 0; ++i, ++position) {
      const float v = p[off[0] + i * st[0]];
      if (!(v >= lo && v <= hi)) fault = {position, v};
    }
  });
  return fault;
}

RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) {
  RawTensor out = RawTensor::empty(ctx, index.tags(), index.shape());
  indexLoop<Loop::gather>(&ctx, index, axis, table, out);
  return out;
}

void scatterAlong(const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src, bool add) {
  if (add) indexLoop<Loop::add>(nullptr, index, axis, dst, src);
  else indexLoop<Loop::assign>(nullptr, index, axis, dst, src);
}

RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) {
  const size_t p = table.axis(axis);
  const auto [tags, shape] = backend::withIndexAxes(table, p, index);
  const std::span<const int64_t> idx(index.data<int64_t>(), static_cast<size_t>(index.numel()));
  if (table.dtype() == DType::q8_0) {
    RawTensor out = RawTensor::emptyQ8(ctx, tags, shape, internal::blockAxisOf(table));
    if (out.numel() > 0)
      copyRows(table.bytes(), out.storage()->data(),
               extentsProduct(table.shape(), 0, p), table.shape()[p], idx,
               q8::bytesFor(extentsProduct(table.shape(), p + 1, table.rank())));
    return out;
  }
  RawTensor out = RawTensor::empty(ctx, tags, shape, table.dtype());
  if (out.numel() == 0) return out;  // else outer could be 2^40 with nothing to copy (ops_fuzz hung)
  if (table.dtype() != DType::f32) {
    copyRows(reinterpret_cast<const std::byte*>(table.data<uint16_t>()), reinterpret_cast<std::byte*>(out.data<uint16_t>()),
             extentsProduct(table.shape(), 0, p), table.shape()[p], idx,
             static_cast<size_t>(extentsProduct(table.shape(), p + 1, table.rank())) * elementSize(table.dtype()));
    return out;
  }
  const Rows r = rowsOf(table, axis, index);
  const float* s = table.f32();
  float* o = out.f32();
  forEachRowPair(ctx, r, [&](int64_t d, int64_t j) { std::copy(s + d, s + d + r.inner, o + j); });
  return out;
}

void updateRows(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                RowUpdate how) {
  const Rows r = rowsOf(dst, axis, index);
  float* o = dst.f32();
  if (how == RowUpdate::zero) {
    forEachRowPair(ctx, r, [&](int64_t d, int64_t) { std::fill(o + d, o + d + r.inner, 0.0f); });
    return;
  }
  const float* sp = src.f32();
  if (how == RowUpdate::add)
    forEachRowPair(ctx, r, [&](int64_t d, int64_t j) { std::transform(o + d, o + d + r.inner, sp + j, o + d, std::plus<float>()); });
  else forEachRowPair(ctx, r, [&](int64_t d, int64_t j) { std::copy(sp + j, sp + j + r.inner, o + d); });
}

RawTensor maskPositions(ExecContext& ctx, const RawTensor& mask, Tag tag) {
  RawTensor dense = RawTensor::empty(ctx, mask.tags(), mask.shape());  // f32: a u8 cast would truncate 0.5
  copyConvert(mask, dense, &ctx);
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

}  // namespace fucina::kernels
