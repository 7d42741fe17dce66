// Indexing by integer tensors: indexSelect (embedding lookup). The forward gathers rows along a
// named axis; the VJP scatter-adds them back, so repeated indices accumulate.
#include <string>
#include <vector>

#include "fucina/ops/finish_op.h"

namespace fucina {

using internal::RawTensor;
using ops::Grads;
using ops::NeedsGrad;

Tensor Tensor::indexSelect(ExecContext& ctx, Tag axis, const Tensor& indices) const {
  ops::requireF32("indexSelect", *this);
  const RawTensor& a = value();
  const RawTensor& ix = indices.value();
  const size_t p = a.axis(axis);
  const std::string name_q = "'" + std::string(axis.name()) + "'";
  if (ix.dtype() != DType::i32 && ix.dtype() != DType::i64)
    fail(ErrorCode::DTypeMismatch, "indexSelect along " + name_q + ": indices must be i32 or i64, got " +
                                       std::string(name(ix.dtype())) + " " + ix.describe());
  // Result axes: a's axes with `axis` replaced, in place, by the indices' axes.
  Tags tags;
  Extents shape;
  for (size_t i = 0; i < a.rank(); ++i) {
    if (i == p) {
      tags.insert(tags.end(), ix.tags().begin(), ix.tags().end());
      shape.insert(shape.end(), ix.shape().begin(), ix.shape().end());
    } else {
      if (hasTag(ix.tags(), a.tags()[i]))
        fail(ErrorCode::ShapeMismatch, "indexSelect along " + name_q + ": the indices " + ix.describe() +
                                           " share axis '" + std::string(a.tags()[i].name()) +
                                           "' with the table " + a.describe());
      tags.push_back(a.tags()[i]);
      shape.push_back(a.shape()[i]);
    }
  }
  const int64_t n = a.shape()[p];
  std::vector<int64_t> idx;
  const std::vector<float> raw = ix.toVector();  // row-major over the indices' axes
  idx.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto v = static_cast<int64_t>(raw[i]);
    if (v < 0 || v >= n)
      fail(ErrorCode::IndexOutOfRange, "indexSelect along " + name_q + ": index " + std::to_string(v) +
                                           " at position " + std::to_string(i) + " is outside [0, " +
                                           std::to_string(n) + ")");
    idx.push_back(v);
  }
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < p; ++i) outer *= a.shape()[i];
  for (size_t i = p + 1; i < a.rank(); ++i) inner *= a.shape()[i];
  const RawTensor src = a.contiguous(ctx);
  RawTensor out = RawTensor::empty(ctx, tags, shape);
  {
    const float* s = src.f32();
    float* o = out.f32();
    const auto k = static_cast<int64_t>(idx.size());
    for (int64_t u = 0; u < outer; ++u)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t v = 0; v < inner; ++v) o[(u * k + j) * inner + v] = s[(u * n + idx[j]) * inner + v];
  }
  return ops::finishOp(ctx, "indexSelect", out, {this}, [&] {
    return [in_tags = a.tags(), in_shape = a.shape(), out_tags = tags, idx, outer, inner, n](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      RawTensor full = RawTensor::zeros(c, in_tags, in_shape);
      const RawTensor gc = gy.permuted(out_tags).contiguous(c);
      const float* s = gc.f32();
      float* o = full.f32();
      const auto k = static_cast<int64_t>(idx.size());
      for (int64_t u = 0; u < outer; ++u)
        for (int64_t j = 0; j < k; ++j)
          for (int64_t v = 0; v < inner; ++v) o[(u * n + idx[j]) * inner + v] += s[(u * k + j) * inner + v];
      g[0] = std::move(full);
    };
  }, static_cast<size_t>(out.numel()));
}

}  // namespace fucina
