#include "fucina/kernels/conv.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "fucina/kernels/vector_ops.h"

namespace fucina::kernels {

namespace {
// Output columns [lo, hi) whose input column ox + shift lies in [0, width).
std::pair<int64_t, int64_t> unitStrideSpan(int64_t out_w, int64_t shift, int64_t width) {
  const int64_t lo = std::clamp<int64_t>(-shift, 0, out_w);
  const int64_t hi = std::clamp<int64_t>(width - shift, lo, out_w);
  return {lo, hi};
}
// dst[0, n) = src[0, n). The runs of im2col are a row of the output image long (11 floats for
// W2's second convolution): a memmove call per run cost more than the copy (perf, W2: im2col and
// memmove 17% of a step). Fixed-size 16-byte copies compile to single moves; the last one
// overlaps the one before when n is not a multiple of 4.
inline void copyRun(const float* src, int64_t n, float* dst) {
  if (n < 4 || n > 64) {
    std::copy(src, src + n, dst);
    return;
  }
  for (int64_t k = 0; k + 4 <= n; k += 4) std::memcpy(dst + k, src + k, 4 * sizeof(float));
  std::memcpy(dst + n - 4, src + n - 4, 4 * sizeof(float));
}
}  // namespace

int64_t convOutExtent(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  return span / stride + 1;
}

void im2col(const Conv2dGeometry& g, const float* x, float* cols) {
  const int64_t positions = g.out_h * g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    const float* plane = x + c * g.height * g.width;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = cols + ((c * g.kh + i) * g.kw + j) * positions;
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          const int64_t y = oy * g.stride_h - g.pad_h + i * g.dilation_h;
          float* r = row + oy * g.out_w;
          if (y < 0 || y >= g.height) {
            std::memset(r, 0, sizeof(float) * static_cast<size_t>(g.out_w));
            continue;
          }
          if (g.stride_w == 1) {  // the in-bounds columns are one contiguous run of the input row
            const int64_t shift = j * g.dilation_w - g.pad_w;  // xx = ox + shift
            const auto [lo, hi] = unitStrideSpan(g.out_w, shift, g.width);
            std::fill(r, r + lo, 0.0f);
            copyRun(plane + y * g.width + lo + shift, hi - lo, r + lo);
            std::fill(r + hi, r + g.out_w, 0.0f);
            continue;
          }
          for (int64_t ox = 0; ox < g.out_w; ++ox) {
            const int64_t xx = ox * g.stride_w - g.pad_w + j * g.dilation_w;
            r[ox] = (xx < 0 || xx >= g.width) ? 0.0f : plane[y * g.width + xx];
          }
        }
      }
    }
  }
}

void col2imAdd(const Conv2dGeometry& g, const float* cols, float* x) {
  const int64_t positions = g.out_h * g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    float* plane = x + c * g.height * g.width;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = cols + ((c * g.kh + i) * g.kw + j) * positions;
        for (int64_t oy = 0; oy < g.out_h; ++oy) {
          const int64_t y = oy * g.stride_h - g.pad_h + i * g.dilation_h;
          if (y < 0 || y >= g.height) continue;
          const float* r = row + oy * g.out_w;
          if (g.stride_w == 1) {
            const int64_t shift = j * g.dilation_w - g.pad_w;
            const auto [lo, hi] = unitStrideSpan(g.out_w, shift, g.width);
            float* dst = plane + y * g.width + shift;
            for (int64_t ox = lo; ox < hi; ++ox) dst[ox] += r[ox];
            continue;
          }
          for (int64_t ox = 0; ox < g.out_w; ++ox) {
            const int64_t xx = ox * g.stride_w - g.pad_w + j * g.dilation_w;
            if (xx >= 0 && xx < g.width) plane[y * g.width + xx] += r[ox];
          }
        }
      }
    }
  }
}

void maxPool2dPlanes(const Conv2dGeometry& g, const float* x, float* y, int64_t* argmax) {
  // Without padding every window lies inside its plane: the SIMD twin needs no bounds checks.
  // The loop below is the scalar reference it is tested against (vec::setEnabled(false)).
  if (g.pad_h == 0 && g.pad_w == 0 && vec::enabled() && g.height * g.width < (int64_t{1} << 31))
    return vec::maxPoolPlanes(x, g.channels, g.height, g.width, g.out_h, g.out_w, g.kh, g.kw, g.stride_h, g.stride_w,
                              y, argmax);
  for (int64_t p = 0; p < g.channels; ++p) {
    const float* plane = x + p * g.height * g.width;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t at = -1;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t yy = oy * g.stride_h - g.pad_h + i;
          if (yy < 0 || yy >= g.height) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t xx = ox * g.stride_w - g.pad_w + j;
            if (xx < 0 || xx >= g.width) continue;
            const float v = plane[yy * g.width + xx];
            if (at < 0 || v > best || (v != v && best == best)) {  // NaN propagates, as torch
              best = v;
              at = yy * g.width + xx;
            }
          }
        }
        const int64_t o = (p * g.out_h + oy) * g.out_w + ox;
        y[o] = best;
        argmax[o] = at;
      }
    }
  }
}

void maxPool2dBackward(const Conv2dGeometry& g, const float* gy, const int64_t* argmax, float* gx) {
  const int64_t outs = g.out_h * g.out_w;
  for (int64_t p = 0; p < g.channels; ++p) {
    float* plane = gx + p * g.height * g.width;
    for (int64_t o = 0; o < outs; ++o)
      if (argmax[p * outs + o] >= 0) plane[argmax[p * outs + o]] += gy[p * outs + o];
  }
}

void avgPool2dPlanes(const Conv2dGeometry& g, const float* x, float* y) {
  const double inv = 1.0 / static_cast<double>(g.kh * g.kw);
  for (int64_t p = 0; p < g.channels; ++p) {
    const float* plane = x + p * g.height * g.width;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        double s = 0;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t yy = oy * g.stride_h - g.pad_h + i;
          if (yy < 0 || yy >= g.height) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t xx = ox * g.stride_w - g.pad_w + j;
            if (xx >= 0 && xx < g.width) s += plane[yy * g.width + xx];
          }
        }
        y[(p * g.out_h + oy) * g.out_w + ox] = static_cast<float>(s * inv);
      }
    }
  }
}

void avgPool2dBackward(const Conv2dGeometry& g, const float* gy, float* gx) {
  const float inv = 1.0f / static_cast<float>(g.kh * g.kw);
  for (int64_t p = 0; p < g.channels; ++p) {
    float* plane = gx + p * g.height * g.width;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        const float v = gy[(p * g.out_h + oy) * g.out_w + ox] * inv;
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t yy = oy * g.stride_h - g.pad_h + i;
          if (yy < 0 || yy >= g.height) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t xx = ox * g.stride_w - g.pad_w + j;
            if (xx >= 0 && xx < g.width) plane[yy * g.width + xx] += v;
          }
        }
      }
    }
  }
}

void upsample2xPlanes(int64_t planes, int64_t h, int64_t w, const float* x, float* y) {
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < 2 * h; ++i)
      for (int64_t j = 0; j < 2 * w; ++j)
        y[(p * 2 * h + i) * 2 * w + j] = x[(p * h + i / 2) * w + j / 2];
}

void upsample2xBackward(int64_t planes, int64_t h, int64_t w, const float* gy, float* gx) {
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        const float* r0 = gy + (p * 2 * h + 2 * i) * 2 * w + 2 * j;
        const float* r1 = r0 + 2 * w;
        gx[(p * h + i) * w + j] = r0[0] + r0[1] + r1[0] + r1[1];
      }
}

}  // namespace fucina::kernels
