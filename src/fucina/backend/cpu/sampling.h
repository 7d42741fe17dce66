// The cpu backend's seeded kernels (Kernels::dropout, multinomialRows).
#pragma once

#include <string>

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

internal::RawTensor dropout(ExecContext& ctx, const internal::RawTensor& x, uint64_t seed, double p, float keep_scale);
internal::RawTensor multinomialRows(ExecContext& ctx, const internal::RawTensor& rows, int64_t samples, uint64_t seed,
                                    bool replacement, const std::string& what);

}  // namespace fucina::kernels
