// multinomial: seeded sampling of indices from the non-negative weights along an axis (torch's
// multinomial). Draw j of row r uses the uniform of index r·samples + j of the seed's stream
// (core/random.h), so the result is the same in every build and on any thread count. An i64
// constant: sampling is intentionally without gradient.
#include <string>

#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/layout.h"

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
  const RawTensor rows = ops::axisLastAs(ctx, a, axis, DType::f64);
  const RawTensor out = backend::kernelsOf(ctx).multinomialRows(ctx, rows, samples, seed, replacement, a.describe());
  return Tensor::make(ctx, out.permuted(a.tags()), nullptr);
}

}  // namespace fucina
