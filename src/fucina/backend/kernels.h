/// @file
/// The kernel primitives: the one boundary through which ops compute (Note [Backends]).
///
/// Note [Backends]: an op does shape logic, dtype rules and its VJP record, and computes every
/// value through the primitives of `Kernels`, implemented once per backend: `cpu/` (SIMD, the
/// work pool, the GEMM and convolution kernels) and `reference/` (scalar loops on the calling
/// thread, the oracle) on the host, and `webgpu/` (WGSL kernels on the WebGPU device, the rest
/// UnsupportedOnDevice). A context's ExecOptions::backend picks one; `kernelsOf(ctx)` returns it.
/// Elementwise ops are data: each is one row of backend/elementwise_table.h holding its scalar
/// form and its cpu SIMD form, named by an ElemOp, so a new elementwise op is one row and a new
/// backend implements `map` once for every row. A primitive takes and returns tensors, never a
/// raw pointer, so a backend whose buffers are not host memory can implement it. Every backend
/// passes tests/cpp/backend_tests.cpp, which runs the ops on it against the cpu backend.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "fucina/backend/attention_geometry.h"
#include "fucina/backend/conv_geometry.h"
#include "fucina/backend/optim_steps.h"
#include "fucina/backend/elementwise_table.h"
#include "fucina/backend/gates.h"
#include "fucina/core/device.h"
#include "fucina/core/raw_tensor.h"

namespace fucina {
class ExecContext;
}

namespace fucina::backend {

using internal::RawTensor;
using Inputs = std::span<const RawTensor* const>;

class Kernels {
 public:
  virtual ~Kernels() = default;
  virtual Backend backend() const = 0;

  /// out[i] = form of row `op` over ins[k][i] (f32 in, f32 out). Each input is aligned to (tags,
  /// shape) by tag, missing axes broadcast; any strides. ins holds the row's operands for Form::fwd
  /// and (g, a, y) for a unary row's Form::da, (g, a, b, y) for a binary row's partials.
  virtual RawTensor map(ExecContext& ctx, ElemOp op, Form form, const Tags& tags, const Extents& shape,
                        Inputs ins, const ElemParams& p) const = 0;
  /// The forward of row `op` computed in dtype (f64, or an integer dtype for the rows whose
  /// `integer` is true: two's-complement wrap-around); inputs of any dtype are converted to it.
  virtual RawTensor mapAs(ExecContext& ctx, ElemOp op, DType dtype, const Tags& tags, const Extents& shape,
                          Inputs ins, const ElemParams& p) const = 0;
  /// dst[i] = fwd(dst[i]) for a unary row, fwd(dst[i], src[i]) for a binary one (src f32, aligned
  /// to dst's axes by tag), in place: dst f32, any strides, exclusively owned. Only the rows whose
  /// `in_place` is true (InvalidArgument for the others): addScaledInPlace's axpy, takeScaleNoGrad's
  /// scale.
  virtual void updateInto(ExecContext& ctx, ElemOp op, const RawTensor& dst, const RawTensor* src,
                          const ElemParams& p) const = 0;
  /// {fwd(a), da(1, a)} of a unary row with a `keep` kernel, for a VJP that keeps the partial
  /// (Note [Kept partials]); nullopt where this backend does not compute that pass (the op then
  /// records a and computes the partial in its backward). The same values as map's two forms.
  virtual std::optional<std::pair<RawTensor, RawTensor>> mapKeepingPartial(ExecContext&, ElemOp, const RawTensor&,
                                                                           const ElemParams&) const {
    return std::nullopt;
  }
  /// out[i] = ins[0][i] != 0 ? ins[1][i] : ins[2][i], f32 operands aligned to (tags, shape) as map's:
  /// where, and maskedFill against a scalar, with their VJPs against a scalar 0.
  virtual RawTensor select(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs ins) const = 0;

  /// dst[i] = src[i] converted to dst's dtype (backend/element_io.h) for every logical index:
  /// equal extents in the same axis order (tags not read), any strides; a q8_0 src (any view) is
  /// dequantized, a q8_0 dst is DTypeMismatch. The strided copy behind views, pads, concatenations
  /// and their VJPs.
  virtual void copy(ExecContext& ctx, const RawTensor& src, const RawTensor& dst) const = 0;
  /// Every element of dst = value converted to its dtype.
  virtual void fill(ExecContext& ctx, const RawTensor& dst, double value) const = 0;

  /// Sums f32 a over `axes` (each an axis of a), accumulating in f64; the result keeps a's other
  /// axes in a's order and is contiguous.
  virtual RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes) const = 0;
  /// dst += src; dst f32 and exclusively owned (or a view into such a buffer: Note [Placed
  /// gradients]), src of dst's axes and extents.
  virtual void addInto(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) const = 0;

  /// Contracts a (f32) and b (f32, f16, bf16 or q8_0) over `contracted`, with the axis rules of
  /// Tensor::dot: shared axes not contracted are batch axes; result axes are a's remaining axes,
  /// then b's that a lacks. A valid `initial` (axes among the result's) is added to the product.
  virtual RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted,
                             const RawTensor& initial) const = 0;
  /// The same contraction in f64: operands of any dtype read as double, products accumulated in
  /// double, a contiguous f64 result (the f64 path of dot, einsum and matmul).
  virtual RawTensor contractF64(ExecContext& ctx, const RawTensor& a, const RawTensor& b,
                                const Tags& contracted) const = 0;

  /// Reductions along `axis` of f32 a (any strides); results contiguous f32. max and min (the
  /// first extremum wins, NaN propagates; index: its position along the axis, as f32) and prod
  /// (in f64) drop the axis, keeping a's other axes in a's order; cumsum (an f64 running sum;
  /// cumsumReverse from the end) and prodOthers (each element the product of the other elements
  /// of its line) keep a's axes in a's order.
  enum class AlongAxis : uint8_t { max, min, prod, prodOthers, cumsum, cumsumReverse };
  struct Along {
    RawTensor values, index;
  };
  virtual Along reduceAlong(ExecContext& ctx, AlongAxis op, const RawTensor& a, Tag axis) const = 0;
  /// Reductions in f64 of a (any dtype but q8_0, converted to f64) over `axes`: one f64 output per
  /// line, over a's other axes in a's order (cumsum: one per element, a's axes and order). sum
  /// times param; max and min with NaN propagating; variance with correction param; logsumexp;
  /// prod; the 2-norm; the p-norm with p = param (max |x| for infinity).
  enum class F64Line : uint8_t { sum, max, min, variance, logsumexp, cumsum, prod, norm, pNorm };
  virtual RawTensor reduceF64(ExecContext& ctx, F64Line op, const RawTensor& a, const Tags& axes,
                              double param) const = 0;
  /// The VJP of the p-norm N (f64, no axes) of all of f32 x, from gy (f32, no axes): gx =
  /// gy·sign(x)·(|x|/N)^(p-1) (gy·x/N for p = 2), 0 where x = 0 or N = 0; for p = infinity gy split
  /// evenly among the elements with |x| = N, with their signs. gx contiguous over x's axes.
  virtual RawTensor pNormVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& norm, const RawTensor& gy,
                             double p) const = 0;

  /// Scans along the last axis of contiguous f32 tensors, one row at a time, in f64 accumulators.
  /// cumprod: y_i = x_0·...·x_i. Its VJP: gx_i = y_{i-1}·S_i, S_i = g_i + x_{i+1}·S_{i+1}.
  virtual RawTensor cumprodRows(ExecContext& ctx, const RawTensor& x) const = 0;
  virtual RawTensor cumprodRowsVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& y,
                                   const RawTensor& gy) const = 0;
  /// h_t = d_t·h_{t-1} + x_t with h_{-1} = h0 (h0: the rows' axes, contiguous). The VJP writes gx,
  /// gd (x's shape) and gh0 (h0's) from G_t = gy_t + d_{t+1}·G_{t+1}: gx_t = G_t,
  /// gd_t = G_t·h_{t-1}, gh0 = d_0·G_0.
  virtual RawTensor linearRecurrenceRows(ExecContext& ctx, const RawTensor& x, const RawTensor& d,
                                         const RawTensor& h0) const = 0;
  struct RecurrenceGrads {
    RawTensor x, d, h0;
  };
  virtual RecurrenceGrads linearRecurrenceRowsVjp(ExecContext& ctx, const RawTensor& d, const RawTensor& h0,
                                                  const RawTensor& y, const RawTensor& gy) const = 0;

  // --- indexing (gather, scatter, rows, masks): indices are i32 or i64 values in range ---
  /// The first element of index (i32 or i64, any strides) outside [0, extent), in row-major order
  /// of its axes: its position and value, or position -1 when every index is in range.
  struct IndexFault {
    int64_t position = -1, value = 0;
  };
  virtual IndexFault firstIndexOutside(ExecContext& ctx, const RawTensor& index, int64_t extent) const = 0;
  /// The first element (row-major) of f32 x (any strides) outside [lo, hi], NaN included: its
  /// position and value, or position -1 when there is none. bceLoss's probabilities.
  struct ValueFault {
    int64_t position = -1;
    double value = 0;
  };
  virtual ValueFault firstValueOutside(ExecContext& ctx, const RawTensor& x, double lo, double hi) const = 0;
  /// out[p] = table[p with its `axis` coordinate replaced by index[p]], over index's positions
  /// (index: table's axes in table's order, extents <= table's off `axis`, any strides). f32.
  virtual RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) const = 0;
  /// dst[p with `axis` coordinate index[p]] += src[p] (add) or = src[p] (else; row-major, the last
  /// write wins) over index's positions (as gatherAlong's); dst f32, index's axes, exclusively owned.
  virtual void scatterAlong(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index,
                            const RawTensor& src, bool add) const = 0;
  /// Table (contiguous; f32, f16, bf16, or q8_0 with its block axis last and not `axis`) with `axis`
  /// replaced in place by the axes of index (contiguous i64): out[.., q, ..] = table[.., index[q], ..].
  virtual RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) const = 0;
  /// Rows index[j] (1-D contiguous i64) of dst along `axis` get row j of src added (add), written
  /// (assign) or zeroed (zero; src unused). dst contiguous f32, exclusively owned; src contiguous,
  /// dst's axes in dst's order, index's extent along `axis`.
  enum class RowUpdate : uint8_t { add, assign, zero };
  virtual void updateRows(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index,
                          const RawTensor& src, RowUpdate how) const = 0;
  /// The row-major offsets (i64, on axis `tag`) of the nonzero elements of mask (u8 or f32, any
  /// strides), counted in its axes' order.
  virtual RawTensor maskPositions(ExecContext& ctx, const RawTensor& mask, Tag tag) const = 0;
  /// maskedScatter: a contiguous copy of a (f32, a's layout) whose elements where mask is set (u8
  /// or f32 over a's axes, any strides: nonzero) are replaced, in a's row-major order, by the first
  /// elements of src (contiguous f32); `where` records the set elements for the VJP, in the
  /// backend's own form. ShapeMismatch when src has fewer elements than the mask sets (a device
  /// reports it with the next read: Note [Device faults]). Default: maskPositions and row updates.
  struct MaskedScatter {
    RawTensor out, where;
  };
  virtual MaskedScatter maskedScatter(ExecContext& ctx, const RawTensor& a, const RawTensor& mask,
                                      const RawTensor& src) const;
  /// Its VJP from gy (a's axes in a's order, any strides): ga = gy with the set elements zeroed
  /// (contiguous), gsrc = gy's set elements in order, then zeros (src_tags, src_shape); each only
  /// where asked for (else invalid).
  struct MaskedScatterGrads {
    RawTensor a, src;
  };
  virtual MaskedScatterGrads maskedScatterVjp(ExecContext& ctx, const RawTensor& where, const RawTensor& gy,
                                              const Tags& src_tags, const Extents& src_shape, bool need_a,
                                              bool need_src) const;

  // --- ordering along the last axis of contiguous rows ---
  /// The first k of each f32 row ordered by (value, index), NaN above every number, ties lower
  /// index first; descending when largest. Values f32 and their i64 indices, k along the last axis.
  struct SortedRows {
    RawTensor values, indices;
  };
  virtual SortedRows sortRows(ExecContext& ctx, const RawTensor& rows, int64_t k, bool largest) const = 0;
  /// The first index (i64, last axis dropped) of the largest (smallest) value of each f64 row, NaN
  /// counting as the extreme; rows are not empty.
  virtual RawTensor argExtremumRows(ExecContext& ctx, const RawTensor& rows, bool largest) const = 0;

  // --- truth values: u8, 1 for true, 0 for false; operands of any dtype but q8_0 read as double,
  // except that two i64 operands are read as i64 (beyond 2^53 double is not exact) ---
  enum class Logic : uint8_t {
    isnan, isinf, isfinite, truth, logicalNot, logicalAnd, logicalOr, logicalXor, eq, ne, lt, le, gt, ge
  };
  /// out[i] = op over ins[k][i] aligned to (tags, shape) as map's (one operand; two for and/or/xor
  /// and the comparisons, which are IEEE's: NaN is unordered, so only ne holds for it).
  virtual RawTensor logic(ExecContext& ctx, Logic op, const Tags& tags, const Extents& shape, Inputs ins) const = 0;
  /// any (or all, when !any) of each row of u8 truth values (contiguous, last axis dropped; the
  /// empty any is false, the empty all true).
  virtual RawTensor truthRows(ExecContext& ctx, const RawTensor& truth, bool any) const = 0;
  /// u8 {row, col}: 1 where (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper).
  virtual RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower,
                             int64_t upper) const = 0;

  // --- seeded randomness: counter-based (core/random.h), the same values on every backend ---
  /// x (f32) times 0 where unit(seed, i) < p, else keep_scale, i the row-major index; contiguous.
  virtual RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale) const = 0;
  /// i64 draws along the last axis (samples of them) from the weights of each contiguous f64 row;
  /// draw j of row r uses unit(seed, r·samples + j). Bad weights are InvalidArgument naming `what`.
  virtual RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows, int64_t samples, uint64_t seed,
                                    bool replacement, const std::string& what) const = 0;

  // --- convolution and pooling: contiguous f32 operands laid out as p or g describe (the leading
  // axes fold into the images or planes); results are contiguous, over (tags, shape) where given ---
  using ConvPlan = kernels::ConvPlan;
  using Conv2dGeometry = kernels::Conv2dGeometry;
  /// y [N, OC, out_h, out_w] = Σ_{c,i,j} w[o, c, i, j]·x[n, g(o)·C/G + c, oy·sh - ph + i·dh,
  /// ox·sw - pw + j·dw] (0 outside), plus bias[o] (f32 {OC}) when valid, then relu when `relu`.
  /// With p.channels_last the same sums over x [N, H, W, C] and w [OC, kh, kw, C/G] to y [N, out_h,
  /// out_w, OC], and the two adjoints below in those layouts.
  virtual RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p,
                           const Tags& tags, const Extents& shape, const RawTensor& bias, bool relu) const = 0;
  /// The adjoint of conv2d in x: gx [N, C, H, W] from gy [N, OC, out_h, out_w] (also a transposed
  /// convolution's forward).
  virtual RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                                    const Tags& tags, const Extents& shape) const = 0;
  /// The adjoint of conv2d in w: gw [OC, C/G, kh, kw] = Σ_n gy_n · x_n's taps.
  virtual RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                                     const Tags& tags, const Extents& shape) const = 0;
  /// conv2d's VJP in one call (not a transposed convolution's): from gy (contiguous, conv2d's
  /// result layout), masked to gy·(y > 0) where `relu_y` is valid (conv2dRelu's result: relu's
  /// gradient, 0 at 0), gx (when `w` is valid), gw (when `x` is valid) and the bias gradient {OC}
  /// (when `bias`), over the layout's tags and shapes; invalid tensors for the rest. Default: the
  /// relu row's map, sumTo and the two adjoints above, composed. Note [Fused convolution VJP].
  struct ConvGradLayout {
    Tags x_tags;
    Extents x_shape;
    Tags w_tags;
    Extents w_shape;
    Tags b_tags;
    Extents b_shape;
  };
  struct ConvGrads {
    RawTensor x, w, bias;
  };
  virtual ConvGrads conv2dVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& relu_y, const RawTensor& x,
                              const RawTensor& w, const ConvPlan& p, const ConvGradLayout& layout, bool bias) const;
  /// Winograd F(2x2, 3x3) (Lavin & Gray 2015), the prepared convolution's path for 3x3 kernels
  /// with stride and dilation 1: the weight planes U [16, G, C/G, OC/G] of w [OC, C/G, 3, 3],
  /// U[ξ, g, c, o'] = element ξ (row-major 4x4) of G·w[g·OC/G + o', c]·Gᵀ computed in f64; and
  /// conv2d's y (bias, relu as conv2d's) from them, per 2x2 output tile Aᵀ·(Σ_c U ⊙ Bᵀ·d·B)·A.
  virtual RawTensor winogradWeights(ExecContext& ctx, const RawTensor& w, int64_t groups) const = 0;
  virtual RawTensor winogradConv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& u, const ConvPlan& p,
                                   const Tags& tags, const Extents& shape, const RawTensor& bias, bool relu) const = 0;
  /// cols [N, C·kh·kw, out_h·out_w] of images [N, C, H, W]: cols[n, (c·kh + i)·kw + j, oy·out_w + ox]
  /// = x[n, c, oy·sh - ph + i·dh, ox·sw - pw + j·dw] (0 outside). col2im is its adjoint: each
  /// column entry summed into the image element it was read from.
  virtual RawTensor im2col(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                           const Extents& shape) const = 0;
  virtual RawTensor col2im(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                           const Extents& shape) const = 0;

  /// Pooling of the g.channels planes x [..., H, W, trailing...] over g's windows (dilation 1) to
  /// y [..., out_h, out_w, trailing...] (x's axes; `trailing` axes after the plane's two, 0 or
  /// more: channels last, Note [Channels last]): each lane's window maximum, padding never
  /// winning, NaN propagating; or its mean over kh·kw taps, padding counted as 0. For max with
  /// `argmax`, also the flat in-plane index (i64) of each window's first maximum, which its VJP
  /// routes the gradient to.
  enum class Pool { max, avg };
  struct Pooled {
    RawTensor y, argmax;
  };
  virtual Pooled pool2d(ExecContext& ctx, Pool kind, const RawTensor& x, const Conv2dGeometry& g, size_t trailing,
                        bool argmax) const = 0;
  /// gx [..., H, W, trailing...] (gy's axes) of pool2d from gy [..., out_h, out_w, trailing...]
  /// (and, for max, its argmax).
  virtual RawTensor pool2dVjp(ExecContext& ctx, Pool kind, const RawTensor& gy, const RawTensor& argmax,
                              const Conv2dGeometry& g, size_t trailing) const = 0;
  /// conv2dRelu pooled (Note [Pooled conv2dRelu]): pool2d's max pooling (over `pool`'s windows,
  /// `trailing` as pool2d's) of conv2d(x, w) + bias, relu'd, over (tags, shape), conv2d's result;
  /// the argmax as pool2d's when `argmax`. Default: conv2d, then pool2d.
  virtual Pooled conv2dReluPool(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p,
                                const Tags& tags, const Extents& shape, const RawTensor& bias,
                                const Conv2dGeometry& pool, size_t trailing, bool argmax) const;
  /// Its VJP from gy (contiguous, the pooled layout), the pooled result and its argmax: conv2dVjp's
  /// gradients of pool2d's gradient of gy·(pooled > 0) (relu's mask, read where each window's
  /// gradient lands), which are the composed ops' bits. Default: relu's map, pool2dVjp and
  /// conv2dVjp, composed.
  virtual ConvGrads conv2dReluPoolVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& pooled,
                                      const RawTensor& argmax, const RawTensor& x, const RawTensor& w, const ConvPlan& p,
                                      const Conv2dGeometry& pool, size_t trailing, const ConvGradLayout& layout,
                                      bool bias) const;
  /// y [..., 2H, 2W] = x [..., H, W] with each element repeated in a 2x2 block; the VJP sums each
  /// block of gy.
  virtual RawTensor upsample2x(ExecContext& ctx, const RawTensor& x) const = 0;
  virtual RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy) const = 0;

  /// y = x·scale[c] + shift[c] with c the index along x's `channel` axis (scale, shift: f32 {C}).
  /// The VJP: gx = gy·scale[c] when `input`; when `params`, gscale[c] = Σ gy·x and gshift[c] = Σ gy
  /// over the elements of channel c, in f64.
  virtual RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale,
                                  const RawTensor& shift, Tag channel) const = 0;
  struct AffineGrads {
    RawTensor x, scale, shift;
  };
  virtual AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale,
                                       const RawTensor& gy, Tag channel, bool input, bool params) const = 0;

  // --- row-wise families: rows are the last axis of contiguous f32 tensors ---
  /// Softmax of each row, max subtracted (log: log-softmax). Its VJP from y and gy (y's layout):
  /// softmax gx = y·(gy - Σ gy·y), log-softmax gx = gy - exp(y)·Σ gy, sums in f64.
  virtual RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log) const = 0;
  virtual RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log) const = 0;

  /// Normalizes each row of m > 0 elements: y = (x - mean)·inv with inv = 1/sqrt(var + eps)
  /// (layer), y = x·inv with inv = 1/sqrt(mean(x²) + eps) (rms) or 1/max(|x|, eps) (l2, clamped
  /// (u8) saying where eps won). inv and clamped have the rows' axes. The VJP, <.> a row mean:
  /// layer gx = inv·(g - <g> - y·<g y>), rms inv·(g - y·<g y>), l2 inv·(g - y·Σ g y) (inv·g
  /// where clamped).
  enum class Norm { layer, rms, l2 };
  struct NormRows {
    RawTensor y, inv, clamped;
  };
  virtual NormRows normRows(ExecContext& ctx, const RawTensor& x, Norm kind, double eps) const = 0;
  virtual RawTensor normRowsVjp(ExecContext& ctx, Norm kind, const NormRows& saved, const RawTensor& gy) const = 0;

  /// Rotary embedding of x laid out {batch..., position: T, dim: D}: each pair of a row (i and i+D/2
  /// for halves, 2i and 2i+1 for adjacent) rotated by the angle whose cos and sin are at [t, i] of
  /// the [T, D/2] tables; inverse rotates by minus the angle (the VJP, the rotation being orthogonal).
  enum class RopePairs { halves, adjacent };
  virtual RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin,
                             RopePairs pairs, bool inverse) const = 0;
  /// The tables {position: T, dim: D/2} of cos and sin of (offset + t)·base^(-2i/D), angles in f64.
  struct RopeTables {
    RawTensor cos, sin;
  };
  virtual RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base,
                                int64_t offset) const = 0;
  /// rmsNorm, times w (the dim axis alone), then rope by halves, per row of the rope layout:
  /// n = x·inv, inv = 1/sqrt(mean(x²) + eps) in f32, y = rotate(n·w). The VJP, with gu the inverse
  /// rotation of gy: gw = Σ over rows of gu·n (f64, in row order), gx = inv·(gu·w - n·<gu·w·n>);
  /// each only where asked for (else invalid). The VJP reads saved's n and inv.
  struct RmsRopeRows {
    RawTensor y, n, inv;
  };
  struct RmsRopeGrads {
    RawTensor x, w;
  };
  virtual RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const RawTensor& cos,
                                      const RawTensor& sin, double eps) const = 0;
  virtual RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const RmsRopeRows& saved, const RawTensor& w,
                                          const RawTensor& cos, const RawTensor& sin, const RawTensor& gy,
                                          bool need_x, bool need_w) const = 0;

  // --- losses: rows are the last (class) axis of contiguous f32 tensors; labels contiguous i64,
  // one per row, in the rows' order ---
  /// The first label (i64, contiguous) outside [0, classes) that is not `ignore`: its position and
  /// value, or position -1 when there is none.
  virtual IndexFault firstLabelOutside(ExecContext& ctx, const RawTensor& labels, int64_t classes,
                                       std::optional<int64_t> ignore) const = 0;
  /// Per-row losses (f64, the rows' axes) against labels in range, of rows of log-probabilities lp:
  /// -((1 - s)·lp[y] + s·mean(lp)) with label smoothing s, or -lp[y] when plain (nllLoss's rows).
  virtual RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, double smoothing,
                                  bool plain) const = 0;
  /// Their VJP in the logits (in lp when plain), f_r the upstream factor of row r: gy[r] when gy
  /// has the rows' axes (contiguous), else gy·scale (gy a scalar). gx = f·(exp(lp) - s/C) with
  /// f·(1 - s) subtracted at y; plain: -f at y, 0 elsewhere, lp giving only the layout (any strides).
  virtual RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels,
                                     const RawTensor& gy, float scale, double smoothing, bool plain) const = 0;
  /// A loss mean's denominator: a number, or a scalar f32 tensor that a device computed from its
  /// labels (a device's reads are async, so the count stays there: labelWeightSum). Host backends
  /// are only ever handed numbers, and read them with host().
  struct Divisor {
    double value = 1;
    RawTensor tensor;
    Divisor(double v = 1) : value(v) {}  // NOLINT(google-explicit-constructor): a number divides
    explicit Divisor(RawTensor t) : tensor(std::move(t)) {}
    /// The number (DeviceMismatch for a device's tensor).
    double host() const;
  };
  /// The f32 scalar (Σ loss)/denom, the sum over every element of loss (contiguous f32 or f64) in
  /// order in f64: a loss's sum or mean.
  virtual RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, const Divisor& denom) const = 0;

  // --- cross-entropy rows (crossEntropyExt, linearCrossEntropyExt): x the logits, rows-last and
  // contiguous f32 [rows..., C] ---
  /// One call's targets and constants (CrossEntropyExtOptions): target holds i64 labels (the rows'
  /// axes, contiguous; a row labelled `ignore` does not count) or f32 soft targets t (x's layout,
  /// contiguous); weights the class weights w (f32 {C}, contiguous) or invalid for all 1; label
  /// smoothing s and z-loss z. t' = (1 - s)·t + s/C.
  struct CrossEntropy {
    RawTensor target, weights;
    double smoothing = 0, z_loss = 0;
    int64_t ignore = -100;
  };
  /// The mean's denominator with labels (i64, contiguous): Σ w[y] over the labels that are not
  /// `ignore` (their count when weights is invalid), in order in f64; a device's stays a tensor.
  virtual Divisor labelWeightSum(ExecContext& ctx, const RawTensor& labels, const RawTensor& weights,
                                int64_t ignore) const = 0;
  /// Per row: lp = log_softmax(x), lse its logsumexp (f64, the rows' axes) and the loss (f64, the
  /// rows' axes): with labels -(1 - s)·w[y]·lp[y] - (s/C)·Σ w·lp + z·lse² (0 for ignored rows),
  /// soft -Σ w·t'·lp + z·lse². When in_place, lp is written over x (exclusively owned): the linear
  /// heads' chunks of logits, which nothing else reads.
  struct CrossEntropyRows {
    RawTensor logp, lse, loss;
  };
  virtual CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x, const CrossEntropy& ce,
                                            bool in_place) const = 0;
  /// Their VJP, f the row's upstream factor: gy[r] when gy has the rows' axes (contiguous), else
  /// gy/denom (gy a scalar); 0 for ignored rows. gx = f·(a·exp(lp) - b), 0 on rows where f is 0;
  /// with labels a = (1 - s)·w[y] + (s/C)·Σ w + 2z·lse and b = (s/C)·w + (1 - s)·w[y] at y, soft
  /// a = Σ w·t' + 2z·lse and b = w·t'. gt = -f·(1 - s)·w·lp (soft targets). Each only where asked
  /// for (else invalid). When lse is invalid, lp holds the logits themselves and each row's
  /// log-softmax is computed first (the linear heads recompute their chunks); when in_place, gx is
  /// written over lp (exclusively owned).
  struct CrossEntropyGrads {
    RawTensor x, target;
  };
  virtual CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& lse,
                                                const CrossEntropy& ce, const RawTensor& gy, const Divisor& denom,
                                                bool need_x, bool need_target, bool in_place) const = 0;
  /// The teacher's distribution at temperature T = 1/inv_t of each row of x: exp(inv_t·x - lse),
  /// lse the logsumexp of inv_t·x (max subtracted, the sum in f64).
  virtual RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x, float inv_t) const = 0;
  /// Distillation rows (linearDistillExt) of student logits x against the teacher's probabilities
  /// p (x's layout, contiguous) at temperature T, mixed with the hard-label loss when labels (i64,
  /// the rows' axes, contiguous) are valid: loss = (1 - α)·KD/kd_div + α·CE/ce_div per row (f64,
  /// the rows' axes), KD = T²·Σ_{p > 0} p·(log p - log_softmax(x/T)), CE = lse(x) - x[y] (0 for
  /// ignored rows and without labels).
  struct Distill {
    RawTensor probs, labels;
    double temperature = 1, alpha = 0;
    int64_t ignore = -100;
    double kd_div = 1;
    Divisor ce_div = 1;
  };
  virtual RawTensor distillRows(ExecContext& ctx, const RawTensor& x, const Distill& d) const = 0;
  /// Its VJP, returned (a backend may write it over x, which is exclusively owned): gx = k·(softmax(x/T) - p) +
  /// a·(softmax(x) - onehot(y)) with k = (1 - α)·T·fk and a = α·fc, fk and fc the row's upstream
  /// factors: gy[r] when gy has the rows' axes (contiguous), else gy/kd_div and gy/ce_div (gy a
  /// scalar); fc is 0 for ignored rows and without labels.
  virtual RawTensor distillRowsVjp(ExecContext& ctx, const RawTensor& x, const Distill& d,
                                   const RawTensor& gy) const = 0;

  // --- attention: f32 q, k and v of g's axes, any strides ---
  /// Per query tile n, P = softmax(scale·q·kᵀ) over the keys each row sees (all, or the first
  /// i + Tk - Tq + 1 when causal; P is 0 past them) and out = P·v of kv tile g.kvTile(n). out has
  /// q's axes (dim of extent Dv) in an order the backend picks; probs {n: B·H, i: Tq, j: Tk} is
  /// kept for the VJP.
  struct Attention {
    RawTensor out, probs;
  };
  virtual Attention attention(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                              const RawTensor& v) const = 0;
  /// The VJP from probs and gy (out's axes, any order and strides), with dP = gy·vᵀ and
  /// dS = scale·P∘(dP - rowsum(dP∘P)): gq = dS·k, gk = Σ_group dSᵀ·q, gv = Σ_group Pᵀ·gy, each only
  /// where asked for (else invalid), over its operand's axes in an order the backend picks. Reads
  /// q only for gk, k only for gq.
  struct AttentionGrads {
    RawTensor q, k, v;
  };
  virtual AttentionGrads attentionVjp(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q,
                                      const RawTensor& k, const RawTensor& v, const RawTensor& probs,
                                      const RawTensor& gy, bool need_q, bool need_k, bool need_v) const = 0;

  // --- elementwise pairs ---
  /// Gated units: out = u(up)·g(gate), u the identity and g the activation, or situ's
  /// u = c·tanh(up/c), g = u(silu(gate)); gate is a view with up's axes in up's order, both any
  /// strides. The VJP writes gy·u'(up)·g(gate) into gup and gy·u(up)·g'(gate) into ggate (f32
  /// views laid out as up, any strides, not overlapping); gy may have up's axes in any order.
  virtual RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate) const = 0;
  virtual void gatedVjp(ExecContext& ctx, const GateFn& fn, const RawTensor& gy, const RawTensor& up,
                        const RawTensor& gate, const RawTensor& gup, const RawTensor& ggate) const = 0;

  // --- host reads, bands and strided scatters ---
  /// The values of t (i32 or i64, any strides) as int64 on the host, in row-major order of its
  /// axes: for the ops whose plan depends on them (moveSlices's default reads its shifts).
  virtual std::vector<int64_t> readI64(ExecContext& ctx, const RawTensor& t) const = 0;
  /// rollBy's and shiftBy's moves: a new contiguous tensor with src's axes, order and dtype (not
  /// q8_0) whose slice b of by_axis is src's moved along axis by k = shifts[b] (i32 or i64, the
  /// single axis by_axis): rolled, element i to (i + k) mod n, or shifted, element i to i + k with
  /// zeros where nothing lands (k clamped to [-n, n]); adjoint moves by -k instead (the VJPs). By
  /// default the shifts are read on the host (readI64) and each slice is moved by copy and fill.
  enum class SliceMove : uint8_t { roll, shift };
  virtual RawTensor moveSlices(ExecContext& ctx, SliceMove how, const RawTensor& src, Tag axis, Tag by_axis,
                               const RawTensor& shifts, bool adjoint) const;
  /// A contiguous copy of f32 a (a's axes in a's order) with 0 written, not multiplied (NaN and
  /// inf outside the band become 0), where the index i along `row` and j along `col` have j - i
  /// outside [lo, hi] (tril, triu and bandPart).
  virtual RawTensor band(ExecContext& ctx, const RawTensor& a, Tag row, Tag col, int64_t lo, int64_t hi) const = 0;
  /// dst[i] += src[i] for every logical index: dst an f32 view with any strides >= 0 whose elements
  /// may coincide (such an element gets every src element that lands on it), src f32 with dst's
  /// extents in the same axis order, any strides. viewWithStrides's VJP.
  virtual void scatterAddView(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) const = 0;

  // --- quantization and packed right operands (ag/packed.h) ---
  /// The q8_0 blocks (Note [q8_0 layout], backend/q8_blocks.h) of a (f32, f16 or bf16, any
  /// strides) along block_axis, in emptyQ8's layout; every backend writes the same bytes.
  virtual RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis) const = 0;
  /// dotTernarySte's weights: s = mean |w| (in f64, over f32 w of any strides), then
  /// q = round(clamp(w/s, -1, 1))·s (f32, half to even), all 0 when s is 0; contiguous over w's axes.
  virtual RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w) const = 0;
  /// A dense weight packed by a backend, in a layout of its own (cpu: the GEMM's panels of Note
  /// [Packed B], for this process's SIMD target; reference: Bᵀ as a plain {column, depth} matrix);
  /// `layout` names it (packedLayout). A q8_0 weight is passed as its blocks
  /// {columns..., depth} (contiguous, blocks along the depth), which every backend reads.
  struct PackedB {
    RawTensor storage;
    int64_t layout = 0;
  };
  /// Packs b (f32, f16 or bf16, contiguous) read as the matrix B [k, n]: laid out {depth,
  /// columns...}, or {columns..., depth} when depth_last; k the depth's extent, n the product of
  /// the other extents.
  virtual PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last) const = 0;
  /// The layout packRhs writes in this process: a PackedB of another layout is not this backend's.
  virtual int64_t packedLayout() const = 0;
  /// out = a·B (+ bias[j]): a contiguous f32 whose last axis is the depth (k) and whose other axes
  /// are the m rows; b packed by this backend's packRhs in packedLayout(), or q8_0 blocks; bias
  /// contiguous f32 of n elements, or invalid. out (tags, shape), contiguous f32 m × n, is a's rows
  /// then B's columns.
  virtual RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const PackedB& b, const RawTensor& bias,
                                  const Tags& tags, const Extents& shape) const = 0;

  // --- optimizer updates: in place, element by element, on a contiguous f32 parameter p and its
  // state buffers from the contiguous f32 gradient g, all of p's shape (backend/optim_steps.h) ---
  /// SGD; buf (the momentum buffer) is invalid without momentum.
  virtual void sgdUpdate(ExecContext& ctx, const SgdStep& s, const RawTensor& p, const RawTensor& g,
                         const RawTensor& buf) const = 0;
  /// Adam and AdamW with their moment buffers m and v.
  virtual void adamUpdate(ExecContext& ctx, const AdamStep& s, const RawTensor& p, const RawTensor& g,
                          const RawTensor& m, const RawTensor& v) const = 0;
  /// Σ x² in f64, in element order, of a contiguous f32 x (clipGradNorm's norm).
  virtual double sumSquares(ExecContext& ctx, const RawTensor& x) const = 0;
  /// clipGradNormTensor's norm without a host read: the 2-norm of the contiguous f32 grads
  /// together (f32 {}) and the factor (f32 {}) that clips them, clipFactor(norm, max_norm)
  /// (backend/optim_steps.h). By default from sumSquares, in f64 on the host.
  struct GradNorm {
    RawTensor norm, factor;
  };
  virtual GradNorm gradNorm(ExecContext& ctx, std::span<const RawTensor> grads, double max_norm) const;
};

/// The kernels of ctx's backend (ExecOptions::backend).
const Kernels& kernelsOf(const ExecContext& ctx);
/// The kernels of a backend.
const Kernels& kernelsFor(Backend backend);
/// Sums a down to (tags, shape) with ctx's sumAxes: axes of a not in tags are summed; the result
/// is laid out in the order of tags. Each tag must be an axis of a with the same extent
/// (ShapeMismatch). The last step of every broadcasting VJP.
RawTensor sumTo(ExecContext& ctx, const RawTensor& a, const Tags& tags, const Extents& shape);

/// Each backend folder defines its own.
const Kernels& cpuKernels();
const Kernels& referenceKernels();
const Kernels& webgpuKernels();

// --- shared by the backends' implementations ---
/// The rows of a scan: the last axis of t (contiguous f32), n elements each (none when n is 0).
struct RowLayout {
  int64_t rows, n;
};
RowLayout rowLayout(const RawTensor& t);
/// A recurrence's rows: one per element of h0, even when the time axis is empty (gh0 is then 0).
RowLayout recurrenceLayout(const RawTensor& x, const RawTensor& h0);
/// The axes of t with the one at position p replaced, in place, by the axes of ix (selectRows's
/// result).
std::pair<Tags, Extents> withIndexAxes(const RawTensor& t, size_t p, const RawTensor& ix);
/// t (contiguous) seen as one axis `tag` of all its elements, sharing its buffer.
RawTensor flatView(const RawTensor& t, Tag tag);
/// dst = src rolled along axis by s in [0, n) (element i to (i + s) mod n), by ctx's copy.
void rollInto(ExecContext& ctx, const RawTensor& src, const RawTensor& dst, Tag axis, int64_t s);
/// dst = src shifted along axis by k in [-n, n] (element i to i + k), zeros where nothing lands.
void shiftInto(ExecContext& ctx, const RawTensor& src, const RawTensor& dst, Tag axis, int64_t k);
/// shift mod n in [0, n) (0 for an empty axis), for any int64 shift.
int64_t wrapShift(int64_t shift, int64_t n);
/// A shift clamped to [-n, n]: beyond it everything is vacated either way.
int64_t clampShift(int64_t shift, int64_t n);
/// InvalidArgument: the row has no such form (a unary row's db, the partials a row turns off).
[[noreturn]] void failNoForm(ElemOp op, Form form);
/// InvalidArgument: the row is not computed in place (its `in_place` is false).
[[noreturn]] void failNotInPlace(ElemOp op);
/// DTypeMismatch: the row has no forward in dtype.
[[noreturn]] void failNoDTypeForm(ElemOp op, DType dtype);

}  // namespace fucina::backend
