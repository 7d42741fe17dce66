// channelAffine and its VJP element by element, the channel of each worked out from its index.
#include "fucina/backend/reference/spatial.h"

namespace fucina::backend::reference {

namespace {

// The elements after `channel` in x's (contiguous) layout: element k is in channel k / inner % C.
int64_t innerOf(const RawTensor& x, Tag channel) {
  int64_t inner = 1;
  for (size_t i = x.axis(channel) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  return inner;
}

}  // namespace

RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                        Tag channel) {
  const int64_t C = x.extent(channel), inner = innerOf(x, channel);
  RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
  for (int64_t k = 0; k < x.numel(); ++k) {
    const int64_t c = k / inner % C;
    y.f32()[k] = static_cast<float>(static_cast<double>(x.f32()[k]) * scale.f32()[c] + shift.f32()[c]);
  }
  return y;
}

Kernels::AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale,
                                      const RawTensor& gy, Tag channel, bool input, bool params) {
  const int64_t C = gy.extent(channel), inner = innerOf(gy, channel);
  Kernels::AffineGrads g;
  if (input) g.x = RawTensor::empty(ctx, gy.tags(), gy.shape());
  std::vector<double> gs(static_cast<size_t>(C), 0.0), gb(static_cast<size_t>(C), 0.0);
  for (int64_t k = 0; k < gy.numel(); ++k) {
    const int64_t c = k / inner % C;
    if (input) g.x.f32()[k] = gy.f32()[k] * scale.f32()[c];
    gb[c] += gy.f32()[k];
    if (x.valid()) gs[c] += static_cast<double>(gy.f32()[k]) * x.f32()[k];
  }
  if (params) {
    g.scale = fromSums(ctx, {channel}, {C}, gs);
    g.shift = fromSums(ctx, {channel}, {C}, gb);
  }
  return g;
}

}  // namespace fucina::backend::reference
