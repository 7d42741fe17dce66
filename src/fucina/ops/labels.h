// Integer labels aligned with the logits' rows, shared by the losses that take them (loss.cpp,
// cross_entropy_ext.cpp).
#pragma once

#include <optional>
#include <string_view>

#include "fucina/ag/tensor.h"

namespace fucina::ops {

// One label per row of axisLast(logits, class_axis), read through ctx as contiguous i64; the
// losses' Kernels primitives read them.
struct Labels {
  internal::RawTensor values;  // i64, row-major over tags
  Tags tags;                   // the row axes, in the order of the logits
  Extents shape;
  int64_t rows() const { return values.numel(); }
};

// DTypeMismatch unless i32/i64; ShapeMismatch unless labels have the logits' axes without
// class_axis (any order); IndexOutOfRange for a label outside [0, C) that is not `ignore`.
Labels readLabels(ExecContext& ctx, std::string_view op, const internal::RawTensor& logits, const Tensor& labels,
                  Tag class_axis, std::optional<int64_t> ignore = std::nullopt);

}  // namespace fucina::ops
