// The cpu backend's quantizers (Kernels::quantizeQ8, ternaryQuantize).
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

using internal::RawTensor;

// q8_0 blocks of a along block_axis, the blocks split over ctx's pool.
RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis);
// dotTernarySte's weights: one pass for mean |w| in f64, one writing the ternary values.
RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w);

}  // namespace fucina::kernels
