// Grouped-query attention and its VJP: (batch, head) tiles on ctx's pool, each calling the SIMD
// GEMM on the calling thread, reading the operands' [time, dim] tiles where they lie.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

backend::Kernels::Attention attention(ExecContext& ctx, const backend::AttentionGeometry& g,
                                      const internal::RawTensor& q, const internal::RawTensor& k,
                                      const internal::RawTensor& v);
backend::Kernels::AttentionGrads attentionVjp(ExecContext& ctx, const backend::AttentionGeometry& g,
                                              const internal::RawTensor& q, const internal::RawTensor& k,
                                              const internal::RawTensor& v, const internal::RawTensor& probs,
                                              const internal::RawTensor& gy, bool need_q, bool need_k, bool need_v);

}  // namespace fucina::kernels
