/// @file
/// The shape of a grouped-query attention, as the op validated it, for Kernels::attention.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fucina/core/raw_tensor.h"

namespace fucina::backend {

/// q is laid out over {batch..., heads, time, dim} (any order, any strides) with H heads, Tq
/// queries and D dims; k over the same batch axes with Hkv heads, Tk keys and D dims; v as k with
/// Dv dims. Query tile n = (batch row-major in q's batch order, head) reads kv tile kvTile(n).
struct AttentionGeometry {
  Tag heads, time, dim;
  Tags batch;  // q's other axes, in q's order
  int64_t B = 1, H = 0, Hkv = 0, Tq = 0, Tk = 0, D = 0, Dv = 0;
  float scale = 1;
  bool causal = true;

  int64_t group() const { return H / Hkv; }
  // The kv tile (batch, kv head) that query tile n = (batch, head) reads.
  int64_t kvTile(int64_t n) const { return n / H * Hkv + n % H / group(); }
  // Keys query row i may see (end-aligned causal mask).
  int64_t visible(int64_t i) const { return causal ? std::min(Tk, i + Tk - Tq + 1) : Tk; }
  Tags layout() const {  // {batch..., heads, time, dim}
    Tags t = batch;
    t.insert(t.end(), {heads, time, dim});
    return t;
  }
};

}  // namespace fucina::backend
