#include "fucina/backend/cpu/conv_core.h"

#include <algorithm>

#include "fucina/backend/cpu/conv.h"
#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/planes.h"
#include "fucina/backend/cpu/winograd.h"
#include "fucina/exec/claims.h"
#include "fucina/exec/context.h"

namespace fucina::kernels {

namespace {

// Scratch buffers (im2col columns, transposes) go through the context's allocator like every
// other buffer, so ctx.memory() sees them.
RawTensor scratch(ExecContext& ctx, int64_t n) { return RawTensor::empty(ctx, {"scratch"}, {n}); }

// Images are independent, so conv2d's per-image loops run in chunks on the pool (claimed
// owner-first, Note [Owner-first claims]), each chunk with its own im2col buffer and
// single-threaded GEMMs. The chunking depends on the image count only, never on the thread
// count, so per-chunk partial sums (the weight gradient) add up in one fixed order and results
// are bit-identical on any number of threads, whichever thread runs a chunk. One image keeps
// the threaded GEMM.
constexpr int64_t kImageChunks = 8;

int64_t imageChunks(int64_t images) { return std::min(images, kImageChunks); }

// body(chunk, image, cols, serial) for every image; `serial`: call GEMMs single-threaded.
template <class Body>
void forEachImage(ExecContext& ctx, int64_t images, int64_t cols_floats, const Body& body) {
  const int64_t chunks = imageChunks(images);
  auto run = [&](int64_t chunk) {
    RawTensor cols = scratch(ctx, cols_floats);
    for (int64_t n = chunk * images / chunks; n < (chunk + 1) * images / chunks; ++n)
      body(chunk, n, cols.f32(), chunks > 1);
  };
  if (chunks == 1) return run(0);
  claimedFor(ctx, chunks, chunks, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) run(chunk);
  });
}

void convGemm(ExecContext& ctx, bool serial, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
              const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  if (serial) kernels::gemmSerial(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  else kernels::gemm(ctx, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

// Note [Convolution core]: every GEMM convolution runs on three loops over N images [C, H, W]
// (a 1-D image has height 1) that share one geometry, with W [OC, C/G · kh·kw] per group g and
// P = out_h·out_w output positions:
//   convForward     y_g = W_g · im2col(x)_g              y [N, OC, P]
//   convInputGrad   x̄   = col2im(W_gᵀ · ȳ_g)             the adjoint of convForward in x
//   convWeightGrad  W̄_g = Σ_n ȳ_g · im2col(x)_gᵀ         its adjoint in W
// A convolution's VJP is the other two. A transposed convolution is the adjoint of a convolution:
// its forward is convInputGrad, its input gradient convForward, and its weight gradient
// convWeightGrad with the roles of input and output swapped. A 1-D depthwise convolution (groups
// = channels = output channels) runs the same three as row loops (kernels::depthwiseConv1dRow...)
// instead of im2col and one-row GEMMs, each row on one thread, so its results do not depend on
// the thread count either.

// y = conv(x, w); with a bias (per output channel) and/or relu, applied to each image while it is
// in cache (conv2dRelu's fused inference path).
void convForward(ExecContext& ctx, const ConvPlan& p, const float* x, const float* w, float* y,
                 const float* bias = nullptr, bool relu = false) {
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G;
  auto epilogue = [&](float* row, int64_t o) {
    const float b = bias != nullptr ? bias[o] : 0.0f;
    for (int64_t i = 0; i < P; ++i) row[i] = relu ? std::max(row[i] + b, 0.0f) : row[i] + b;
  };
  const bool plain = bias == nullptr && !relu;
  if (p.depthwise()) {
    const int64_t W = p.g.width, K = p.g.kw;
    forPlaneChunks(ctx, p.N * p.OC, W + P, [&](int64_t first, int64_t count) {
      for (int64_t r = first; r < first + count; ++r) {
        kernels::depthwiseConv1dRow(p.g, x + r * W, w + r % p.OC * K, y + r * P);
        if (!plain) epilogue(y + r * P, r % p.OC);
      }
    });
    return;
  }
  forEachImage(ctx, p.N, p.colsFloats(), [&](int64_t, int64_t n, float* cols, bool serial) {
    kernels::im2col(p.g, x + n * p.imageFloats(), cols);
    float* yn = y + n * p.OC * P;
    for (int64_t gi = 0; gi < p.G; ++gi)
      convGemm(ctx, serial, false, false, OCg, P, CgK, w + gi * OCg * CgK, CgK, cols + gi * CgK * P, P,
               yn + gi * OCg * P, P, false);
    for (int64_t o = 0; o < p.OC && !plain; ++o) epilogue(yn + o * P, o);
  });
}

// gx = col2im(W_gᵀ · gy_g), each image zeroed by the chunk that adds into it, while it is in cache.
void convInputGrad(ExecContext& ctx, const ConvPlan& p, const float* gy, const float* w, float* gx) {
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G;
  if (p.depthwise()) {
    const int64_t W = p.g.width, K = p.g.kw;
    forPlaneChunks(ctx, p.N * p.OC, W + P, [&](int64_t first, int64_t count) {
      std::fill(gx + first * W, gx + (first + count) * W, 0.0f);
      for (int64_t r = first; r < first + count; ++r)
        kernels::depthwiseConv1dRowInputGrad(p.g, gy + r * P, w + r % p.OC * K, gx + r * W);
    });
    return;
  }
  forEachImage(ctx, p.N, p.colsFloats(), [&](int64_t, int64_t n, float* dcols, bool serial) {
    for (int64_t gi = 0; gi < p.G; ++gi)  // W_g is [OCg, CgK]: read transposed in place
      convGemm(ctx, serial, true, false, CgK, P, OCg, w + gi * OCg * CgK, CgK, gy + (n * p.OC + gi * OCg) * P, P,
               dcols + gi * CgK * P, P, false);
    float* gxn = gx + n * p.imageFloats();
    std::fill(gxn, gxn + p.imageFloats(), 0.0f);
    kernels::col2imAdd(p.g, dcols, gxn);
  });
}

// gw (every element written) = Σ_n gy_g · im2col(x)_gᵀ: one partial sum per image chunk, added
// in chunk order afterwards (the chunking above forEachImage: the same bits on any thread count).
void convWeightGrad(ExecContext& ctx, const ConvPlan& p, const float* x, const float* gy, float* gw) {
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G;
  const int64_t chunks = imageChunks(p.N), size = p.OC * CgK;
  std::fill(gw, gw + size, 0.0f);
  if (p.depthwise()) {  // per channel, the images in order
    const int64_t W = p.g.width, K = p.g.kw, C = p.OC;
    forPlaneChunks(ctx, C, p.N * (W + P), [&](int64_t first, int64_t count) {
      for (int64_t c = first; c < first + count; ++c)
        for (int64_t n = 0; n < p.N; ++n)
          kernels::depthwiseConv1dRowWeightGrad(p.g, x + (n * C + c) * W, gy + (n * C + c) * P, gw + c * K);
    });
    return;
  }
  RawTensor partial = chunks <= 1 ? RawTensor() : RawTensor::zeros(ctx, {"chunk", "w"}, {chunks, size});
  forEachImage(ctx, p.N, p.colsFloats(), [&](int64_t chunk, int64_t n, float* cols, bool serial) {
    float* acc = chunks == 1 ? gw : partial.f32() + chunk * size;
    kernels::im2col(p.g, x + n * p.imageFloats(), cols);
    for (int64_t gi = 0; gi < p.G; ++gi)  // cols_g is [CgK, P]: read transposed in place
      convGemm(ctx, serial, false, true, OCg, CgK, P, gy + (n * p.OC + gi * OCg) * P, P, cols + gi * CgK * P, P,
               acc + gi * OCg * CgK, CgK, true);
  });
  for (int64_t chunk = 0; chunks > 1 && chunk < chunks; ++chunk) {
    const float* src = partial.f32() + chunk * size;
    for (int64_t i = 0; i < size; ++i) gw[i] += src[i];
  }
}

}  // namespace

RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                 const Extents& shape, const RawTensor& bias, bool relu) {
  RawTensor y = RawTensor::empty(ctx, tags, shape);
  convForward(ctx, p, x.f32(), w.f32(), y.f32(), bias.valid() ? bias.f32() : nullptr, relu);
  return y;
}

RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                          const Tags& tags, const Extents& shape) {
  RawTensor gx = RawTensor::empty(ctx, tags, shape);
  convInputGrad(ctx, p, gy.f32(), w.f32(), gx.f32());
  return gx;
}

RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                           const Tags& tags, const Extents& shape) {
  RawTensor gw = RawTensor::empty(ctx, tags, shape);
  convWeightGrad(ctx, p, x.f32(), gy.f32(), gw.f32());
  return gw;
}

RawTensor winogradWeights(ExecContext& ctx, const RawTensor& w, int64_t groups) {
  const int64_t OC = w.shape()[0], Cg = w.shape()[1];
  RawTensor u = RawTensor::empty(ctx, {"xi", "g", "i", "o"}, {16, groups, Cg, OC / groups});
  winogradWeights(OC, Cg, groups, w.f32(), u.f32());
  return u;
}

RawTensor winogradConv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& u, const ConvPlan& p,
                         const Tags& tags, const Extents& shape, const RawTensor& bias, bool relu) {
  RawTensor y = RawTensor::empty(ctx, tags, shape);
  const WinogradShape s{p.N, p.g.channels, p.g.height, p.g.width, p.OC, p.G, p.g.pad_h, p.g.pad_w, p.g.out_h, p.g.out_w};
  winogradConv(ctx, s, x.f32(), u.f32(), bias.valid() ? bias.f32() : nullptr, relu, y.f32());
  return y;
}

}  // namespace fucina::kernels
