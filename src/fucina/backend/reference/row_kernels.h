// The reference backend's row-wise families (softmax, norms, rope, losses, gated units): scalar loops on
// the calling thread, sums in f64, the oracle for the cpu backend's SIMD and threaded rows.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

using internal::RawTensor;

RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log);
RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log);

Kernels::NormRows normRows(ExecContext& ctx, const RawTensor& x, Kernels::Norm kind, double eps);
RawTensor normRowsVjp(ExecContext& ctx, Kernels::Norm kind, const Kernels::NormRows& saved, const RawTensor& gy);

RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin,
                   Kernels::RopePairs pairs, bool inverse);
Kernels::RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base,
                               int64_t offset);
Kernels::RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const RawTensor& cos,
                                     const RawTensor& sin, double eps);
Kernels::RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const Kernels::RmsRopeRows& saved, const RawTensor& w,
                                         const RawTensor& cos, const RawTensor& sin, const RawTensor& gy, bool need_x,
                                         bool need_w);

Kernels::IndexFault firstLabelOutside(ExecContext& ctx, const RawTensor& labels, int64_t classes,
                                      std::optional<int64_t> ignore);
RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, double smoothing, bool plain);
RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, const RawTensor& gy,
                           float scale, double smoothing, bool plain);
RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, double denom);
double labelWeightSum(ExecContext& ctx, const RawTensor& labels, const RawTensor& weights, int64_t ignore);
Kernels::CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x, const Kernels::CrossEntropy& ce,
                                           bool in_place);
Kernels::CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& lse,
                                               const Kernels::CrossEntropy& ce, const RawTensor& gy, double denom,
                                               bool need_x, bool need_target, bool in_place);
RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x, float inv_t);
RawTensor distillRows(ExecContext& ctx, const RawTensor& x, const Kernels::Distill& d);
RawTensor distillRowsVjp(ExecContext& ctx, const RawTensor& x, const Kernels::Distill& d, const RawTensor& gy);

RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate);
void gatedVjp(ExecContext& ctx, const GateFn& fn, const RawTensor& gy, const RawTensor& up, const RawTensor& gate,
              const RawTensor& gup, const RawTensor& ggate);

// Optimizer updates (reference/optim.cpp).
void sgdUpdate(const SgdStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& buf);
void adamUpdate(const AdamStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& m, const RawTensor& v);
double sumSquares(const RawTensor& x);

}  // namespace fucina::backend::reference
