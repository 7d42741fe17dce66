// topK and sort along a named axis: values (differentiable) and i64 indices (constants). Each row,
// laid out with the axis last, is ordered by (value, index) so that the result never depends on
// the sorting algorithm: ties keep the lower index first, and NaN counts as larger than any number
// (torch's order). The VJP scatters each value's gradient back to the index it came from.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "fucina/backend/cpu/softmax.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

namespace {

SortResult ordered(ExecContext& ctx, const char* op, const Tensor& x, Tag axis, int64_t k, bool largest) {
  if (!ops::allF32({&x})) {  // Note [Dtype rules]: 16-bit constants sort in f32, values keep their dtype
    const DType out = ops::typedResult(op, {&x});
    SortResult r = ordered(ctx, op, x.to(ctx, DType::f32), axis, k, largest);
    return {r.values.to(ctx, out), r.indices};
  }
  const RawTensor& a = x.value();
  const int64_t n = a.extent(axis);
  if (k < 0 || k > n)
    fail(ErrorCode::InvalidArgument, std::string(op) + ": k = " + std::to_string(k) + " must be in [0, " +
                                         std::to_string(n) + "] (the extent of '" + std::string(axis.name()) +
                                         "' in " + a.describe() + ")");
  const RawTensor in = kernels::axisLast(ctx, a, axis);
  const int64_t rows = n == 0 ? 0 : in.numel() / n;
  Extents shape = in.shape();
  shape.back() = k;
  RawTensor values = RawTensor::empty(ctx, in.tags(), shape);
  RawTensor indices = RawTensor::empty(ctx, in.tags(), shape, DType::i64);
  const float* px = in.f32();
  float* pv = values.f32();
  int64_t* pi = indices.data<int64_t>();
  ctx.parallelFor(rows, std::max<int64_t>(1, 2048 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      const float* row = px + r * n;
      // Strict weak order: NaN above every number; among equals, the lower index first.
      auto before = [&](int64_t i, int64_t j) {
        const float u = row[i], v = row[j];
        const bool un = std::isnan(u), vn = std::isnan(v);
        if (un || vn) return un != vn ? (largest ? un : vn) : i < j;
        if (u != v) return largest ? u > v : u < v;
        return i < j;
      };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        pv[r * k + j] = row[order[static_cast<size_t>(j)]];
        pi[r * k + j] = order[static_cast<size_t>(j)];
      }
    }
  });
  Tensor idx = Tensor::fromRaw(ctx, indices.permuted(a.tags()));
  Tensor val = ops::finishOp(ctx, op, values.permuted(a.tags()), {&x}, [&] {
    return [indices, in_tags = in.tags(), in_shape = in.shape(), a_tags = a.tags(), axis, n, k, rows](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor gl = kernels::axisLast(c, gy, axis);
      RawTensor gx = RawTensor::zeros(c, in_tags, in_shape);
      const float* pg = gl.f32();
      const int64_t* pi = indices.data<int64_t>();
      float* out = gx.f32();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < k; ++j) out[r * n + pi[r * k + j]] = pg[r * k + j];
      g[0] = gx.permuted(a_tags);
    };
  }, static_cast<size_t>(a.numel()));
  return {val, idx};
}

}  // namespace

SortResult Tensor::topK(ExecContext& ctx, Tag axis, int64_t k, bool largest) const {
  return ordered(ctx, "topK", *this, axis, k, largest);
}

SortResult Tensor::sort(ExecContext& ctx, Tag axis, bool descending) const {
  return ordered(ctx, "sort", *this, axis, extent(axis), descending);
}

// argmax/argmin: the first index of the largest (smallest) value of each line, NaN counting as
// the extreme (torch); i64 constants, the axis dropped. Any element type but q8_0, read as double.
namespace {

Tensor argExtremum(ExecContext& ctx, const char* op, const Tensor& x, Tag axis, bool largest) {
  const RawTensor& a = ops::elementwiseValue(op, x);
  const int64_t n = a.extent(axis);
  if (n == 0) fail(ErrorCode::InvalidArgument, std::string(op) + " over the empty axis '" + std::string(axis.name()) + "' of " + a.describe());
  const RawTensor rows = kernels::axisLastAs(ctx, a, axis, DType::f64);
  Tags tags(rows.tags().begin(), rows.tags().end() - 1);
  Extents shape(rows.shape().begin(), rows.shape().end() - 1);
  RawTensor out = RawTensor::empty(ctx, tags, shape, DType::i64);
  const double* p = rows.data<double>();
  int64_t* o = out.data<int64_t>();
  for (int64_t r = 0; r < out.numel(); ++r) {
    const double* row = p + r * n;
    int64_t best = 0;
    for (int64_t i = 1; i < n && !std::isnan(row[best]); ++i)
      if (std::isnan(row[i]) || (largest ? row[i] > row[best] : row[i] < row[best])) best = i;
    o[r] = best;
  }
  return Tensor::make(ctx, std::move(out), nullptr);
}

}  // namespace

Tensor Tensor::argmax(ExecContext& ctx, Tag axis) const { return argExtremum(ctx, "argmax", *this, axis, true); }
Tensor Tensor::argmin(ExecContext& ctx, Tag axis) const { return argExtremum(ctx, "argmin", *this, axis, false); }

Tensor Tensor::argsort(ExecContext& ctx, Tag axis, bool descending) const {
  return detach(ctx).sort(ctx, axis, descending).indices;  // only the indices: no record for the values
}

}  // namespace fucina
