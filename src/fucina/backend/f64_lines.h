// Reductions of f64 lines (Kernels::reduceF64) and the p-norm's VJP (Kernels::pNormVjp): scalar
// loops on the calling thread in double, one implementation shared by both backends, since the
// f64 path and normAll are not where time goes and their results should not differ by backend.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::backend {

RawTensor reduceF64Lines(ExecContext& ctx, Kernels::F64Line op, const RawTensor& a, const Tags& axes, double param);
RawTensor pNormVjpLoop(ExecContext& ctx, const RawTensor& x, const RawTensor& norm, const RawTensor& gy, double p);

}  // namespace fucina::backend
