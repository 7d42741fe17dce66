// Dropout on the pool (each element's mask depends only on its index); multinomial draws on the
// calling thread, row after row, with one scratch row counted by the context.
#include "fucina/backend/cpu/sampling.h"

#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/random_rows.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

using internal::RawTensor;

RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale) {
  const RawTensor src = x.contiguous(ctx);
  RawTensor out = RawTensor::empty(ctx, src.tags(), src.shape());
  const float* s = src.f32();
  float* o = out.f32();
  ctx.parallelFor(out.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = s[i] * backend::sampling::dropoutScale(seed, p, keep_scale, i);
  });
  return out;
}

RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows, int64_t samples, uint64_t seed, bool replacement,
                          const std::string& what) {
  const int64_t n = rows.shape().back();
  Extents shape = rows.shape();
  shape.back() = samples;
  RawTensor out = RawTensor::empty(ctx, rows.tags(), shape, DType::i64);
  const int64_t row_count = backend::sampling::multinomialRowCount(rows.numel(), n, out.numel(), samples);
  // Through the context (counted, within its limit), and only with rows to draw from: an empty
  // tensor may have an axis of 2^40 (ops_fuzz found the unaccounted 16 GiB vector this was).
  Scratch<double> w(ctx.account(), row_count > 0 ? static_cast<size_t>(n) : 0);
  int64_t* o = out.data<int64_t>();
  for (int64_t r = 0; r < row_count; ++r)
    backend::sampling::multinomialRow(rows.data<double>() + r * n, w.data(), n, r, samples, seed, replacement, what,
                                      o + r * samples);
  return out;
}

}  // namespace fucina::kernels
