// The reference backend's packed right operands: the plain matrix Bᵀ {column, depth} (f32,
// row-major), and the product over it as a scalar loop summing in f64.
#include <vector>

#include "fucina/backend/reference/weights.h"

namespace fucina::backend::reference {

Kernels::PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last) {
  const size_t d = depth_last ? b.rank() - 1 : 0;
  const int64_t k = b.shape()[d], n = numelExcept(b.shape(), d);
  const std::vector<float> v = b.toVector();  // row-major over b's axes
  RawTensor bt = RawTensor::empty(ctx, {Tag("column"), Tag("depth")}, {n, k});
  float* o = bt.f32();
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p)
      o[j * k + p] = v[static_cast<size_t>(depth_last ? j * k + p : p * n + j)];
  return {std::move(bt), 0};
}

RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const Kernels::PackedB& b, const RawTensor& bias,
                        const Tags& tags, const Extents& shape) {
  RawTensor out = RawTensor::empty(ctx, tags, shape);
  if (out.numel() == 0) return out;
  const int64_t k = a.shape().back(), m = numelExcept(a.shape(), a.rank() - 1), n = out.numel() / m;
  // Bᵀ row j: column j's depth, the q8_0 rows {columns..., depth} dequantized in the same order.
  const std::vector<float> w = b.storage.toVector();
  const std::vector<float> x = a.toVector();
  const std::vector<float> c = bias.valid() ? bias.toVector() : std::vector<float>();
  float* o = out.f32();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = c.empty() ? 0.0 : c[static_cast<size_t>(j)];
      for (int64_t p = 0; p < k; ++p)
        s += static_cast<double>(x[static_cast<size_t>(i * k + p)]) * w[static_cast<size_t>(j * k + p)];
      o[i * n + j] = static_cast<float>(s);
    }
  return out;
}

}  // namespace fucina::backend::reference
