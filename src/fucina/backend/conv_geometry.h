// The geometry of a convolution or a pooling, shared by the ops that validate it and the backends
// that compute it (backend/kernels.h).
#pragma once

#include <cstdint>

namespace fucina::kernels {

// One image's geometry: `channels` planes of height x width, a kernel of kh x kw taps read with
// stride, zero padding and dilation, giving out_h x out_w output positions.
struct Conv2dGeometry {
  int64_t channels, height, width;
  int64_t kh, kw;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t out_h, out_w;
};

// Output extent of one axis, or a value < 1 when the kernel does not fit the padded input.
int64_t convOutExtent(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);

// A convolution of N images in G groups to OC output channels (Note [Convolution core]): images
// [N, C, H, W], outputs [N, OC, out_h, out_w] and the weight [OC, C/G, kh, kw]; or, channels last
// (Note [Channels last]), images [N, H, W, C], outputs [N, out_h, out_w, OC] and the weight [OC,
// kh, kw, C/G]. A 1-D convolution has height, kh and out_h 1 and is never channels last.
struct ConvPlan {
  Conv2dGeometry g;  // one image
  int64_t N, G, OC;  // images, groups, output channels
  bool channels_last = false;
  bool depthwise() const {
    return !channels_last && g.height == 1 && g.kh == 1 && g.out_h == 1 && G == g.channels && OC == g.channels;
  }
  int64_t positions() const { return g.out_h * g.out_w; }
  int64_t groupDepth() const { return g.channels / G * g.kh * g.kw; }  // columns of W_g
  int64_t colsFloats() const { return g.channels * g.kh * g.kw * positions(); }
  int64_t imageFloats() const { return g.channels * g.height * g.width; }
};

// Winograd pays only when its 16 GEMMs run over enough channels to outweigh the tile transforms:
// prepareConv2dWeights takes it from 64 input channels a group. Measured natively against im2col
// + GEMM (one thread, batches of 3x3 convolutions, bench/conv.cpp and bench/README.md): 0.43x at
// 16 channels, 0.72-0.88x at 32 (the Fashion-MNIST CNN's second convolution), 0.97-1.05x at 64,
// 1.1-1.25x at 128 and 256.
inline constexpr int64_t kWinogradMinChannels = 64;

}  // namespace fucina::kernels
