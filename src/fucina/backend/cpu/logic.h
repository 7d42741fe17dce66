// The cpu backend's truth-value kernels (Kernels::logic, truthRows, bandMask).
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

internal::RawTensor logic(ExecContext& ctx, backend::Kernels::Logic op, const Tags& tags, const Extents& shape,
                          backend::Inputs ins);
internal::RawTensor truthRows(ExecContext& ctx, const internal::RawTensor& truth, bool any);
internal::RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower,
                             int64_t upper);

}  // namespace fucina::kernels
