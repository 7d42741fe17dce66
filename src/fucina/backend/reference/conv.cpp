// Convolutions as their definition: every output (or gradient element) one f64 sum over the taps
// that read inside the image, indices worked out per tap, no im2col and no GEMM.
#include <algorithm>

#include "fucina/backend/reference/spatial.h"

namespace fucina::backend::reference {

namespace {

// Where tap (i, j) of output (oy, ox) reads in an image plane: (iy, ix), inside when `in`.
struct TapAt {
  int64_t iy, ix;
  bool in;
};
TapAt tapAt(const Conv2dGeometry& g, int64_t oy, int64_t ox, int64_t i, int64_t j) {
  const int64_t iy = oy * g.stride_h - g.pad_h + i * g.dilation_h;
  const int64_t ix = ox * g.stride_w - g.pad_w + j * g.dilation_w;
  return {iy, ix, iy >= 0 && iy < g.height && ix >= 0 && ix < g.width};
}

// Calls f(x offset, w offset, y offset) for every tap of every output of p that reads inside its
// image: the 7-deep loop nest of a grouped convolution, in p's layout.
template <class F>
void forEachTap(const ConvPlan& p, F f) {
  const Conv2dGeometry& g = p.g;
  const int64_t C = g.channels, Cg = C / p.G, OCg = p.OC / p.G;
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t o = 0; o < p.OC; ++o)
      for (int64_t oy = 0; oy < g.out_h; ++oy)
        for (int64_t ox = 0; ox < g.out_w; ++ox)
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < g.kh; ++i)
              for (int64_t j = 0; j < g.kw; ++j) {
                const TapAt t = tapAt(g, oy, ox, i, j);
                if (!t.in) continue;
                const int64_t xc = o / OCg * Cg + c;
                if (p.channels_last)
                  f(((n * g.height + t.iy) * g.width + t.ix) * C + xc, ((o * g.kh + i) * g.kw + j) * Cg + c,
                    ((n * g.out_h + oy) * g.out_w + ox) * p.OC + o);
                else
                  f(((n * C + xc) * g.height + t.iy) * g.width + t.ix, ((o * Cg + c) * g.kh + i) * g.kw + j,
                    ((n * p.OC + o) * g.out_h + oy) * g.out_w + ox);
              }
}

}  // namespace

RawTensor fromSums(ExecContext& ctx, const Tags& tags, const Extents& shape, const std::vector<double>& sums) {
  RawTensor out = RawTensor::empty(ctx, tags, shape);
  for (size_t k = 0; k < sums.size(); ++k) out.f32()[k] = static_cast<float>(sums[k]);
  return out;
}

RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                 const Extents& shape, const RawTensor& bias, bool relu) {
  std::vector<double> y(static_cast<size_t>(numelOf(shape)), 0.0);
  forEachTap(p, [&](int64_t xo, int64_t wo, int64_t yo) { y[yo] += static_cast<double>(w.f32()[wo]) * x.f32()[xo]; });
  const int64_t P = p.g.out_h * p.g.out_w;
  for (size_t k = 0; k < y.size(); ++k) {
    const int64_t o = p.channels_last ? static_cast<int64_t>(k) % p.OC : static_cast<int64_t>(k) / P % p.OC;
    if (bias.valid()) y[k] += bias.f32()[o];
    if (relu) y[k] = std::max(y[k], 0.0);
  }
  return fromSums(ctx, tags, shape, y);
}

RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                          const Tags& tags, const Extents& shape) {
  std::vector<double> gx(static_cast<size_t>(numelOf(shape)), 0.0);
  forEachTap(p, [&](int64_t xo, int64_t wo, int64_t yo) { gx[xo] += static_cast<double>(w.f32()[wo]) * gy.f32()[yo]; });
  return fromSums(ctx, tags, shape, gx);
}

RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                           const Tags& tags, const Extents& shape) {
  std::vector<double> gw(static_cast<size_t>(numelOf(shape)), 0.0);
  forEachTap(p, [&](int64_t xo, int64_t wo, int64_t yo) { gw[wo] += static_cast<double>(gy.f32()[yo]) * x.f32()[xo]; });
  return fromSums(ctx, tags, shape, gw);
}

// cols [N, C·kh·kw, out_h·out_w] against images [N, C, H, W]: f(image offset, column offset) for
// every entry that reads inside its image.
template <class F>
void forEachColumn(const Conv2dGeometry& g, int64_t images, F f) {
  const int64_t P = g.out_h * g.out_w;
  for (int64_t n = 0; n < images; ++n)
    for (int64_t c = 0; c < g.channels; ++c)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j)
          for (int64_t oy = 0; oy < g.out_h; ++oy)
            for (int64_t ox = 0; ox < g.out_w; ++ox) {
              const TapAt t = tapAt(g, oy, ox, i, j);
              if (!t.in) continue;
              const int64_t row = (c * g.kh + i) * g.kw + j;
              f(((n * g.channels + c) * g.height + t.iy) * g.width + t.ix,
                (n * g.channels * g.kh * g.kw + row) * P + oy * g.out_w + ox);
            }
}

RawTensor im2col(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                 const Extents& shape) {
  RawTensor cols = RawTensor::zeros(ctx, tags, shape);
  const int64_t n = numelOf(Extents(shape.begin(), shape.end() - 2));
  forEachColumn(g, n, [&](int64_t xo, int64_t co) { cols.f32()[co] = images.f32()[xo]; });
  return cols;
}

RawTensor col2im(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                 const Extents& shape) {
  std::vector<double> x(static_cast<size_t>(numelOf(shape)), 0.0);
  const int64_t n = numelOf(Extents(shape.begin(), shape.end() - 3));
  forEachColumn(g, n, [&](int64_t xo, int64_t co) { x[xo] += cols.f32()[co]; });
  return fromSums(ctx, tags, shape, x);
}

}  // namespace fucina::backend::reference
