// The gated units element by element over up's logical indices, each operand and gradient read
// or written through its own strides.
#include <array>
#include <vector>

#include "fucina/backend/reference/row_kernels.h"

namespace fucina::backend::reference {

namespace {

// fn(offsets) for every index of shape in row-major order, offsets[k] the element offset of view k.
template <size_t K, class Fn>
void forEachIndex(const Extents& shape, const std::array<const RawTensor*, K>& views, Fn&& fn) {
  const int64_t n = numelOf(shape);
  std::vector<int64_t> index(shape.size(), 0);
  std::array<int64_t, K> off{};
  for (int64_t i = 0; i < n; ++i) {
    fn(off);
    for (size_t d = shape.size(); d-- > 0;) {
      for (size_t k = 0; k < K; ++k) off[k] += views[k]->strides()[d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < K; ++k) off[k] -= views[k]->strides()[d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate) {
  RawTensor out = RawTensor::empty(ctx, up.tags(), up.shape());
  if (up.numel() == 0) return out;
  gates::withGate(fn, [&](const auto& f) {
    forEachIndex<3>(up.shape(), {&up, &gate, &out}, [&](const auto& off) {
      out.f32()[off[2]] = f.u(up.f32()[off[0]]) * f.g(gate.f32()[off[1]]);
    });
  });
  return out;
}

void gatedVjp(ExecContext&, const GateFn& fn, const RawTensor& gy, const RawTensor& up, const RawTensor& gate,
              const RawTensor& gup, const RawTensor& ggate) {
  if (up.numel() == 0) return;
  const RawTensor g = gy.permuted(up.tags());
  gates::withGate(fn, [&](const auto& f) {
    forEachIndex<5>(up.shape(), {&g, &up, &gate, &gup, &ggate}, [&](const auto& off) {
      const float gv = g.f32()[off[0]], uv = up.f32()[off[1]], av = gate.f32()[off[2]];
      gup.f32()[off[3]] = gv * f.du(uv) * f.g(av);
      ggate.f32()[off[4]] = gv * f.u(uv) * f.dg(av);
    });
  });
}

}  // namespace fucina::backend::reference
