// Winograd F(2x2, 3x3) (winograd.h). The tile transforms are plain loops over channels that
// the compiler vectorizes; this file is compiled once per x86 target (foreach_target.h, as
// vector_ops.cpp) and dispatched at run time, so those loops use AVX2 or AVX-512 where the CPU has
// them (the library's baseline is SSE2: compiled for it alone, the transforms took 55% of a call
// and the path lost to im2col + GEMM), and once for SIMD128 in wasm.
#ifndef FUCINA_KERNELS_WINOGRAD_SHARED
#define FUCINA_KERNELS_WINOGRAD_SHARED

#include <algorithm>
#include <limits>

#include "fucina/core/raw_tensor.h"
#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/winograd.h"

namespace fucina::kernels::winograd {

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

}  // namespace fucina::kernels::winograd

#endif  // FUCINA_KERNELS_WINOGRAD_SHARED

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fucina/backend/cpu/winograd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace fucina::kernels::winograd {
namespace HWY_NAMESPACE {

// Note [Channels innermost]: every step works on whole rows of channels. The images are first
// copied channels-last ([N, H, W, C]), the transformed tiles are stored [ξ][tile][c] and the
// products [ξ][tile][o], so the transforms are loops over c or o that the compiler vectorizes,
// and each GEMM reads its left operand (tiles x channels) in place. With tiles innermost
// instead (as U·V with V [ξ][c][tile]), a tile row of the CNN's 13x13 images is 6 tiles long:
// the transforms were 50% of a call and the path 1.7x slower than im2col + GEMM.

// v[(ξ·count + k)·C + c] = element ξ of Bᵀ·d·B for tile t0 + k, channel c, from xt [N, H, W, C];
// Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
void InputTiles(const WinogradShape& s, const Grid& grid, const float* xt, const float* zeros, int64_t t0,
                int64_t count, float* v) {
  const int64_t C = s.C, stride = count * C;
  TileCursor at(grid, t0);
  for (int64_t k = 0; k < count; ++k, at.next()) {
    const float* d[4][4];  // each tap's channels, or zeros in the padding
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        const int64_t yy = 2 * at.ty - s.pad_h + i, xx = 2 * at.tx - s.pad_w + j;
        d[i][j] = yy >= 0 && yy < s.H && xx >= 0 && xx < s.W ? xt + ((at.n * s.H + yy) * s.W + xx) * C : zeros;
      }
    float* out = v + k * C;
    for (int j = 0; j < 4; ++j) {  // t = Bᵀ·d, column j, kept in the output rows of column j
      float* __restrict t0r = out + (0 + j) * stride;
      float* __restrict t1r = out + (4 + j) * stride;
      float* __restrict t2r = out + (8 + j) * stride;
      float* __restrict t3r = out + (12 + j) * stride;
      const float *__restrict d0 = d[0][j], *__restrict d1 = d[1][j], *__restrict d2 = d[2][j], *__restrict d3 = d[3][j];
      for (int64_t c = 0; c < C; ++c) {
        const float a = d0[c], b = d1[c], e = d2[c], f = d3[c];
        t0r[c] = a - e;
        t1r[c] = b + e;
        t2r[c] = e - b;
        t3r[c] = b - f;
      }
    }
    for (int i = 0; i < 4; ++i) {  // then ·B along each row i, in place
      float* __restrict r0 = out + (4 * i + 0) * stride;
      float* __restrict r1 = out + (4 * i + 1) * stride;
      float* __restrict r2 = out + (4 * i + 2) * stride;
      float* __restrict r3 = out + (4 * i + 3) * stride;
      for (int64_t c = 0; c < C; ++c) {
        const float a = r0[c], b = r1[c], e = r2[c], f = r3[c];
        r0[c] = a - e;
        r1[c] = b + e;
        r2[c] = e - b;
        r3[c] = b - f;
      }
    }
  }
}

// y's 2x2 outputs of tiles t0 .. t0 + count - 1 from m[(ξ·count + k)·OC + o]: Aᵀ·M·A with
// Aᵀ = [1 1 1 0; 0 1 -1 -1], plus the bias (OC floats, zeros for none) and the relu, over all output channels at once
// (row buffers of OC floats), then stored into y [N, OC, OH, OW] (a last row or column of
// tiles may hang over the edge: not stored).
void OutputTiles(const WinogradShape& s, const Grid& grid, const float* m, const float* bias, bool relu, int64_t t0,
                 int64_t count, float* scratch, float* y) {
  const int64_t OC = s.OC, stride = count * OC, plane = s.OH * s.OW;
  const float floor = relu ? 0.0f : -std::numeric_limits<float>::infinity();  // max(v, floor): relu or nothing
  float* __restrict o00 = scratch;  // the tile's four outputs (row, column), OC floats each
  float* __restrict o01 = scratch + OC;
  float* __restrict o10 = scratch + 2 * OC;
  float* __restrict o11 = scratch + 3 * OC;
  const float* __restrict bo = bias;
  TileCursor at(grid, t0);
  for (int64_t k = 0; k < count; ++k, at.next()) {
    const float* __restrict in = m + k * OC;
    for (int64_t o = 0; o < OC; ++o) {
      float a[4], b[4];  // M·A: columns 0 and 1 of each row i
      for (int i = 0; i < 4; ++i) {
        const float m0 = in[(4 * i + 0) * stride + o], m1 = in[(4 * i + 1) * stride + o];
        const float m2 = in[(4 * i + 2) * stride + o], m3 = in[(4 * i + 3) * stride + o];
        a[i] = m0 + m1 + m2;
        b[i] = m1 - m2 - m3;
      }
      o00[o] = std::max(a[0] + a[1] + a[2] + bo[o], floor);
      o01[o] = std::max(b[0] + b[1] + b[2] + bo[o], floor);
      o10[o] = std::max(a[1] - a[2] - a[3] + bo[o], floor);
      o11[o] = std::max(b[1] - b[2] - b[3] + bo[o], floor);
    }
    const int64_t oy = 2 * at.ty, ox = 2 * at.tx;
    float* base = y + at.n * OC * plane + oy * s.OW + ox;
    const bool right = ox + 1 < s.OW, below = oy + 1 < s.OH;
    for (int64_t o = 0; o < OC; ++o) {
      float* dst = base + o * plane;
      dst[0] = o00[o];
      if (right) dst[1] = o01[o];
      if (below) dst[s.OW] = o10[o];
      if (right && below) dst[s.OW + 1] = o11[o];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace fucina::kernels::winograd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fucina::kernels::winograd {

HWY_EXPORT(InputTiles);
HWY_EXPORT(OutputTiles);

namespace {
// Tiles per block: the block's transformed input and products (16·(C + OC) floats a tile) in
// about 512 KiB, 8 to 256 tiles. A function of the shape only (bit-identical on any thread count).
int64_t tilesPerBlock(const WinogradShape& s) {
  return std::clamp<int64_t>((int64_t{128} << 10) / (16 * (s.C + s.OC)), 8, 256);
}

}  // namespace

}  // namespace fucina::kernels::winograd

namespace fucina::kernels {

using winograd::Grid;

void winogradWeights(int64_t OC, int64_t Cg, int64_t groups, const float* w, float* u) {
  const int64_t OCg = OC / groups;
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]: U = G·g·Gᵀ.
  static constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t c = 0; c < Cg; ++c) {
      const float* g = w + (o * Cg + c) * 9;
      double t[4][3];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      const int64_t g_index = o / OCg, og = o % OCg;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          u[(((4 * i + j) * groups + g_index) * Cg + c) * OCg + og] =
              static_cast<float>(t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2]);
    }
}

void winogradConv(ExecContext& ctx, const WinogradShape& s, const float* x, const float* u, const float* bias,
                  bool relu, float* y) {
  using namespace winograd;
  const Grid grid(s);
  if (grid.total == 0 || s.OC == 0) return;
  using internal::RawTensor;
  const int64_t per_block = tilesPerBlock(s), blocks = (grid.total + per_block - 1) / per_block;
  const int64_t Cg = s.C / s.G, OCg = s.OC / s.G, plane = s.H * s.W;
  // The images channels-last (Note [Channels innermost]), one image per task.
  RawTensor xt = RawTensor::empty(ctx, {"scratch"}, {s.N * plane * s.C});
  ctx.parallelFor(s.N, 1, [&](int64_t first, int64_t last) {
    for (int64_t n = first; n < last; ++n)
      for (int64_t c = 0; c < s.C; ++c) {
        const float* src = x + (n * s.C + c) * plane;
        float* dst = xt.f32() + n * plane * s.C + c;
        for (int64_t p = 0; p < plane; ++p) dst[p * s.C] = src[p];
      }
  });
  ctx.parallelFor(blocks, 1, [&](int64_t first, int64_t last) {
    // Scratch from the context's allocator (ctx.memory() sees it), once per range of blocks:
    // the transformed tiles, the products, a row of zero channels (the padding's taps) and the
    // output transform's 12 rows of OC floats.
    RawTensor v = RawTensor::empty(ctx, {"scratch"}, {16 * s.C * per_block});
    RawTensor m = RawTensor::empty(ctx, {"scratch"}, {16 * s.OC * per_block});
    RawTensor zeros = RawTensor::zeros(ctx, {"scratch"}, {std::max(s.C, s.OC)});
    RawTensor rows = RawTensor::empty(ctx, {"scratch"}, {12 * s.OC});
    for (int64_t b = first; b < last; ++b) {
      const int64_t t0 = b * per_block, count = std::min(per_block, grid.total - t0);
      HWY_DYNAMIC_DISPATCH(InputTiles)(s, grid, xt.f32(), zeros.f32(), t0, count, v.f32());
      if (Cg == 0) std::fill(m.f32(), m.f32() + 16 * s.OC * count, 0.0f);  // no input channels: a sum of nothing
      for (int64_t xi = 0; xi < 16 && Cg > 0; ++xi)  // Mᵀ_ξ,g [count, OCg] = Vᵀ_ξ,g [count, Cg] · Uᵀ_ξ,g [Cg, OCg]
        for (int64_t g = 0; g < s.G; ++g)
          gemmSerial(false, false, count, OCg, Cg, v.f32() + xi * count * s.C + g * Cg, s.C, u + (xi * s.G + g) * Cg * OCg,
                     OCg, m.f32() + xi * count * s.OC + g * OCg, s.OC, false);
      HWY_DYNAMIC_DISPATCH(OutputTiles)(s, grid, m.f32(), bias != nullptr ? bias : zeros.f32(), relu, t0, count, rows.f32(), y);
    }
  });
}

}  // namespace fucina::kernels
#endif  // HWY_ONCE
