// Products of a few f32 rows with a q8_0 matrix read in its blocks (quantized dotPacked):
// generation multiplies one token's row by each weight, where converting the whole weight to
// f32 first (what the GEMM's packing does) would cost more than the product.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fucina::kernels {

// c[i·ldc + j] = bias[j] (0 when null) + Σ_p a[i·lda + p] · W(j, p) for rows i < m and columns
// j in [j0, j1), where W's row j is k/32 consecutive q8_0 blocks at w + j·(k/32)·34 (Note [q8_0
// layout]; k a multiple of 32). Each element's sum runs in a fixed order (per block, then over
// blocks), whatever m, j0 and j1 are: a split over threads by columns gives the same bits.
void q8RowsDot(int64_t m, int64_t k, const float* a, int64_t lda, const std::byte* w, int64_t j0, int64_t j1,
               float* c, int64_t ldc, const float* bias);
// The scalar reference the tests compare it with (same sums, rounded per multiply-add).
void q8RowsDotRef(int64_t m, int64_t k, const float* a, int64_t lda, const std::byte* w, int64_t j0, int64_t j1,
                  float* c, int64_t ldc, const float* bias);

}  // namespace fucina::kernels
