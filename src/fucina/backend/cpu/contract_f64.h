// Tensor contraction by named axes in double precision: the f64 path of dot/einsum/matmul
// (Note [Dtype rules]). A plain loop — f64 is for accuracy, not speed.
#pragma once

#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// Contracts a and b over `contracted` with the axis semantics of kernels::contract (gemm.h):
// axes both have that are not contracted are batch axes; the result has a's remaining axes in
// a's order, then b's remaining axes that a lacks, in b's order. Any strides and any element
// dtype (read as double); products are accumulated in double and the result is a contiguous f64
// tensor. ShapeMismatch when a contracted or batch axis differs in extent (or is missing).
internal::RawTensor contractF64(ExecContext& ctx, const internal::RawTensor& a,
                                const internal::RawTensor& b, const Tags& contracted);

}  // namespace fucina::kernels
