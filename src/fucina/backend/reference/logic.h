// The reference backend's truth-value primitives (Kernels::logic, truthRows, bandMask).
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

RawTensor logic(ExecContext& ctx, Kernels::Logic op, const Tags& tags, const Extents& shape, Inputs ins);
RawTensor truthRows(ExecContext& ctx, const RawTensor& truth, bool any);
RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower, int64_t upper);

}  // namespace fucina::backend::reference
