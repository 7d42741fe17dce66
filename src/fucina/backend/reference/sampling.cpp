// Seeded randomness element after element (dropout) and row after row (multinomial), from the
// same counter-based draws as the cpu backend (backend/random_rows.h).
#include "fucina/backend/reference/sampling.h"

#include "fucina/backend/random_rows.h"
#include "fucina/exec/context.h"

namespace fucina::backend::reference {

RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale) {
  const RawTensor src = x.contiguous(ctx);
  RawTensor out = RawTensor::empty(ctx, src.tags(), src.shape());
  for (int64_t i = 0; i < out.numel(); ++i) out.f32()[i] = src.f32()[i] * sampling::dropoutScale(seed, p, keep_scale, i);
  return out;
}

RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows, int64_t samples, uint64_t seed, bool replacement,
                          const std::string& what) {
  const int64_t n = rows.shape().back();
  Extents shape = rows.shape();
  shape.back() = samples;
  RawTensor out = RawTensor::empty(ctx, rows.tags(), shape, DType::i64);
  const int64_t row_count = sampling::multinomialRowCount(rows.numel(), n, out.numel(), samples);
  Scratch<double> w(ctx.account(), row_count > 0 ? static_cast<size_t>(n) : 0);
  for (int64_t r = 0; r < row_count; ++r)
    sampling::multinomialRow(rows.data<double>() + r * n, w.data(), n, r, samples, seed, replacement, what,
                             out.data<int64_t>() + r * samples);
  return out;
}

}  // namespace fucina::backend::reference
