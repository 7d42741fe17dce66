#include "fucina/kernels/reduce.h"

#include <vector>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"
#include "fucina/kernels/strided.h"

namespace fucina::kernels {

using internal::RawTensor;

RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes) {
  Tags kept_tags;
  Extents kept_shape;
  for (Tag tag : axes) a.axis(tag);  // every reduced axis must exist
  for (size_t i = 0; i < a.rank(); ++i) {
    if (hasTag(axes, a.tags()[i])) continue;
    kept_tags.push_back(a.tags()[i]);
    kept_shape.push_back(a.shape()[i]);
  }
  RawTensor out = RawTensor::empty(ctx, kept_tags, kept_shape, DType::f32);
  const int64_t out_n = out.numel();
  std::vector<double> acc(static_cast<size_t>(out_n), 0.0);
  if (a.numel() > 0) {
    // Strides of the accumulator seen from a's axes: 0 along reduced axes.
    const std::vector<int64_t> kept_strides = contiguousStrides(kept_shape);
    std::vector<int64_t> acc_strides(a.rank(), 0);
    for (size_t i = 0, j = 0; i < a.rank(); ++i)
      if (!hasTag(axes, a.tags()[i])) acc_strides[i] = kept_strides[j++];
    const auto plan = planStrided<2>(a.shape(), {&a.strides(), &acc_strides});
    const float* src = a.f32();
    forEachRow(plan, 0, plan.outer(), [&](const auto& off, int64_t n, const auto& st) {
      double* dst = acc.data() + off[1];
      if (st[1] == 0) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += src[off[0] + i * st[0]];
        *dst += s;
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i * st[1]] += src[off[0] + i * st[0]];
      }
    });
  }
  float* o = out.f32();
  for (int64_t i = 0; i < out_n; ++i) o[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
  return out;
}

RawTensor sumTo(ExecContext& ctx, const RawTensor& a, const Tags& tags, const Extents& shape) {
  Tags reduced;
  for (Tag tag : a.tags())
    if (!hasTag(tags, tag)) reduced.push_back(tag);
  for (size_t i = 0; i < tags.size(); ++i) {
    if (!hasTag(a.tags(), tags[i]) || a.extent(tags[i]) != shape[i])
      fail(ErrorCode::ShapeMismatch, "cannot reduce " + a.describe() + " to " +
                                         describe(tags, shape));
  }
  RawTensor s = reduced.empty() ? a : sumAxes(ctx, a, reduced);
  if (s.tags() == tags && s.isContiguous()) return s;
  return s.permuted(tags).contiguous(ctx);
}

}  // namespace fucina::kernels
