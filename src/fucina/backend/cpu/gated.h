// The gated units over the cpu pool: the forward is one map over the two views, the VJP writes
// both gradients in one strided pass, so neither makes an intermediate tensor.
#pragma once

#include "fucina/backend/kernels.h"

namespace fucina::kernels {

internal::RawTensor gated(ExecContext& ctx, const backend::GateFn& fn, const internal::RawTensor& up,
                          const internal::RawTensor& gate);
void gatedVjp(ExecContext& ctx, const backend::GateFn& fn, const internal::RawTensor& gy,
              const internal::RawTensor& up, const internal::RawTensor& gate, const internal::RawTensor& gup,
              const internal::RawTensor& ggate);

}  // namespace fucina::kernels
