// The reference backend's reductions along one axis: scalar loops on the calling thread over
// a dense copy of the input, running sums and products in f64.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::backend::reference {

Kernels::Along reduceAlong(ExecContext& ctx, Kernels::AlongAxis op, const internal::RawTensor& a, Tag axis);

}  // namespace fucina::backend::reference
