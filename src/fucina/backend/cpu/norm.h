// The normalizations' rows (layerNorm, rmsNorm, l2Normalize and those composed from them): the
// SIMD row kernels of vector_ops.h where enabled, else their scalar loops, split over the pool.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

backend::Kernels::NormRows normRows(ExecContext& ctx, const internal::RawTensor& x, backend::Kernels::Norm kind,
                                    double eps);
internal::RawTensor normRowsVjp(ExecContext& ctx, backend::Kernels::Norm kind, const backend::Kernels::NormRows& saved,
                                const internal::RawTensor& gy);

}  // namespace fucina::kernels
