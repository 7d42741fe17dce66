#include "fucina/backend/cpu/contract_f64.h"

#include <algorithm>
#include <string>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"
#include "fucina/backend/cpu/gemm.h"

namespace fucina::kernels {

using internal::RawTensor;

namespace {

// The product of a's extents over `axes`, appending them to *shape.
int64_t extentsOf(const RawTensor& a, const Tags& axes, Extents* shape) {
  int64_t n = 1;
  for (Tag t : axes) {
    shape->push_back(a.extent(t));
    n *= a.extent(t);
  }
  return n;
}

}  // namespace

RawTensor contractF64(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted) {
  // References, not structured bindings: Emscripten's clang cannot capture those in lambdas.
  const ContractionAxes axes = contractionAxes(a, b, contracted);
  const Tags &batch = axes.batch, &a_free = axes.a_free, &b_free = axes.b_free;

  // Both operands as contiguous f64 [batch, rows, depth] and [batch, depth, cols] copies, so the
  // loop below reads them with plain offsets whatever their strides were.
  Extents out_shape, ignored;
  const int64_t nb = extentsOf(a, batch, &out_shape);
  const int64_t m = extentsOf(a, a_free, &out_shape);
  const int64_t n = extentsOf(b, b_free, &out_shape);
  const int64_t k = extentsOf(a, contracted, &ignored);
  const RawTensor pa = a.permuted(joinTags({batch, a_free, contracted})).to(ctx, DType::f64);
  const RawTensor pb = b.permuted(joinTags({batch, contracted, b_free})).to(ctx, DType::f64);
  const Tags out_tags = joinTags({batch, a_free, b_free});
  RawTensor out = RawTensor::zeros(ctx, out_tags, out_shape, DType::f64);
  if (out.numel() > 0 && k > 0) {
    const double* x = pa.data<double>();
    const double* y = pb.data<double>();
    double* z = out.data<double>();
    ctx.parallelFor(nb * m, std::max<int64_t>(1, 16384 / (k * std::max<int64_t>(1, n))), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {  // row r of batch r / m
        const double* xr = x + r * k;
        const double* yb = y + (r / m) * k * n;
        double* zr = z + r * n;
        for (int64_t p = 0; p < k; ++p)
          for (int64_t j = 0; j < n; ++j) zr[j] += xr[p] * yb[p * n + j];
      }
    });
  }
  return inResultOrder(ctx, out, a, contracted, b_free);
}

}  // namespace fucina::kernels
