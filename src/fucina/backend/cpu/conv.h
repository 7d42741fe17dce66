// Convolution and pooling loops on contiguous f32 planes: im2col/col2im (conv2d lowers to GEMM
// through them), max/avg pooling and 2x nearest upsampling, each with its adjoint.
#pragma once

#include <cstdint>

#include "fucina/backend/conv_geometry.h"

namespace fucina::kernels {

// cols[(c·kh + i)·kw + j, oy·out_w + ox] = x[c, oy·sh - ph + i·dh, ox·sw - pw + j·dw] (0 outside).
// x is [channels, height, width], cols [channels·kh·kw, out_h·out_w], both contiguous.
void im2col(const Conv2dGeometry& g, const float* x, float* cols);
// The adjoint of im2col: adds every column entry back into the x element it was read from.
void col2imAdd(const Conv2dGeometry& g, const float* cols, float* x);

// Channels last (Note [Channels last]): x is one image [height, width, channels], cols [out_h·out_w,
// groups·kh·kw·(channels / groups)], each group's taps together: cols[oy·out_w + ox, ((gi·kh + i)·kw
// + j)·Cg + c] = x[oy·sh - ph + i·dh, ox·sw - pw + j·dw, gi·Cg + c] (0 outside).
void im2colChannelsLast(const Conv2dGeometry& g, int64_t groups, const float* x, float* cols);
void col2imChannelsLastAdd(const Conv2dGeometry& g, int64_t groups, const float* cols, float* x);

// Depthwise 1-D convolution of one row (g's height and kh are 1): y[t] = Σ_j w[j]·x[t·stride_w -
// pad_w + j·dilation_w] (0 outside) for the row's own kernel w [kw]; y [out_w] is overwritten. Its
// adjoints add into gx [width] and into gw [kw]. The rows of a depthwise convolution (groups =
// channels = output channels) run on these instead of im2col and one-row GEMMs.
void depthwiseConv1dRow(const Conv2dGeometry& g, const float* x, const float* w, float* y);
void depthwiseConv1dRowInputGrad(const Conv2dGeometry& g, const float* gy, const float* w, float* gx);
void depthwiseConv1dRowWeightGrad(const Conv2dGeometry& g, const float* x, const float* gy, float* gw);

// Pooling of `planes` planes [height, width, lanes] -> [out_h, out_w, lanes] (geometry's channels
// = planes, dilation 1; lanes 1 for plain planes, more for channels last: Note [Channels last]).
// maxPool2dPlanes also writes, per output, the flat in-plane index of the first maximum of its
// window (-inf padding never wins: pad <= kernel / 2 leaves a real element), unless argmax is null
// (no gradient to route: inference).
void maxPool2dPlanes(const Conv2dGeometry& g, int64_t lanes, const float* x, float* y, int64_t* argmax);
void maxPool2dBackward(const Conv2dGeometry& g, int64_t lanes, const float* gy, const int64_t* argmax, float* gx);
void avgPool2dPlanes(const Conv2dGeometry& g, int64_t lanes, const float* x, float* y);
void avgPool2dBackward(const Conv2dGeometry& g, int64_t lanes, const float* gy, float* gx);

// planes x [h, w] -> planes x [2h, 2w] and its adjoint (sums each 2x2 block).
void upsample2xPlanes(int64_t planes, int64_t h, int64_t w, const float* x, float* y);
void upsample2xBackward(int64_t planes, int64_t h, int64_t w, const float* gy, float* gx);

}  // namespace fucina::kernels
