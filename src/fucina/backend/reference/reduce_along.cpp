// a is first laid out with `axis` last (a dense copy), so each line is a contiguous run; results
// that keep the axis are written in that layout and viewed back in a's order, then made dense.
#include "fucina/backend/reference/reduce_along.h"

#include <cmath>
#include <vector>

namespace fucina::backend::reference {

using internal::RawTensor;
using A = Kernels::AlongAxis;

Kernels::Along reduceAlong(ExecContext& ctx, A op, const RawTensor& a, Tag axis) {
  Tags order, tags;
  Extents shape;
  for (size_t i = 0; i < a.rank(); ++i)
    if (a.tags()[i] != axis) tags.push_back(a.tags()[i]), shape.push_back(a.shape()[i]);
  order = tags;
  order.push_back(axis);
  const RawTensor in = a.permuted(order).contiguous(ctx);
  const int64_t n = a.extent(axis), rows = numelOf(shape);
  const bool keep = op == A::cumsum || op == A::cumsumReverse || op == A::prodOthers;
  Kernels::Along r;
  r.values = keep ? RawTensor::empty(ctx, in.tags(), in.shape()) : RawTensor::empty(ctx, tags, shape);
  if (op == A::max || op == A::min) r.index = RawTensor::empty(ctx, tags, shape);
  for (int64_t row = 0; row < rows; ++row) {
    const float* s = in.f32() + row * n;
    float* d = r.values.f32() + (keep ? row * n : row);
    switch (op) {
      case A::max: case A::min: {  // the first extremum; NaN wins and stops the search
        int64_t at = 0;
        for (int64_t i = 1; i < n && !std::isnan(s[at]); ++i)
          if (std::isnan(s[i]) || (op == A::max ? s[i] > s[at] : s[i] < s[at])) at = i;
        *d = s[at];
        r.index.f32()[row] = static_cast<float>(at);
        break;
      }
      case A::prod: {
        double p = 1;
        for (int64_t i = 0; i < n; ++i) p *= s[i];
        *d = static_cast<float>(p);
        break;
      }
      case A::prodOthers:
        for (int64_t i = 0; i < n; ++i) {
          double p = 1;
          for (int64_t j = 0; j < n; ++j)
            if (j != i) p *= s[j];
          d[i] = static_cast<float>(p);
        }
        break;
      case A::cumsum: case A::cumsumReverse: {
        double acc = 0;
        for (int64_t k = 0; k < n; ++k) {
          const int64_t i = op == A::cumsum ? k : n - 1 - k;
          acc += s[i];
          d[i] = static_cast<float>(acc);
        }
        break;
      }
    }
  }
  if (keep) r.values = r.values.permuted(a.tags()).contiguous(ctx);
  return r;
}

}  // namespace fucina::backend::reference
