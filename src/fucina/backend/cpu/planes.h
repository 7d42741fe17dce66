// The split of independent planes (or rows, or images) over the work pool, shared by the cpu
// convolution and pooling kernels.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fucina/exec/context.h"

namespace fucina::kernels {

// Runs body(first plane, plane count) over chunks of `planes` planes of `plane_size` elements on
// the pool. Planes are independent, so the split never changes a result.
template <class Body>
void forPlaneChunks(ExecContext& ctx, int64_t planes, int64_t plane_size, const Body& body) {
  // Empty planes: nothing to do, however many (2^42 planes of an h=0 input hung in ops_fuzz).
  if (plane_size == 0) return;
  const int64_t grain = std::max<int64_t>(1, (int64_t{16} << 10) / std::max<int64_t>(1, plane_size));
  ctx.parallelFor(planes, grain, [&](int64_t begin, int64_t end) { body(begin, end - begin); });
}

}  // namespace fucina::kernels
