// The losses' rows against integer labels (crossEntropy, nllLoss) and their reduction: the
// per-row loss in f64 on the calling thread, the fused gradient rows split over the pool with the
// SIMD row kernel of vector_ops.h where enabled.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

backend::Kernels::IndexFault firstLabelOutside(const internal::RawTensor& labels, int64_t classes,
                                               std::optional<int64_t> ignore);
internal::RawTensor labelLossRows(ExecContext& ctx, const internal::RawTensor& lp, const internal::RawTensor& labels,
                                  double smoothing, bool plain);
internal::RawTensor labelLossRowsVjp(ExecContext& ctx, const internal::RawTensor& lp,
                                     const internal::RawTensor& labels, const internal::RawTensor& gy, float scale,
                                     double smoothing, bool plain);
internal::RawTensor reduceLoss(ExecContext& ctx, const internal::RawTensor& loss, double denom);

}  // namespace fucina::kernels
