// The reference backend's indexing primitives (Kernels: firstIndexOutside, gatherAlong,
// scatterAlong, selectRows, updateRows, maskPositions).
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

Kernels::IndexFault firstIndexOutside(ExecContext& ctx, const RawTensor& index, int64_t extent);
Kernels::ValueFault firstValueOutside(ExecContext& ctx, const RawTensor& x, double lo, double hi);
RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index);
void scatterAlong(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                  bool add);
RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index);
void updateRows(const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src, Kernels::RowUpdate how);
RawTensor maskPositions(ExecContext& ctx, const RawTensor& mask, Tag tag);

}  // namespace fucina::backend::reference
