// Layout helpers of the ops (shape logic, no compute): the axes of a binary op's result, and a
// tensor laid out with one axis last for the row-wise primitives.
#pragma once

#include <string_view>

#include "fucina/core/raw_tensor.h"

namespace fucina {
class ExecContext;
}

namespace fucina::ops {

struct AlignedShape {
  Tags tags;
  Extents shape;
};

// Output axes of a binary op: a's axes, then b's axes that a lacks. Shared axes must agree in
// extent, else ShapeMismatch naming both shapes and the axis.
AlignedShape alignShapes(std::string_view op, const internal::RawTensor& a, const internal::RawTensor& b);

// a laid out with `axis` last and contiguous (a copy unless it already is), so row-wise kernels
// can run over it; the result's axes are a's other axes in order, then axis.
internal::RawTensor axisLast(ExecContext& ctx, const internal::RawTensor& a, Tag axis);
// The same layout converted to dtype in one copy (argmax and multinomial read rows as f64).
internal::RawTensor axisLastAs(ExecContext& ctx, const internal::RawTensor& a, Tag axis, DType dtype);

}  // namespace fucina::ops
