// The optimizer updates of the cpu backend (backend/kernels.h), split over the pool: elements are
// independent, so any split gives the same bits.
#pragma once

#include "fucina/backend/optim_steps.h"
#include "fucina/core/raw_tensor.h"

namespace fucina {
class ExecContext;
}

namespace fucina::kernels {

void sgdUpdate(ExecContext& ctx, const backend::SgdStep& s, const internal::RawTensor& p, const internal::RawTensor& g,
               const internal::RawTensor& buf);
void adamUpdate(ExecContext& ctx, const backend::AdamStep& s, const internal::RawTensor& p,
                const internal::RawTensor& g, const internal::RawTensor& m, const internal::RawTensor& v);
double sumSquares(const internal::RawTensor& x);

}  // namespace fucina::kernels
