// Winograd F(2x2, 3x3) as its formulas, one tile and one output channel at a time in f64: the
// oracle of the cpu backend's blocked, channels-last, GEMM-based version.
#include <algorithm>

#include "fucina/backend/reference/spatial.h"

namespace fucina::backend::reference {

namespace {

constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kBt[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr double kAt[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};

}  // namespace

RawTensor winogradWeights(ExecContext& ctx, const RawTensor& w, int64_t groups) {
  const int64_t OC = w.shape()[0], Cg = w.shape()[1], OCg = OC / groups;
  RawTensor u = RawTensor::empty(ctx, {"xi", "g", "i", "o"}, {16, groups, Cg, OCg});
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t c = 0; c < Cg; ++c)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          double s = 0;  // (G·w·Gᵀ)[i, j]
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) s += kG[i][a] * w.f32()[((o * Cg + c) * 3 + a) * 3 + b] * kG[j][b];
          u.f32()[(((4 * i + j) * groups + o / OCg) * Cg + c) * OCg + o % OCg] = static_cast<float>(s);
        }
  return u;
}

RawTensor winogradConv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& u, const ConvPlan& p,
                         const Tags& tags, const Extents& shape, const RawTensor& bias, bool relu) {
  const Conv2dGeometry& g = p.g;
  const int64_t C = g.channels, Cg = C / p.G, OCg = p.OC / p.G;
  RawTensor y = RawTensor::empty(ctx, tags, shape);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t o = 0; o < p.OC; ++o)
      for (int64_t ty = 0; 2 * ty < g.out_h; ++ty)
        for (int64_t tx = 0; 2 * tx < g.out_w; ++tx) {
          double m[4][4] = {};  // Σ_c U ⊙ Bᵀ·d·B over the group's channels
          for (int64_t c = 0; c < Cg; ++c) {
            const int64_t xc = o / OCg * Cg + c;
            double d[4][4];
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) {
                const int64_t yy = 2 * ty - g.pad_h + i, xx = 2 * tx - g.pad_w + j;
                const bool in = yy >= 0 && yy < g.height && xx >= 0 && xx < g.width;
                d[i][j] = in ? x.f32()[((n * C + xc) * g.height + yy) * g.width + xx] : 0.0;
              }
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) {
                double v = 0;
                for (int a = 0; a < 4; ++a)
                  for (int b = 0; b < 4; ++b) v += kBt[i][a] * d[a][b] * kBt[j][b];
                m[i][j] += u.f32()[(((4 * i + j) * p.G + o / OCg) * Cg + c) * OCg + o % OCg] * v;
              }
          }
          for (int r = 0; r < 2; ++r)
            for (int s = 0; s < 2; ++s) {
              const int64_t oy = 2 * ty + r, ox = 2 * tx + s;
              if (oy >= g.out_h || ox >= g.out_w) continue;  // a tile hanging over the edge
              double v = bias.valid() ? bias.f32()[o] : 0.0;
              for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4; ++b) v += kAt[r][a] * m[a][b] * kAt[s][b];
              y.f32()[((n * p.OC + o) * g.out_h + oy) * g.out_w + ox] = static_cast<float>(relu ? std::max(v, 0.0) : v);
            }
        }
  return y;
}

}  // namespace fucina::backend::reference
