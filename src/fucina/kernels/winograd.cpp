#include "fucina/kernels/winograd.h"

#include <algorithm>

#include "fucina/core/raw_tensor.h"
#include "fucina/kernels/gemm.h"

namespace fucina::kernels {

namespace {

// The tile grid: T = tiles_h·tiles_w tiles per image, tile (ty, tx) reading input rows
// 2·ty - pad_h .. +3 and columns 2·tx - pad_w .. +3 and writing outputs 2·ty.., 2·tx.. (the last
// row or column of tiles may hang over the output's edge when OH or OW is odd: not written).
struct Grid {
  int64_t tiles_h, tiles_w, per_image, total;
  explicit Grid(const WinogradShape& s)
      : tiles_h((s.OH + 1) / 2), tiles_w((s.OW + 1) / 2), per_image(tiles_h * tiles_w), total(s.N * per_image) {}
};

// Walks tiles t0, t0 + 1, ... in order (image-major, then rows, then columns) without dividing.
struct TileCursor {
  int64_t n, ty, tx;
  const Grid* grid;
  TileCursor(const Grid& g, int64_t t) : grid(&g) {
    n = t / g.per_image;
    const int64_t r = t % g.per_image;
    ty = r / g.tiles_w;
    tx = r % g.tiles_w;
  }
  void next() {
    if (++tx < grid->tiles_w) return;
    tx = 0;
    if (++ty < grid->tiles_h) return;
    ty = 0;
    ++n;
  }
};

// v[(ξ·C + c)·count + k] = element ξ of Bᵀ·d·B for the 4x4 input tile d of tile t0 + k, channel c.
void inputTiles(const WinogradShape& s, const Grid& grid, const float* x, int64_t t0, int64_t count, float* v) {
  const int64_t plane = s.H * s.W, stride = s.C * count;
  for (int64_t c = 0; c < s.C; ++c) {
    TileCursor at(grid, t0);
    for (int64_t k = 0; k < count; ++k, at.next()) {
      const float* p = x + (at.n * s.C + c) * plane;
      const int64_t y0 = 2 * at.ty - s.pad_h, x0 = 2 * at.tx - s.pad_w;
      float d[4][4];
      if (y0 >= 0 && y0 + 4 <= s.H && x0 >= 0 && x0 + 4 <= s.W) {
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) d[i][j] = p[(y0 + i) * s.W + x0 + j];
      } else {  // a tile over the padding: zeros outside the plane
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) {
            const int64_t yy = y0 + i, xx = x0 + j;
            d[i][j] = yy >= 0 && yy < s.H && xx >= 0 && xx < s.W ? p[yy * s.W + xx] : 0.0f;
          }
      }
      // Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], on the rows then on the columns.
      float t[4][4];
      for (int j = 0; j < 4; ++j) {
        t[0][j] = d[0][j] - d[2][j];
        t[1][j] = d[1][j] + d[2][j];
        t[2][j] = d[2][j] - d[1][j];
        t[3][j] = d[1][j] - d[3][j];
      }
      float* out = v + c * count + k;
      for (int i = 0; i < 4; ++i) {
        out[(4 * i + 0) * stride] = t[i][0] - t[i][2];
        out[(4 * i + 1) * stride] = t[i][1] + t[i][2];
        out[(4 * i + 2) * stride] = t[i][2] - t[i][1];
        out[(4 * i + 3) * stride] = t[i][1] - t[i][3];
      }
    }
  }
}

// y's 2x2 outputs of tiles t0 .. t0 + count - 1 from m[(ξ·OC + o)·count + k]: Aᵀ·M·A, with
// Aᵀ = [1 1 1 0; 0 1 -1 -1], then the bias and the relu.
void outputTiles(const WinogradShape& s, const Grid& grid, const float* m, int64_t t0, int64_t count,
                 const float* bias, bool relu, float* y) {
  const int64_t plane = s.OH * s.OW, stride = s.OC * count;
  for (int64_t o = 0; o < s.OC; ++o) {
    const float b = bias != nullptr ? bias[o] : 0.0f;
    TileCursor at(grid, t0);
    for (int64_t k = 0; k < count; ++k, at.next()) {
      const float* in = m + o * count + k;
      float r[4][2];
      for (int i = 0; i < 4; ++i) {
        const float m0 = in[(4 * i + 0) * stride], m1 = in[(4 * i + 1) * stride];
        const float m2 = in[(4 * i + 2) * stride], m3 = in[(4 * i + 3) * stride];
        r[i][0] = m0 + m1 + m2;
        r[i][1] = m1 - m2 - m3;
      }
      float* out = y + (at.n * s.OC + o) * plane;
      const int64_t oy = 2 * at.ty, ox = 2 * at.tx;
      for (int j = 0; j < 2; ++j) {
        if (ox + j >= s.OW) break;
        const float top = r[0][j] + r[1][j] + r[2][j] + b;
        const float bottom = r[1][j] - r[2][j] - r[3][j] + b;
        out[oy * s.OW + ox + j] = relu ? std::max(top, 0.0f) : top;
        if (oy + 1 < s.OH) out[(oy + 1) * s.OW + ox + j] = relu ? std::max(bottom, 0.0f) : bottom;
      }
    }
  }
}

// Tiles per block: the block's transformed input and products (16·(C + OC) floats a tile) in
// about 512 KiB, 8 to 256 tiles. A function of the shape only (bit-identical on any thread count).
int64_t tilesPerBlock(const WinogradShape& s) {
  return std::clamp<int64_t>((int64_t{128} << 10) / (16 * (s.C + s.OC)), 8, 256);
}

}  // namespace

void winogradWeights(int64_t OC, int64_t Cg, const float* w, float* u) {
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]: U = G·g·Gᵀ.
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t c = 0; c < Cg; ++c) {
      const float* g = w + (o * Cg + c) * 9;
      double t[4][3];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          u[((4 * i + j) * OC + o) * Cg + c] = static_cast<float>(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
    }
}

void winogradConv(ExecContext& ctx, const WinogradShape& s, const float* x, const float* u, const float* bias,
                  bool relu, float* y) {
  const Grid grid(s);
  if (grid.total == 0 || s.OC == 0) return;
  const int64_t per_block = tilesPerBlock(s), blocks = (grid.total + per_block - 1) / per_block;
  const int64_t Cg = s.C / s.G, OCg = s.OC / s.G;
  ctx.parallelFor(blocks, 1, [&](int64_t first, int64_t last) {
    // Scratch from the context's allocator (ctx.memory() sees it), once per range of blocks.
    using internal::RawTensor;
    RawTensor v = RawTensor::empty(ctx, {"scratch"}, {16 * s.C * per_block});
    RawTensor m = RawTensor::empty(ctx, {"scratch"}, {16 * s.OC * per_block});
    for (int64_t b = first; b < last; ++b) {
      const int64_t t0 = b * per_block, count = std::min(per_block, grid.total - t0);
      inputTiles(s, grid, x, t0, count, v.f32());
      if (Cg == 0) std::fill(m.f32(), m.f32() + 16 * s.OC * count, 0.0f);  // no input channels: a sum of nothing
      for (int64_t xi = 0; xi < 16 && Cg > 0; ++xi)  // M_ξ,g [OCg, count] = U_ξ,g [OCg, Cg] · V_ξ,g [Cg, count]
        for (int64_t g = 0; g < s.G; ++g)
          gemmSerial(false, false, OCg, count, Cg, u + (xi * s.OC + g * OCg) * Cg, Cg,
                     v.f32() + (xi * s.C + g * Cg) * count, count, m.f32() + (xi * s.OC + g * OCg) * count, count,
                     false);
      outputTiles(s, grid, m.f32(), t0, count, bias, relu, y);
    }
  });
}

}  // namespace fucina::kernels
