// Pooling and upsampling as their definition: a direct loop over each output's window.
#include <cmath>
#include <limits>

#include "fucina/backend/reference/spatial.h"

namespace fucina::backend::reference {

namespace {

// f(window element's in-plane index) for every element of output (oy, ox)'s window inside the
// plane, row by row.
template <class F>
void forWindow(const Conv2dGeometry& g, int64_t oy, int64_t ox, F f) {
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t yy = oy * g.stride_h - g.pad_h + i, xx = ox * g.stride_w - g.pad_w + j;
      if (yy >= 0 && yy < g.height && xx >= 0 && xx < g.width) f(yy * g.width + xx);
    }
}

Extents withPlane(const RawTensor& t, int64_t h, int64_t w, size_t trailing = 0) {
  Extents shape = t.shape();
  shape[shape.size() - 2 - trailing] = h;
  shape[shape.size() - 1 - trailing] = w;
  return shape;
}

int64_t lanesOf(const Extents& shape, size_t trailing) {
  return numelOf(Extents(shape.end() - static_cast<std::ptrdiff_t>(trailing), shape.end()));
}

}  // namespace

Kernels::Pooled pool2d(ExecContext& ctx, Kernels::Pool kind, const RawTensor& x, const Conv2dGeometry& g, size_t trailing,
                       bool argmax) {
  const Extents shape = withPlane(x, g.out_h, g.out_w, trailing);
  Kernels::Pooled r{RawTensor::empty(ctx, x.tags(), shape), RawTensor()};
  if (kind == Kernels::Pool::max && argmax) r.argmax = RawTensor::empty(ctx, x.tags(), shape, DType::i64);
  const int64_t L = lanesOf(x.shape(), trailing), in_plane = g.height * g.width;
  for (int64_t p = 0, o = 0; p < g.channels; ++p)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        for (int64_t l = 0; l < L; ++l, ++o) {
          // Element k of lane l's plane.
          auto at_k = [&](int64_t k) { return x.f32()[(p * in_plane + k) * L + l]; };
          if (kind == Kernels::Pool::avg) {
            double s = 0;
            forWindow(g, oy, ox, [&](int64_t k) { s += at_k(k); });
            r.y.f32()[o] = static_cast<float>(s / static_cast<double>(g.kh * g.kw));
            continue;
          }
          float best = -std::numeric_limits<float>::infinity();
          int64_t at = -1;
          forWindow(g, oy, ox, [&](int64_t k) {
            // The first maximum; a NaN wins over numbers and stays.
            const float v = at_k(k);
            if (at < 0 || v > best || (std::isnan(v) && !std::isnan(best))) best = v, at = k;
          });
          r.y.f32()[o] = best;
          if (r.argmax.valid()) r.argmax.data<int64_t>()[o] = at;
        }
  return r;
}

RawTensor pool2dVjp(ExecContext& ctx, Kernels::Pool kind, const RawTensor& gy, const RawTensor& argmax,
                    const Conv2dGeometry& g, size_t trailing) {
  const Extents shape = withPlane(gy, g.height, g.width, trailing);
  std::vector<double> gx(static_cast<size_t>(numelOf(shape)), 0.0);
  const int64_t L = lanesOf(gy.shape(), trailing), in_plane = g.height * g.width;
  for (int64_t p = 0, o = 0; p < g.channels; ++p)
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        for (int64_t l = 0; l < L; ++l, ++o) {
          auto add = [&](int64_t k, double v) { gx[static_cast<size_t>((p * in_plane + k) * L + l)] += v; };
          if (kind == Kernels::Pool::max) {
            const int64_t at = argmax.data<int64_t>()[o];
            if (at >= 0) add(at, gy.f32()[o]);
            continue;
          }
          const double share = gy.f32()[o] / static_cast<double>(g.kh * g.kw);
          forWindow(g, oy, ox, [&](int64_t k) { add(k, share); });
        }
  return fromSums(ctx, gy.tags(), shape, gx);
}

RawTensor upsample2x(ExecContext& ctx, const RawTensor& x) {
  const int64_t H = x.shape().end()[-2], W = x.shape().back();
  RawTensor y = RawTensor::empty(ctx, x.tags(), withPlane(x, 2 * H, 2 * W));
  const int64_t planes = H * W == 0 ? 0 : x.numel() / (H * W);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < 2 * H; ++i)
      for (int64_t j = 0; j < 2 * W; ++j) y.f32()[(p * 2 * H + i) * 2 * W + j] = x.f32()[(p * H + i / 2) * W + j / 2];
  return y;
}

RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy) {
  const int64_t H = gy.shape().end()[-2] / 2, W = gy.shape().back() / 2;
  const Extents shape = withPlane(gy, H, W);
  std::vector<double> gx(static_cast<size_t>(numelOf(shape)), 0.0);
  const int64_t planes = H * W == 0 ? 0 : numelOf(shape) / (H * W);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < 2 * H; ++i)
      for (int64_t j = 0; j < 2 * W; ++j) gx[(p * H + i / 2) * W + j / 2] += gy.f32()[(p * 2 * H + i) * 2 * W + j];
  return fromSums(ctx, gy.tags(), shape, gx);
}

}  // namespace fucina::backend::reference
