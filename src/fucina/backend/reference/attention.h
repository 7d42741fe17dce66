// The reference backend's attention: the direct formula per query, scalar loops on the calling
// thread, sums in f64, the oracle for the cpu backend's tiled GEMMs.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

Kernels::Attention attention(ExecContext& ctx, const AttentionGeometry& g, const internal::RawTensor& q,
                             const internal::RawTensor& k, const internal::RawTensor& v);
Kernels::AttentionGrads attentionVjp(ExecContext& ctx, const AttentionGeometry& g, const internal::RawTensor& q,
                                     const internal::RawTensor& k, const internal::RawTensor& v,
                                     const internal::RawTensor& probs, const internal::RawTensor& gy, bool need_q,
                                     bool need_k, bool need_v);

}  // namespace fucina::backend::reference
