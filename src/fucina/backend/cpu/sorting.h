// The cpu backend's ordering kernels (Kernels::sortRows, argExtremumRows).
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

backend::Kernels::SortedRows sortRows(ExecContext& ctx, const internal::RawTensor& rows, int64_t k, bool largest);
internal::RawTensor argExtremumRows(ExecContext& ctx, const internal::RawTensor& rows, bool largest);

}  // namespace fucina::kernels
