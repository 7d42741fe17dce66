// Sorting rows on the pool, about 2048 elements per task (each task sorts with one scratch
// order); argmax/argmin on the calling thread.
#include "fucina/backend/cpu/sorting.h"

#include "fucina/backend/sort_rows.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;

backend::Kernels::SortedRows sortRows(ExecContext& ctx, const RawTensor& rows, int64_t k, bool largest) {
  const backend::RowLayout l = backend::rowLayout(rows);
  const int64_t n = l.n;
  Extents shape = rows.shape();
  shape.back() = k;
  backend::Kernels::SortedRows out{RawTensor::empty(ctx, rows.tags(), shape),
                                   RawTensor::empty(ctx, rows.tags(), shape, DType::i64)};
  const float* px = rows.f32();
  float* pv = out.values.f32();
  int64_t* pi = out.indices.data<int64_t>();
  ctx.parallelFor(l.rows, std::max<int64_t>(1, 2048 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) backend::sorting::sortRow(px + r * n, k, largest, order, pv + r * k, pi + r * k);
  });
  return out;
}

RawTensor argExtremumRows(ExecContext& ctx, const RawTensor& rows, bool largest) {
  const int64_t n = rows.shape().back();
  Tags tags(rows.tags().begin(), rows.tags().end() - 1);
  Extents shape(rows.shape().begin(), rows.shape().end() - 1);
  RawTensor out = RawTensor::empty(ctx, tags, shape, DType::i64);
  const double* p = rows.data<double>();
  int64_t* o = out.data<int64_t>();
  for (int64_t r = 0; r < out.numel(); ++r) o[r] = backend::sorting::argExtremumRow(p + r * n, n, largest);
  return out;
}

}  // namespace fucina::kernels
