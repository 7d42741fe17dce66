// The q8_0 row products of q8_gemv.h, written once with Highway as gemm_simd.cpp is (one copy per
// x86 target natively, SIMD128 in wasm).
#ifndef FUCINA_KERNELS_Q8_GEMV_SHARED
#define FUCINA_KERNELS_Q8_GEMV_SHARED

#include <algorithm>

#include "fucina/core/q8.h"
#include "fucina/backend/cpu/q8_gemv.h"

namespace fucina::kernels {

void q8RowsDotRef(int64_t m, int64_t k, const float* a, int64_t lda, const std::byte* w, int64_t j0, int64_t j1,
                  float* c, int64_t ldc, const float* bias) {
  const int64_t blocks = k / q8::kBlock;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = j0; j < j1; ++j) {
      const std::byte* row = w + static_cast<size_t>(j * blocks) * q8::kBlockBytes;
      float sum = 0.f;
      for (int64_t b = 0; b < blocks; ++b) {
        const std::byte* block = row + static_cast<size_t>(b) * q8::kBlockBytes;
        const int8_t* q = q8::valuesOf(block);
        const float* x = a + i * lda + b * q8::kBlock;
        float part = 0.f;
        for (int64_t e = 0; e < q8::kBlock; ++e) part += x[e] * static_cast<float>(q[e]);
        sum += q8::scaleOf(block) * part;
      }
      c[i * ldc + j] = (bias ? bias[j] : 0.f) + sum;
    }
}

}  // namespace fucina::kernels

#endif  // FUCINA_KERNELS_Q8_GEMV_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fucina/backend/cpu/q8_gemv.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace fucina::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
#include "fucina/backend/cpu/relaxed-inl.h"  // MulAddAcc

// Up to kRows rows of A against one weight row at a time: each block's 32 values are widened to
// f32 once and used by every row; a row's vector of partial sums is scaled by the block's scale
// and added to its total, which is reduced across lanes at the end.
void Q8RowsDot(int64_t m, int64_t k, const float* a, int64_t lda, const std::byte* w, int64_t j0, int64_t j1,
               float* c, int64_t ldc, const float* bias) {
  constexpr int64_t kRows = 4;
  const hn::ScalableTag<float> d;
  const hn::Rebind<int32_t, decltype(d)> di32;
  const hn::Rebind<int8_t, decltype(d)> di8;
  using V = hn::Vec<decltype(d)>;
  constexpr int64_t N = static_cast<int64_t>(hn::MaxLanes(d));
  static_assert(q8::kBlock % N == 0, "a block is whole vectors");
  constexpr int64_t kVecs = q8::kBlock / N;
  const int64_t blocks = k / q8::kBlock;
  for (int64_t i0 = 0; i0 < m; i0 += kRows) {
    const int64_t rows = std::min(kRows, m - i0);
    for (int64_t j = j0; j < j1; ++j) {
      const std::byte* row = w + static_cast<size_t>(j * blocks) * q8::kBlockBytes;
      V total[kRows];
      for (int64_t r = 0; r < kRows; ++r) total[r] = hn::Zero(d);
      for (int64_t b = 0; b < blocks; ++b) {
        const std::byte* block = row + static_cast<size_t>(b) * q8::kBlockBytes;
        const int8_t* q = q8::valuesOf(block);
        V wv[kVecs];
        for (int64_t v = 0; v < kVecs; ++v) wv[v] = hn::ConvertTo(d, hn::PromoteTo(di32, hn::LoadU(di8, q + v * N)));
        const V scale = hn::Set(d, q8::scaleOf(block));
        for (int64_t r = 0; r < rows; ++r) {
          const float* x = a + (i0 + r) * lda + b * q8::kBlock;
          V part = hn::Mul(hn::LoadU(d, x), wv[0]);
          for (int64_t v = 1; v < kVecs; ++v) part = MulAddAcc(hn::LoadU(d, x + v * N), wv[v], part);
          total[r] = MulAddAcc(scale, part, total[r]);
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        c[(i0 + r) * ldc + j] = (bias ? bias[j] : 0.f) + hn::GetLane(hn::SumOfLanes(d, total[r]));
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fucina::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fucina::kernels {

HWY_EXPORT(Q8RowsDot);

void q8RowsDot(int64_t m, int64_t k, const float* a, int64_t lda, const std::byte* w, int64_t j0, int64_t j1,
               float* c, int64_t ldc, const float* bias) {
  HWY_DYNAMIC_DISPATCH(Q8RowsDot)(m, k, a, lda, w, j0, j1, c, ldc, bias);
}

}  // namespace fucina::kernels
#endif  // HWY_ONCE
