// The reference backend's ordering primitives (Kernels::sortRows, argExtremumRows).
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

Kernels::SortedRows sortRows(ExecContext& ctx, const RawTensor& rows, int64_t k, bool largest);
RawTensor argExtremumRows(ExecContext& ctx, const RawTensor& rows, bool largest);

}  // namespace fucina::backend::reference
