// Element copies between strided tensors of equal shape, converting dtypes on the way.
#pragma once

#include "fucina/core/raw_tensor.h"

namespace fucina::kernels {

// dst[i] = convert(src[i]) for every logical index; dst and src must have equal extents in the
// same axis order (tags are not consulted). q8_0 is not an element type and is rejected. Large
// copies run on ctx's pool when one is given.
void copyConvert(const internal::RawTensor& src, const internal::RawTensor& dst,
                 const ExecContext* ctx = nullptr);
// Writes src's values in logical row-major order, converted to f32, to out[0, numel).
void copyToF32(const internal::RawTensor& src, float* out);
// Reads numel f32 values in logical row-major order from in, converting into dst.
void copyFromF32(const float* in, const internal::RawTensor& dst);
// Fills every element of dst with value converted to its dtype (on ctx's pool when given and large).
void fill(const internal::RawTensor& dst, double value, const ExecContext* ctx = nullptr);

}  // namespace fucina::kernels
