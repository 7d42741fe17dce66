// The cpu backend's packed right operands (Kernels::packRhs, packedProduct): dense weights as the
// GEMM's f32 panels (Note [Packed B], gemm_simd.h), quantized ones multiplied in their q8_0 blocks.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

using internal::RawTensor;

backend::Kernels::PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last);
RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const backend::Kernels::PackedB& b,
                        const RawTensor& bias, const Tags& tags, const Extents& shape);

}  // namespace fucina::kernels
