// multinomial: seeded sampling of indices from the non-negative weights along an axis (torch's
// multinomial). Draw j of row r uses the uniform of index r·samples + j of the seed's stream
// (core/random.h), so the result is the same in every build and on any thread count. An i64
// constant: sampling has no gradient (reference §5.8, "Intentionally no-grad").
#include <cmath>
#include <string>

#include "fucina/core/random.h"
#include "fucina/backend/cpu/softmax.h"
#include "fucina/ops/finish_op.h"

namespace fucina {

using internal::RawTensor;

Tensor Tensor::multinomial(ExecContext& ctx, Tag axis, int64_t samples, uint64_t seed, bool replacement) const {
  const RawTensor& a = value();
  if (a.dtype() == DType::q8_0 || a.dtype() == DType::u8)
    fail(ErrorCode::DTypeMismatch, "multinomial: weights must be a floating or integer tensor, got " + a.describe());
  const int64_t n = a.extent(axis);
  if (samples < 0) fail(ErrorCode::InvalidArgument, "multinomial: samples must be >= 0, got " + std::to_string(samples));
  if (!replacement && samples > n)
    fail(ErrorCode::InvalidArgument, "multinomial: " + std::to_string(samples) + " samples without replacement from " +
                                         std::to_string(n) + " categories along '" + std::string(axis.name()) + "'");
  const RawTensor rows = kernels::axisLastAs(ctx, a, axis, DType::f64);
  Extents shape = rows.shape();
  shape.back() = samples;
  RawTensor out = RawTensor::empty(ctx, rows.tags(), shape, DType::i64);
  const int64_t row_count = n == 0 ? out.numel() / std::max<int64_t>(samples, 1) : rows.numel() / n;
  // Through the context (counted, within its limit), and only with rows to draw from: an empty
  // tensor may have an axis of 2^40 (ops_fuzz found the unaccounted 16 GiB vector this was).
  Scratch<double> w(ctx.account(), row_count > 0 ? static_cast<size_t>(n) : 0);
  int64_t* o = out.data<int64_t>();
  for (int64_t r = 0; r < row_count; ++r) {
    const double* src = rows.data<double>() + r * n;
    double total = 0;
    int64_t positive = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (!(src[i] >= 0) || std::isinf(src[i]))
        fail(ErrorCode::InvalidArgument, "multinomial: weights must be finite and >= 0, got " + std::to_string(src[i]) +
                                             " in row " + std::to_string(r) + " of " + a.describe());
      w[static_cast<size_t>(i)] = src[i];
      total += src[i];
      positive += src[i] > 0;
    }
    if (samples > 0 && total <= 0)
      fail(ErrorCode::InvalidArgument, "multinomial: row " + std::to_string(r) + " of " + a.describe() + " has no positive weight");
    if (!replacement && samples > positive)
      fail(ErrorCode::InvalidArgument, "multinomial: " + std::to_string(samples) + " samples without replacement, but row " +
                                           std::to_string(r) + " has only " + std::to_string(positive) + " positive weights");
    for (int64_t j = 0; j < samples; ++j) {
      // The first category whose running sum passes u·total; rounding can leave u·total past the
      // last sum, which then picks the last positive category.
      const double target = random::unit(seed, static_cast<uint64_t>(r * samples + j)) * total;
      double acc = 0;
      int64_t pick = -1;
      for (int64_t i = 0; i < n; ++i) {
        if (w[static_cast<size_t>(i)] <= 0) continue;
        pick = i;
        acc += w[static_cast<size_t>(i)];
        if (target < acc) break;
      }
      o[r * samples + j] = pick;
      if (!replacement) {  // sequential draws without replacement, as torch's
        total -= w[static_cast<size_t>(pick)];
        w[static_cast<size_t>(pick)] = 0;
      }
    }
  }
  return Tensor::make(ctx, out.permuted(a.tags()), nullptr);
}

}  // namespace fucina
