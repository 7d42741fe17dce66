// Rotary embedding over the cpu pool: the rotation, its tables, and the rmsNorm·weight rows
// fused before it (rmsNormMulRopeHalfPrepared). The row math is backend/rope_rows.h.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

using RopeTables = backend::Kernels::RopeTables;
using RmsRopeRows = backend::Kernels::RmsRopeRows;
using RmsRopeGrads = backend::Kernels::RmsRopeGrads;

internal::RawTensor ropeRows(ExecContext& ctx, const internal::RawTensor& x, const internal::RawTensor& cos,
                             const internal::RawTensor& sin, backend::Kernels::RopePairs pairs, bool inverse);
RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base, int64_t offset);
RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const internal::RawTensor& x, const internal::RawTensor& w,
                            const internal::RawTensor& cos, const internal::RawTensor& sin, double eps);
RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const RmsRopeRows& saved, const internal::RawTensor& w,
                                const internal::RawTensor& cos, const internal::RawTensor& sin,
                                const internal::RawTensor& gy, bool need_x, bool need_w);

}  // namespace fucina::kernels
