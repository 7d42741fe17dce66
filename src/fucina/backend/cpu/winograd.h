// Winograd F(2x2, 3x3) convolution (Lavin & Gray 2015) for 3x3 kernels with stride 1 and
// dilation 1: each 2x2 block of outputs is computed from a 4x4 input tile with 16 products per
// (output, input) channel pair instead of 36. The weight transform runs once
// (prepareConv2dWeights); each call transforms input tiles, runs 16 GEMMs over the channels and
// transforms the products back (Note [Prepared convolution], docs/design-notes.md).
#pragma once

#include <cstdint>

#include "fucina/backend/conv_geometry.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

// One convolution's shape: N images [C, H, W] -> [OC, OH, OW] in G channel groups, zero padding
// pad_h / pad_w on both sides (OH = H + 2·pad_h - 2, OW likewise).
struct WinogradShape {
  int64_t N, C, H, W, OC, G, pad_h, pad_w, OH, OW;
};


// The 16 transformed planes of a weight w [OC, Cg = C/G, 3, 3] (contiguous), per group g as the
// right operand [Cg, OC/G] of its GEMMs: u[((ξ·G + g)·Cg + c)·(OC/G) + o'] is element ξ
// (row-major in 4x4) of G·w[g·OC/G + o', c]·Gᵀ, computed in double and rounded once.
void winogradWeights(int64_t OC, int64_t Cg, int64_t groups, const float* w, float* u);

// y [N, OC, OH, OW] = conv(x [N, C, H, W], the weight u was made from) (+ bias[o]) (relu when
// `relu`). Tiles are cut into blocks by the shape alone and the blocks spread over ctx's pool,
// each with its own scratch and single-threaded GEMMs, so results are the same bits on any
// number of threads.
void winogradConv(ExecContext& ctx, const WinogradShape& s, const float* x, const float* u, const float* bias,
                  bool relu, float* y);

}  // namespace fucina::kernels
