#include "fucina/ops/layout.h"

#include <string>

#include "fucina/core/error.h"

namespace fucina::ops {

using internal::RawTensor;

AlignedShape alignShapes(std::string_view op, const RawTensor& a, const RawTensor& b) {
  AlignedShape s{a.tags(), a.shape()};
  for (size_t j = 0; j < b.rank(); ++j) {
    if (auto i = findTag(a.tags(), b.tags()[j])) {
      if (a.shape()[*i] != b.shape()[j])
        fail(ErrorCode::ShapeMismatch,
             std::string(op) + ": axis '" + std::string(b.tags()[j].name()) + "' has extent " +
                 std::to_string(a.shape()[*i]) + " in " + a.describe() + " but " +
                 std::to_string(b.shape()[j]) + " in " + b.describe());
    } else {
      s.tags.push_back(b.tags()[j]);
      s.shape.push_back(b.shape()[j]);
    }
  }
  return s;
}

namespace {
RawTensor withAxisLast(const RawTensor& a, Tag axis) {
  Tags order;
  for (Tag t : a.tags())
    if (!(t == axis)) order.push_back(t);
  a.axis(axis);  // ShapeMismatch naming the axes when absent
  order.push_back(axis);
  return a.permuted(order);
}
}  // namespace

RawTensor axisLast(ExecContext& ctx, const RawTensor& a, Tag axis) { return withAxisLast(a, axis).contiguous(ctx); }

RawTensor axisLastAs(ExecContext& ctx, const RawTensor& a, Tag axis, DType dtype) {
  return withAxisLast(a, axis).to(ctx, dtype);
}

}  // namespace fucina::ops
