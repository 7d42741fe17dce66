// The cpu backend's indexing kernels (Kernels: firstIndexOutside, gatherAlong, scatterAlong,
// selectRows, updateRows, maskPositions); backend/kernels.h states what each computes.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

using internal::RawTensor;

backend::Kernels::IndexFault firstIndexOutside(const RawTensor& index, int64_t extent);
backend::Kernels::ValueFault firstValueOutside(const RawTensor& x, double lo, double hi);
RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index);
void scatterAlong(const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src, bool add);
RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index);
void updateRows(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                backend::Kernels::RowUpdate how);
RawTensor maskPositions(ExecContext& ctx, const RawTensor& mask, Tag tag);

}  // namespace fucina::kernels
