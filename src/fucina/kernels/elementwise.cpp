#include "fucina/kernels/elementwise.h"

namespace fucina::kernels {

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

void addInto(const RawTensor& dst, const RawTensor& src) {
  if (dst.numel() == 0) return;
  const RawTensor view = src.broadcastView(dst.tags(), dst.shape());
  const auto plan = planStrided<2>(dst.shape(), {&view.strides(), &dst.strides()});
  const float* s = view.f32();
  float* d = dst.f32();
  forEachRow(plan, 0, plan.outer(), [&](const auto& off, int64_t n, const auto& st) {
    if (st[0] == 1 && st[1] == 1) {
      const float* p = s + off[0];
      float* q = d + off[1];
      for (int64_t i = 0; i < n; ++i) q[i] += p[i];
    } else {
      for (int64_t i = 0; i < n; ++i) d[off[1] + i * st[1]] += s[off[0] + i * st[0]];
    }
  });
}

}  // namespace fucina::kernels
