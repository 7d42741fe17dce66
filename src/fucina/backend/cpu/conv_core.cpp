#include "fucina/backend/cpu/conv_core.h"

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "fucina/backend/cpu/conv.h"
#include "fucina/backend/cpu/conv_xnnpack.h"
#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/planes.h"
#include "fucina/backend/cpu/vector_ops.h"
#include "fucina/backend/cpu/winograd.h"
#include "fucina/core/storage.h"
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

// One GEMM operand or result: element (r, c) at data[r·ld + c], or at data[c·ld + r] when `t`
// (stored transposed).
struct Mat {
  const float* data;
  int64_t ld;
  bool t;
  Mat transposed() const { return {data, ld, !t}; }
};

// c (m x n) = a (m x k)·b (k x n), added to c when `accumulate`; a c stored transposed is
// computed as cᵀ = bᵀ·aᵀ.
void product(ExecContext& ctx, bool serial, int64_t m, int64_t n, int64_t k, Mat a, Mat b, Mat c, bool accumulate) {
  float* out = const_cast<float*>(c.data);  // Mat views operands and results alike
  if (c.t) convGemm(ctx, serial, !b.t, !a.t, n, m, k, b.data, b.ld, a.data, a.ld, out, c.ld, accumulate);
  else convGemm(ctx, serial, a.t, b.t, m, n, k, a.data, a.ld, b.data, b.ld, out, c.ld, accumulate);
}

// c (m x n, not transposed) = a·b with a packed by packLhs.
void packedProduct(ExecContext& ctx, bool serial, int64_t m, int64_t n, int64_t k, const float* a, Mat b, Mat c,
                   bool accumulate) {
  float* out = const_cast<float*>(c.data);
  if (serial) kernels::gemmSerialPackedLhs(b.t, m, n, k, a, b.data, b.ld, out, c.ld, accumulate);
  else kernels::gemmPackedLhs(ctx, b.t, m, n, k, a, b.data, b.ld, out, c.ld, accumulate);
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
// the thread count either. Channels last (Note [Channels last]) the same products read the
// columns [P, C·kh·kw] and the outputs [P, OC] transposed in place: one GEMM call each, its
// operands swapped (Mat).

// An image's matrices for group gi in p's layout: its columns [C/G·kh·kw, P] (cols), its outputs
// [OC/G, P] (yn: the image's [OC, P]) and W_g [OC/G, C/G·kh·kw].
struct GroupMats {
  Mat cols, y, w;
};
GroupMats groupMats(const ConvPlan& p, int64_t gi, const float* cols, const float* yn, const float* w) {
  const int64_t P = p.positions(), Kg = p.groupDepth(), OCg = p.OC / p.G;
  const Mat wg{w + gi * OCg * Kg, Kg, false};
  if (p.channels_last) return {{cols + gi * Kg, Kg * p.G, true}, {yn + gi * OCg, p.OC, true}, wg};
  return {{cols + gi * Kg * P, P, false}, {yn + gi * OCg * P, P, false}, wg};
}

void imageToColumns(const ConvPlan& p, const float* image, float* cols) {
  if (p.channels_last) kernels::im2colChannelsLast(p.g, p.G, image, cols);
  else kernels::im2col(p.g, image, cols);
}
void addColumnsToImage(const ConvPlan& p, const float* cols, float* image) {
  if (p.channels_last) kernels::col2imChannelsLastAdd(p.g, p.G, cols, image);
  else kernels::col2imAdd(p.g, cols, image);
}

// y [rows, row_length] += the bias of each value's output channel (its row's when `by_row`, else
// its column's; no bias: null), then relu: conv2d's bias and conv2dRelu's, fused into the forward.
// The choices are made outside the loops, which are then plain enough to vectorize: with them
// inside, the simd wasm build ran an element at a time (18% of W2's step, node --cpu-prof).
void epilogue(float* y, int64_t rows, int64_t row_length, bool by_row, const float* bias, bool relu) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict row = y + r * row_length;
    if (bias != nullptr && !by_row) {
      if (relu) for (int64_t i = 0; i < row_length; ++i) row[i] = std::max(row[i] + bias[i], 0.0f);
      else for (int64_t i = 0; i < row_length; ++i) row[i] += bias[i];
      continue;
    }
    const float b = bias != nullptr ? bias[r] : 0.0f;
    if (relu) for (int64_t i = 0; i < row_length; ++i) row[i] = std::max(row[i] + b, 0.0f);
    else for (int64_t i = 0; i < row_length; ++i) row[i] += b;
  }
}
// The epilogue of one image's outputs yn in p's layout.
void imageEpilogue(const ConvPlan& p, float* yn, const float* bias, bool relu) {
  const int64_t P = p.positions();
  if (p.channels_last) epilogue(yn, P, p.OC, false, bias, relu);
  else epilogue(yn, p.OC, P, true, bias, relu);
}

// Channels first, each group's W_g [OC/G, C/G·kh·kw] (or W_gᵀ, `transposed`) packed once per call
// as the left operand of every image's product (Note [Packed A]), group after group (group gi at
// gi·numel/G), where the GEMM would pack it per image (W_gᵀ always; W_g in wasm, Note [A read in
// place]): for W2's input gradient, 64 packings a step, 2% of the step in wasm.
RawTensor packedGroupWeights(ExecContext& ctx, const ConvPlan& p, const float* w, bool transposed) {
  const int64_t CgK = p.groupDepth(), OCg = p.OC / p.G;
  const int64_t rows = transposed ? CgK : OCg, depth = transposed ? OCg : CgK;
  const int64_t per = kernels::packedLhsFloats(rows, depth);
  RawTensor packed = scratch(ctx, p.G * per);
  for (int64_t gi = 0; gi < p.G; ++gi) kernels::packLhs(transposed, rows, depth, w + gi * OCg * CgK, CgK, packed.f32() + gi * per);
  return packed;
}
const float* groupPanels(const RawTensor& packed, const ConvPlan& p, int64_t gi) {
  return packed.f32() + gi * (packed.numel() / p.G);
}

// y = conv(x, w); with a bias and/or relu applied to each image while it is in cache. With a
// `pooled` sink (not depthwise), y is null: image n's outputs are made in its chunk's scratch and
// handed to pooled(n, outputs) instead (Note [Pooled conv2dRelu]).
template <class Sink = std::nullptr_t>
void convForward(ExecContext& ctx, const ConvPlan& p, const float* x, const float* w, float* y,
                 const float* bias = nullptr, bool relu = false, const Sink& pooled = nullptr) {
  constexpr bool kPooled = !std::is_same_v<Sink, std::nullptr_t>;
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G, Y = p.OC * P;
  const bool plain = bias == nullptr && !relu;
  if (p.depthwise()) {  // rows of one image and channel: the epilogue's rows
    const int64_t W = p.g.width, K = p.g.kw;
    forPlaneChunks(ctx, p.N * p.OC, W + P, [&](int64_t first, int64_t count) {
      for (int64_t r = first; r < first + count; ++r) {
        kernels::depthwiseConv1dRow(p.g, x + r * W, w + r % p.OC * K, y + r * P);
        if (!plain) epilogue(y + r * P, 1, P, true, bias != nullptr ? bias + r % p.OC : nullptr, relu);
      }
    });
    return;
  }
  const RawTensor packed = p.channels_last ? RawTensor() : packedGroupWeights(ctx, p, w, false);
  forEachImage(ctx, p.N, p.colsFloats() + (kPooled ? Y : 0), [&](int64_t, int64_t n, float* cols, bool serial) {
    float* yn = kPooled ? cols + p.colsFloats() : y + n * Y;
    imageToColumns(p, x + n * p.imageFloats(), cols);
    for (int64_t gi = 0; gi < p.G; ++gi) {
      const GroupMats m = groupMats(p, gi, cols, yn, w);
      if (packed.valid()) packedProduct(ctx, serial, OCg, P, CgK, groupPanels(packed, p, gi), m.cols, m.y, false);
      else product(ctx, serial, OCg, P, CgK, m.w, m.cols, m.y, false);
    }
    if (!plain) imageEpilogue(p, yn, bias, relu);
    if constexpr (kPooled) pooled(n, yn);
  });
}

// Image n's input gradient gxn (every element written) = col2im(W_gᵀ · gy_g), from its output
// gradient gyn [OC, P], through dcols; W_gᵀ packed (packedGroupWeights) or, channels last, read.
void imageInputGrad(ExecContext& ctx, bool serial, const ConvPlan& p, const RawTensor& packed, const float* gyn,
                    const float* w, float* dcols, float* gxn) {
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G;
  for (int64_t gi = 0; gi < p.G; ++gi) {
    const GroupMats m = groupMats(p, gi, dcols, gyn, w);
    if (packed.valid()) packedProduct(ctx, serial, CgK, P, OCg, groupPanels(packed, p, gi), m.y, m.cols, false);
    else product(ctx, serial, CgK, P, OCg, m.w.transposed(), m.y, m.cols, false);
  }
  std::fill(gxn, gxn + p.imageFloats(), 0.0f);
  addColumnsToImage(p, dcols, gxn);
}

// gx = col2im(W_gᵀ · gy_g), each image zeroed by the chunk that adds into it, while it is in cache.
void convInputGrad(ExecContext& ctx, const ConvPlan& p, const float* gy, const float* w, float* gx) {
  const int64_t P = p.positions();
  if (p.depthwise()) {
    const int64_t W = p.g.width, K = p.g.kw;
    forPlaneChunks(ctx, p.N * p.OC, W + P, [&](int64_t first, int64_t count) {
      std::fill(gx + first * W, gx + (first + count) * W, 0.0f);
      for (int64_t r = first; r < first + count; ++r)
        kernels::depthwiseConv1dRowInputGrad(p.g, gy + r * P, w + r % p.OC * K, gx + r * W);
    });
    return;
  }
  // Channels last the GEMM reads gy in place and packs W_g, which is already contiguous.
  const RawTensor packed = p.channels_last ? RawTensor() : packedGroupWeights(ctx, p, w, true);
  forEachImage(ctx, p.N, p.colsFloats(), [&](int64_t, int64_t n, float* dcols, bool serial) {
    imageInputGrad(ctx, serial, p, packed, gy + n * p.OC * P, w, dcols, gx + n * p.imageFloats());
  });
}

// The weight gradient's partial sums, one per image chunk, added in chunk order afterwards (the
// chunking above forEachImage: the same bits on any thread count). Channels first each partial
// is W̄_gᵀ = Σ_n im2col(x)_g · gy_gᵀ, transposed back when the chunks are added: the GEMM then
// reads the columns in place and packs gy_g, a fraction of their size, where W̄_g = gy_g · colsᵀ
// would pack every image's columns transposed. Each element is the same sum in the same order
// either way.
bool transposedPartials(const ConvPlan& p) { return !p.channels_last; }

// Image n's term of the weight gradient, added into its chunk's partial acc: its image xn to
// columns (cols), then the products with its output gradient gyn [OC, P].
void imageWeightGrad(ExecContext& ctx, bool serial, const ConvPlan& p, const float* xn, const float* gyn, float* cols,
                     float* acc) {
  const int64_t P = p.positions(), CgK = p.groupDepth(), OCg = p.OC / p.G;
  imageToColumns(p, xn, cols);
  for (int64_t gi = 0; gi < p.G; ++gi) {
    const GroupMats m = groupMats(p, gi, cols, gyn, acc);
    if (transposedPartials(p))
      product(ctx, serial, CgK, OCg, P, m.cols, m.y.transposed(), {acc + gi * OCg * CgK, OCg, false}, true);
    else product(ctx, serial, OCg, CgK, P, m.y, m.cols.transposed(), m.w, true);  // the columns read transposed in place
  }
}

// gw (already zeroed) += the chunks' partials, in chunk order.
void addPartials(const ConvPlan& p, const RawTensor& partial, int64_t chunks, float* gw) {
  const int64_t CgK = p.groupDepth(), OCg = p.OC / p.G, size = p.OC * CgK;
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const float* src = partial.f32() + chunk * size;
    if (!transposedPartials(p)) {
      for (int64_t i = 0; i < size; ++i) gw[i] += src[i];
      continue;
    }
    for (int64_t gi = 0; gi < p.G; ++gi)  // W̄_gᵀ [C/G·kh·kw, OC/G] into W̄_g
      for (int64_t t = 0; t < CgK; ++t)
        for (int64_t oc = 0; oc < OCg; ++oc) gw[(gi * OCg + oc) * CgK + t] += src[gi * OCg * CgK + t * OCg + oc];
  }
}

// gw (every element written) = Σ_n gy_g · im2col(x)_gᵀ.
void convWeightGrad(ExecContext& ctx, const ConvPlan& p, const float* x, const float* gy, float* gw) {
  const int64_t P = p.positions();
  const int64_t chunks = imageChunks(p.N), size = p.OC * p.groupDepth();
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
  const bool direct = chunks <= 1 && !transposedPartials(p);  // one chunk adds into gw itself
  const RawTensor partial = direct ? RawTensor() : RawTensor::zeros(ctx, {"chunk", "w"}, {chunks, size});
  forEachImage(ctx, p.N, p.colsFloats(), [&](int64_t chunk, int64_t n, float* cols, bool serial) {
    imageWeightGrad(ctx, serial, p, x + n * p.imageFloats(), gy + n * p.OC * P, cols,
                    direct ? gw : partial.f32() + chunk * size);
  });
  if (!direct) addPartials(p, partial, chunks, gw);
}

// A row's sum in f64 as sumAxes sums each row of a reduction to one output (vec::sumRow, or the
// scalar loop where SIMD is off), so the bias gradient below has sumTo's bits.
double rowSum(const float* row, int64_t n) {
  if (vec::enabled()) return vec::sumRow(row, n);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += row[i];
  return s;
}

}  // namespace

RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                 const Extents& shape, const RawTensor& bias, bool relu) {
  RawTensor y = RawTensor::empty(ctx, tags, shape);
  const float* b = bias.valid() ? bias.f32() : nullptr;
  // XNNPACK computes the sums only: the bias and relu are added as the GEMM path adds them, so
  // conv2dRelu's fused result stays exactly relu(conv2d + bias).
  if (p.channels_last && xnnpackConv2d(ctx, p, x, w.f32(), y.f32())) {
    if (b != nullptr || relu) forPlaneChunks(ctx, p.N, p.OC * p.positions(), [&](int64_t first, int64_t count) {
      for (int64_t n = first; n < first + count; ++n) imageEpilogue(p, y.f32() + n * p.OC * p.positions(), b, relu);
    });
    return y;
  }
  convForward(ctx, p, x.f32(), w.f32(), y.f32(), b, relu);
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

bool fusedVjp(const ConvPlan& p) {
  // With one output channel or position sumTo's reduction plan merges or splits the rows
  // differently: those few shapes take the composed path, which is its.
  return !p.channels_last && !p.depthwise() && p.OC > 1 && p.positions() > 1;
}

namespace {
// The fused VJPs' pass over the images: gradient(n, scratch) is image n's output gradient [OC, P],
// gy's own or made in `scratch` (`extra` floats past the chunk's columns); from it, while it is in
// cache, the image's bias row sums, weight-gradient term and input gradient.
template <class Gradient>
backend::Kernels::ConvGrads vjpOverImages(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p,
                                          const backend::Kernels::ConvGradLayout& layout, bool bias, int64_t extra,
                                          const Gradient& gradient) {
  const int64_t size = p.OC * p.groupDepth(), chunks = imageChunks(p.N), P = p.positions();
  backend::Kernels::ConvGrads r;
  if (w.valid()) r.x = RawTensor::empty(ctx, layout.x_tags, layout.x_shape);
  if (x.valid()) r.w = RawTensor::zeros(ctx, layout.w_tags, layout.w_shape);
  const RawTensor packed = w.valid() ? packedGroupWeights(ctx, p, w.f32(), true) : RawTensor();
  const RawTensor partial = x.valid() ? RawTensor::zeros(ctx, {"chunk", "w"}, {chunks, size}) : RawTensor();
  const Scratch<double> sums(ctx.account(), bias ? static_cast<size_t>(p.N * p.OC) : 0);
  forEachImage(ctx, p.N, p.colsFloats() + extra, [&](int64_t chunk, int64_t n, float* cols, bool serial) {
    const float* g = gradient(n, cols + p.colsFloats());
    if (bias)
      for (int64_t o = 0; o < p.OC; ++o) sums[static_cast<size_t>(n * p.OC + o)] = rowSum(g + o * P, P);
    if (x.valid()) imageWeightGrad(ctx, serial, p, x.f32() + n * p.imageFloats(), g, cols, partial.f32() + chunk * size);
    if (w.valid()) imageInputGrad(ctx, serial, p, packed, g, w.f32(), cols, r.x.f32() + n * p.imageFloats());
  });
  if (x.valid()) addPartials(p, partial, chunks, r.w.f32());
  if (bias) {
    r.bias = RawTensor::empty(ctx, layout.b_tags, layout.b_shape);
    for (int64_t o = 0; o < p.OC; ++o) {
      double acc = 0;
      for (int64_t n = 0; n < p.N; ++n) acc += sums[static_cast<size_t>(n * p.OC + o)];
      r.bias.f32()[o] = static_cast<float>(acc);
    }
  }
  return r;
}

// out[i] = x[i] > 0 ? g[i] : 0: relu's gradient, its row's SIMD form where SIMD is on.
void reluMask(int64_t n, const float* x, const float* g, float* out) {
  if (vec::enabled()) return vec::run(vec::Op::reluGrad, n, x, 1, g, 1, out);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0 ? g[i] : 0.0f;
}

// The pooling of one image's OC planes.
Conv2dGeometry imagePool(const ConvPlan& p, const Conv2dGeometry& pool) {
  Conv2dGeometry g = pool;
  g.channels = p.OC;
  return g;
}
}  // namespace

// Note [Fused convolution VJP]: channels first, conv2d's VJP is one pass over the images: each
// image's output gradient is masked by relu's y > 0 (conv2dRelu) into scratch, and its bias row
// sums, its weight-gradient term and its input gradient are computed from there while it is in
// cache. Composed, the mask writes a tensor the size of the result and the bias sum and both
// adjoints read it back from memory (W2's first convolution: 5.5 MB each, 7% of its native step).
// Each value is computed as the composed path computes it (relu's select, the same row sums added
// in image order, the same products and chunk partials), so the gradients are its bits.
backend::Kernels::ConvGrads conv2dVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& relu_y, const RawTensor& x,
                                      const RawTensor& w, const ConvPlan& p,
                                      const backend::Kernels::ConvGradLayout& layout, bool bias) {
  const int64_t Y = p.OC * p.positions();
  const bool masked = relu_y.valid();
  return vjpOverImages(ctx, x, w, p, layout, bias, masked ? Y : 0, [&](int64_t n, float* scratch) -> const float* {
    if (!masked) return gy.f32() + n * Y;
    reluMask(Y, relu_y.f32() + n * Y, gy.f32() + n * Y, scratch);
    return scratch;
  });
}

// Note [Pooled conv2dRelu]: conv2dRelu with max pooling (its maxPool option) keeps no full-size
// result. Channels first, each image's outputs are made in its chunk's scratch, biased and
// relu'd there, and pooled from there while they are in cache (the same sums, the same windows
// and first maxima as conv2dRelu then maxPool2d). Its VJP makes each image's output gradient in
// scratch: the window gradients masked by pooled > 0 (relu's mask: a window's maximum is the
// relu'd value its gradient lands on, and every other element gets 0 either way), scattered to
// their argmax into zeros, then the fused VJP's pass. Composed, W2's first convolution writes its
// 5.5 MB result, reads it to pool, zeroes and scatters a 5.5 MB gradient and reads both back to
// mask them: 17% of W2's native step with the epilogue.
bool fusedPool(const ConvPlan& p) { return !p.channels_last && !p.depthwise(); }

backend::Kernels::Pooled conv2dReluPool(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p,
                                        const Tags& tags, const Extents& shape, const RawTensor& bias,
                                        const Conv2dGeometry& pool, bool argmax) {
  Extents pooled_shape = shape;
  pooled_shape.end()[-2] = pool.out_h;
  pooled_shape.end()[-1] = pool.out_w;
  backend::Kernels::Pooled r{RawTensor::empty(ctx, tags, pooled_shape), RawTensor()};
  if (argmax) r.argmax = RawTensor::empty(ctx, tags, pooled_shape, DType::i64);
  const Conv2dGeometry g = imagePool(p, pool);
  const int64_t out = p.OC * pool.out_h * pool.out_w;
  convForward(ctx, p, x.f32(), w.f32(), nullptr, bias.valid() ? bias.f32() : nullptr, true, [&](int64_t n, const float* yn) {
    maxPool2dPlanes(g, 1, yn, r.y.f32() + n * out, argmax ? r.argmax.data<int64_t>() + n * out : nullptr);
  });
  return r;
}

backend::Kernels::ConvGrads conv2dReluPoolVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& pooled,
                                              const RawTensor& argmax, const RawTensor& x, const RawTensor& w,
                                              const ConvPlan& p, const Conv2dGeometry& pool,
                                              const backend::Kernels::ConvGradLayout& layout, bool bias) {
  const int64_t Y = p.OC * p.positions(), out = p.OC * pool.out_h * pool.out_w;
  const Conv2dGeometry g = imagePool(p, pool);
  return vjpOverImages(ctx, x, w, p, layout, bias, Y + out, [&](int64_t n, float* scratch) -> const float* {
    float* windows = scratch + Y;
    reluMask(out, pooled.f32() + n * out, gy.f32() + n * out, windows);
    std::fill(scratch, scratch + Y, 0.0f);
    maxPool2dBackward(g, 1, windows, argmax.data<int64_t>() + n * out, scratch);
    return scratch;
  });
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
