// The cross-entropy rows of crossEntropyExt and the linear heads (Kernels::crossEntropyRows and
// Kernels::distillRows, their VJPs): each row's log-softmax, loss and fused gradient in one pass
// over the row, the rows split over the pool.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

double labelWeightSum(const internal::RawTensor& labels, const internal::RawTensor& weights, int64_t ignore);
backend::Kernels::CrossEntropyRows crossEntropyRows(ExecContext& ctx, const internal::RawTensor& x,
                                                    const backend::Kernels::CrossEntropy& ce, bool in_place);
backend::Kernels::CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const internal::RawTensor& lp,
                                                        const internal::RawTensor& lse,
                                                        const backend::Kernels::CrossEntropy& ce,
                                                        const internal::RawTensor& gy, double denom, bool need_x,
                                                        bool need_target, bool in_place);
internal::RawTensor temperatureSoftmaxRows(ExecContext& ctx, const internal::RawTensor& x, float inv_t);
internal::RawTensor distillRows(ExecContext& ctx, const internal::RawTensor& x, const backend::Kernels::Distill& d);
internal::RawTensor distillRowsVjp(ExecContext& ctx, const internal::RawTensor& x,
                                   const backend::Kernels::Distill& d, const internal::RawTensor& gy);

}  // namespace fucina::kernels
