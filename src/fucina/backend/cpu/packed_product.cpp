// The cpu backend's packed products: a dense weight packed once into the GEMM's panels for this
// process's SIMD target; a quantized one read in its q8_0 blocks, by the rows kernel for a few
// rows of x and by the GEMM (converting the blocks while it packs) for more.
#include "fucina/backend/cpu/packed_product.h"

#include <algorithm>

#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/gemm_simd.h"
#include "fucina/backend/cpu/q8_gemv.h"
#include "fucina/core/q8.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

namespace {

// Rows of q8_0 blocks to a thread at a time in the few-rows path: ~64 K multiply-adds.
int64_t columnGrain(int64_t m, int64_t k) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, m * k)); }

// At most this many rows of x use the q8_0 rows kernel; more convert the weight's blocks to f32
// once per product in the GEMM's packing, which then costs less than converting per row group.
constexpr int64_t kQ8FewRows = 16;


}  // namespace

backend::Kernels::PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last) {
  const size_t d = depth_last ? b.rank() - 1 : 0;
  const int64_t k = b.shape()[d], n = numelExcept(b.shape(), d);
  backend::Kernels::PackedB p{RawTensor::empty(ctx, {Tag("packed")}, {packedRhsFloats(k, n)}), detail::gemmPanelCols()};
  const TypedB typed{b.dtype() == DType::f32 ? nullptr : b.storage()->data(), b.dtype(), b.offset()};
  kernels::packRhs(ctx, depth_last, k, n, b.dtype() == DType::f32 ? b.data<float>() : nullptr, typed,
                   depth_last ? k : n, p.storage.data<float>());
  return p;
}

RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const backend::Kernels::PackedB& b,
                        const RawTensor& bias, const Tags& tags, const Extents& shape) {
  RawTensor out = RawTensor::empty(ctx, tags, shape);
  if (out.numel() == 0) return out;
  const int64_t k = a.shape().back(), m = numelExcept(a.shape(), a.rank() - 1), n = out.numel() / m;
  const float* pa = a.data<float>();
  const float* pb = bias.valid() ? bias.data<float>() : nullptr;
  float* c = out.data<float>();
  const RawTensor& w = b.storage;
  if (w.dtype() == DType::q8_0) {
    const std::byte* base = w.bytes();
    if (m <= kQ8FewRows) {
      ctx.parallelFor(n, columnGrain(m, k), [&](int64_t j0, int64_t j1) {
        kernels::q8RowsDot(m, k, pa, k, base, j0, j1, c, n, pb);
      });
    } else {
      kernels::gemm(ctx, false, true, m, n, k, pa, k, kernels::TypedB{w.storage()->data(), DType::q8_0, w.offset()}, k,
                    c, n, false, pb);
    }
  } else {
    kernels::gemmPacked(ctx, m, n, k, pa, k, w.data<float>(), c, n, pb);
  }
  return out;
}

}  // namespace fucina::kernels
