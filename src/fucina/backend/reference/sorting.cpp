// Ordering one row after another on the calling thread, with the rows of backend/sort_rows.h.
#include "fucina/backend/reference/sorting.h"

#include "fucina/backend/sort_rows.h"

namespace fucina::backend::reference {

Kernels::SortedRows sortRows(ExecContext& ctx, const RawTensor& rows, int64_t k, bool largest) {
  const RowLayout l = rowLayout(rows);
  Extents shape = rows.shape();
  shape.back() = k;
  Kernels::SortedRows out{RawTensor::empty(ctx, rows.tags(), shape), RawTensor::empty(ctx, rows.tags(), shape, DType::i64)};
  std::vector<int64_t> order(static_cast<size_t>(l.n));
  for (int64_t r = 0; r < l.rows; ++r)
    sorting::sortRow(rows.f32() + r * l.n, k, largest, order, out.values.f32() + r * k,
                     out.indices.data<int64_t>() + r * k);
  return out;
}

RawTensor argExtremumRows(ExecContext& ctx, const RawTensor& rows, bool largest) {
  const int64_t n = rows.shape().back();
  RawTensor out = RawTensor::empty(ctx, Tags(rows.tags().begin(), rows.tags().end() - 1),
                                   Extents(rows.shape().begin(), rows.shape().end() - 1), DType::i64);
  for (int64_t r = 0; r < out.numel(); ++r)
    out.data<int64_t>()[r] = sorting::argExtremumRow(rows.data<double>() + r * n, n, largest);
  return out;
}

}  // namespace fucina::backend::reference
