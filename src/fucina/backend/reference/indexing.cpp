// Indexing as the plainest loops: every position of the index in row-major order, its
// coordinates unravelled and each operand addressed through its strides.
#include "fucina/backend/reference/indexing.h"

#include <cstring>
#include <vector>

#include "fucina/core/q8.h"

namespace fucina::backend::reference {
namespace {

// The coordinates of row-major position i over shape.
std::vector<int64_t> coordinates(const Extents& shape, int64_t i) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

int64_t offsetOf(const std::vector<int64_t>& c, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < c.size(); ++d) o += c[d] * strides[d];
  return o;
}

// At each position p of index (row-major), f(offset in table of p with its `axis` coordinate
// replaced by index[p], position p's coordinates).
template <class F>
void forEachIndexed(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index, F f) {
  const RawTensor idx = index.to(ctx, DType::i64);
  const RawTensor tv = table.permuted(index.tags());
  const size_t a = index.axis(axis);
  for (int64_t i = 0; i < index.numel(); ++i) {
    std::vector<int64_t> c = coordinates(index.shape(), i);
    const std::vector<int64_t> at = c;
    c[a] = idx.data<int64_t>()[i];
    f(offsetOf(c, tv.strides()), at);
  }
}

}  // namespace

Kernels::IndexFault firstIndexOutside(ExecContext& ctx, const RawTensor& index, int64_t extent) {
  const RawTensor idx = index.to(ctx, DType::i64);
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t v = idx.data<int64_t>()[i];
    if (v < 0 || v >= extent) return {i, v};
  }
  return {};
}

Kernels::ValueFault firstValueOutside(ExecContext& ctx, const RawTensor& x, double lo, double hi) {
  const RawTensor v = x.to(ctx, DType::f64);
  for (int64_t i = 0; i < v.numel(); ++i) {
    const double e = v.data<double>()[i];
    if (!(e >= lo && e <= hi)) return {i, e};
  }
  return {};
}

RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) {
  RawTensor out = RawTensor::empty(ctx, index.tags(), index.shape());
  int64_t i = 0;
  forEachIndexed(ctx, table, axis, index, [&](int64_t t, const std::vector<int64_t>&) { out.f32()[i++] = table.f32()[t]; });
  return out;
}

void scatterAlong(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                  bool add) {
  const RawTensor s = src.permuted(index.tags());
  forEachIndexed(ctx, dst, axis, index, [&](int64_t t, const std::vector<int64_t>& at) {
    const float v = s.f32()[offsetOf(at, s.strides())];
    if (add) dst.f32()[t] += v;
    else dst.f32()[t] = v;
  });
}

// Row j of the result is row index[j] of the table, copied as stored (bytes; a q8_0 row is whole
// blocks), outer row by outer row.
RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) {
  const size_t p = table.axis(axis);
  const auto [tags, shape] = withIndexAxes(table, p, index);
  const bool q8 = table.dtype() == DType::q8_0;
  RawTensor out = q8 ? RawTensor::emptyQ8(ctx, tags, shape, internal::blockAxisOf(table))
                     : RawTensor::empty(ctx, tags, shape, table.dtype());
  if (out.numel() == 0) return out;
  const int64_t outer = numelOf(table.shape(), 0, p), n = table.shape()[p], k = index.numel();
  const int64_t inner = numelOf(table.shape(), p + 1, table.rank());
  const size_t row = q8 ? q8::bytesFor(inner) : static_cast<size_t>(inner) * elementSize(table.dtype());
  const std::byte* s = table.bytes();
  std::byte* o = out.storage()->data();
  for (int64_t u = 0; u < outer; ++u)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(o + static_cast<size_t>(u * k + j) * row, s + static_cast<size_t>(u * n + index.data<int64_t>()[j]) * row,
                  row);
  return out;
}

void updateRows(const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src, Kernels::RowUpdate how) {
  const size_t p = dst.axis(axis);
  const int64_t outer = numelOf(dst.shape(), 0, p), n = dst.shape()[p], k = index.numel();
  const int64_t inner = numelOf(dst.shape(), p + 1, dst.rank());
  if (k == 0 || inner == 0) return;  // else outer could be 2^40 with nothing to write
  for (int64_t u = 0; u < outer; ++u)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t v = 0; v < inner; ++v) {
        float& d = dst.f32()[(u * n + index.data<int64_t>()[j]) * inner + v];
        if (how == Kernels::RowUpdate::zero) d = 0.0f;
        else if (how == Kernels::RowUpdate::add) d += src.f32()[(u * k + j) * inner + v];
        else d = src.f32()[(u * k + j) * inner + v];
      }
}

RawTensor maskPositions(ExecContext& ctx, const RawTensor& mask, Tag tag) {
  const RawTensor m = mask.to(ctx, DType::f32);  // f32: a u8 cast would truncate 0.5
  std::vector<int64_t> set;
  for (int64_t i = 0; i < m.numel(); ++i)
    if (m.f32()[i] != 0.0f) set.push_back(i);
  RawTensor pos = RawTensor::empty(ctx, {tag}, {static_cast<int64_t>(set.size())}, DType::i64);
  for (size_t i = 0; i < set.size(); ++i) pos.data<int64_t>()[i] = set[i];
  return pos;
}

}  // namespace fucina::backend::reference
