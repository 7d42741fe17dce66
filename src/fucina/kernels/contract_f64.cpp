#include "fucina/kernels/contract_f64.h"

#include <algorithm>
#include <string>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"

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

Tags joined(std::initializer_list<const Tags*> parts) {
  Tags out;
  for (const Tags* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

}  // namespace

RawTensor contractF64(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted) {
  Tags batch, a_free, b_free;
  auto requireSame = [&](Tag tag, const char* what) {
    if (a.extent(tag) != b.extent(tag))  // extent() throws ShapeMismatch when the axis is missing
      fail(ErrorCode::ShapeMismatch, std::string("dot: ") + what + " axis '" + std::string(tag.name()) +
                                         "' has extent " + std::to_string(a.extent(tag)) + " in " +
                                         a.describe() + " but " + std::to_string(b.extent(tag)) +
                                         " in " + b.describe());
  };
  for (Tag tag : contracted) requireSame(tag, "contracted");
  for (Tag tag : a.tags()) {
    if (hasTag(contracted, tag)) continue;
    if (hasTag(b.tags(), tag)) {
      requireSame(tag, "batch");
      batch.push_back(tag);
    } else {
      a_free.push_back(tag);
    }
  }
  for (Tag tag : b.tags())
    if (!hasTag(contracted, tag) && !hasTag(a.tags(), tag)) b_free.push_back(tag);

  // Both operands as contiguous f64 [batch, rows, depth] and [batch, depth, cols] copies, so the
  // loop below reads them with plain offsets whatever their strides were.
  Extents out_shape, ignored;
  const int64_t nb = extentsOf(a, batch, &out_shape);
  const int64_t m = extentsOf(a, a_free, &out_shape);
  const int64_t n = extentsOf(b, b_free, &out_shape);
  const int64_t k = extentsOf(a, contracted, &ignored);
  const RawTensor pa = a.permuted(joined({&batch, &a_free, &contracted})).to(ctx, DType::f64);
  const RawTensor pb = b.permuted(joined({&batch, &contracted, &b_free})).to(ctx, DType::f64);
  const Tags out_tags = joined({&batch, &a_free, &b_free});
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
  // Result order: a's remaining axes (batch and free, as they stand in a), then b_free.
  Tags order;
  for (Tag tag : a.tags())
    if (!hasTag(contracted, tag)) order.push_back(tag);
  order.insert(order.end(), b_free.begin(), b_free.end());
  if (order == out_tags) return out;
  return out.permuted(order).contiguous(ctx);
}

}  // namespace fucina::kernels
