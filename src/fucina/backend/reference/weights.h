// The reference backend's weight preparations: quantizers (Kernels::quantizeQ8, ternaryQuantize)
// and packed products (Kernels::packRhs, packedProduct).
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis);
RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w);

Kernels::PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last);
RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const Kernels::PackedB& b, const RawTensor& bias,
                        const Tags& tags, const Extents& shape);

}  // namespace fucina::backend::reference
