// Element copies between strided tensors of equal shape, converting dtypes on the way.
#pragma once

#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// dst[i] = convert(src[i]) for every logical index; dst and src must have equal extents in the
// same axis order (tags are not consulted). A q8_0 src (any view) is dequantized; a q8_0 dst is
// DTypeMismatch (q8_0 is written whole blocks at a time: quantize, copyBlocks). Large copies run
// on ctx's pool when one is given.
void copyConvert(const internal::RawTensor& src, const internal::RawTensor& dst,
                 const ExecContext* ctx = nullptr);
// Copies the blocks of q8_0 src into q8_0 dst: equal extents in the same axis order, both holding
// whole blocks (blockAxisOf) along the same axis.
void copyBlocks(const internal::RawTensor& src, const internal::RawTensor& dst,
                const ExecContext* ctx = nullptr);
// Writes src's values (q8_0 dequantized) in logical row-major order, converted to f32, to out[0, numel).
void copyToF32(const internal::RawTensor& src, float* out);
// Reads numel f32 values in logical row-major order from in, converting into dst.
void copyFromF32(const float* in, const internal::RawTensor& dst);
// The same from f64 values: exact into f64, and into integers up to 2^53.
void copyFromF64(const double* in, const internal::RawTensor& dst);
// Fills every element of dst with value converted to its dtype (on ctx's pool when given and large).
void fill(const internal::RawTensor& dst, double value, const ExecContext* ctx = nullptr);

}  // namespace fucina::kernels
