// The reference backend's seeded primitives (Kernels::dropout, multinomialRows).
#pragma once

#include <string>

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale);
RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows, int64_t samples, uint64_t seed, bool replacement,
                          const std::string& what);

}  // namespace fucina::backend::reference
