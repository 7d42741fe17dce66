/// @file
/// The webgpu backend's primitives, one file per family; webgpu_kernels.cpp binds them to the
/// Kernels interface (Note [Backends]).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fucina/backend/kernels.h"

namespace fucina::backend::webgpu {

using internal::RawTensor;
using ConvPlan = kernels::ConvPlan;
using Conv2dGeometry = kernels::Conv2dGeometry;

// elementwise.cpp: the rows of backend/elementwise_table.h with a WGSL form.
/// A new contiguous f32 tensor (tags, shape) = expr, a WGSL expression over the operands ins
/// (aligned to it by tag, any strides) by their names, and the parameters pa and pb; functions:
/// WGSL the expression calls, beside the prelude's.
RawTensor mapExpr(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs ins,
                  const std::vector<std::string>& names, const std::string& expr, const ElemParams& p,
                  const std::string& functions = "");
/// mapExpr over one operand, named `a`, over its own axes.
RawTensor mapOne(ExecContext& ctx, const RawTensor& a, const std::string& expr, double pa = 0);
RawTensor map(ExecContext& ctx, ElemOp op, Form form, const Tags& tags, const Extents& shape, Inputs ins,
              const ElemParams& p);
void updateInto(ExecContext& ctx, ElemOp op, const RawTensor& dst, const RawTensor* src, const ElemParams& p);
RawTensor select(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs ins);
void addInto(ExecContext& ctx, const RawTensor& dst, const RawTensor& src);

// gated.cpp: the gated units' gate pairs (backend/gates.h).
RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate);
void gatedVjp(ExecContext& ctx, const GateFn& fn, const RawTensor& gy, const RawTensor& up, const RawTensor& gate,
              const RawTensor& gup, const RawTensor& ggate);

// rope.cpp: rotary rows, their tables (made on the host), rmsNorm·weight fused before them.
RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin,
                   Kernels::RopePairs pairs, bool inverse);
Kernels::RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base,
                               int64_t offset);
Kernels::RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const RawTensor& cos,
                                     const RawTensor& sin, double eps);
Kernels::RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const Kernels::RmsRopeRows& saved, const RawTensor& w,
                                         const RawTensor& cos, const RawTensor& sin, const RawTensor& gy,
                                         bool need_x, bool need_w);

// logic.cpp: truth values (u8, packed four to a word), band masks and bands.
RawTensor logic(ExecContext& ctx, Kernels::Logic op, const Tags& tags, const Extents& shape, Inputs ins);
RawTensor truthRows(ExecContext& ctx, const RawTensor& truth, bool any);
RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower, int64_t upper);
RawTensor band(ExecContext& ctx, const RawTensor& a, Tag row, Tag col, int64_t lo, int64_t hi);

// memory.cpp: fills, strided copies between device buffers, and uploads from the host.
void fill(ExecContext& ctx, const RawTensor& dst, double value);
void copy(ExecContext& ctx, const RawTensor& src, const RawTensor& dst);

// reduce.cpp
RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes);
/// The f32 scalar (Σ loss)/denom of an f32 loss (the sum in f32, in a tree; denom a number or a
/// tensor on the device).
RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, const Kernels::Divisor& denom);

// norm_all.cpp: normAll's norm (the f64 lines pNorm and norm over all axes, from an f32 sum) and VJP.
RawTensor reduceF64(ExecContext& ctx, Kernels::F64Line op, const RawTensor& a, const Tags& axes, double param);
RawTensor pNormVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& norm, const RawTensor& gy, double p);

// along.cpp: extrema, products and scans along an axis; cumprod and linear recurrence rows.
Kernels::Along reduceAlong(ExecContext& ctx, Kernels::AlongAxis op, const RawTensor& a, Tag axis);
RawTensor cumprodRows(ExecContext& ctx, const RawTensor& x);
RawTensor cumprodRowsVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& y, const RawTensor& gy);
RawTensor linearRecurrenceRows(ExecContext& ctx, const RawTensor& x, const RawTensor& d, const RawTensor& h0);
Kernels::RecurrenceGrads linearRecurrenceRowsVjp(ExecContext& ctx, const RawTensor& d, const RawTensor& h0,
                                                 const RawTensor& y, const RawTensor& gy);

// softmax.cpp: rows along the last axis of contiguous f32.
RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log);
RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log);

// norm.cpp: layer, rms and l2 rows.
Kernels::NormRows normRows(ExecContext& ctx, const RawTensor& x, Kernels::Norm kind, double eps);
RawTensor normRowsVjp(ExecContext& ctx, Kernels::Norm kind, const Kernels::NormRows& saved, const RawTensor& gy);

// indexing.cpp: index and value checks on the device (Note [Device faults]), rows at i64 indices, gathers
// and scatters along an axis.
/// ignore: a value that is not checked (a loss's ignored label).
Kernels::IndexFault firstIndexOutside(ExecContext& ctx, const RawTensor& index, int64_t extent,
                                     std::optional<int64_t> ignore = std::nullopt);
Kernels::ValueFault firstValueOutside(ExecContext& ctx, const RawTensor& x, double lo, double hi);
RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index);
void updateRows(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                Kernels::RowUpdate how);
RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index);
void scatterAlong(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                  bool add);

// loss.cpp: label losses over log-probability rows, their rows in f32 (no f64 in WGSL).
RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, double smoothing, bool plain);
RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, const RawTensor& gy,
                           float scale, double smoothing, bool plain);

// cross_entropy.cpp: crossEntropyExt's rows (the logsumexp and losses in f32) and their VJP; the
// labels' weight sum as a scalar f32 tensor.
Kernels::Divisor labelWeightSum(ExecContext& ctx, const RawTensor& labels, const RawTensor& weights, int64_t ignore);
Kernels::CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x, const Kernels::CrossEntropy& ce,
                                           bool in_place);
Kernels::CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& lse,
                                               const Kernels::CrossEntropy& ce, const RawTensor& gy,
                                               const Kernels::Divisor& denom, bool need_x, bool need_target,
                                               bool in_place);

// distill.cpp: linearDistillExt's rows (the teacher's tempered softmax, the losses in f32) and VJP.
RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x, float inv_t);
RawTensor distillRows(ExecContext& ctx, const RawTensor& x, const Kernels::Distill& d);
RawTensor distillRowsVjp(ExecContext& ctx, const RawTensor& x, const Kernels::Distill& d, const RawTensor& gy);

// gemm.cpp
RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted,
                   const RawTensor& initial);

// conv.cpp: convolutions as implicit GEMMs, in either layout (Note [Channels last]).
RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                 const Extents& shape, const RawTensor& bias, bool relu);
RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                          const Tags& tags, const Extents& shape);
RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                           const Tags& tags, const Extents& shape);

// pool.cpp
Kernels::Pooled pool2d(ExecContext& ctx, Kernels::Pool kind, const RawTensor& x, const Conv2dGeometry& g,
                       size_t trailing, bool argmax);
RawTensor pool2dVjp(ExecContext& ctx, Kernels::Pool kind, const RawTensor& gy, const RawTensor& argmax,
                    const Conv2dGeometry& g, size_t trailing);

// sorting.cpp
Kernels::SortedRows sortRows(ExecContext& ctx, const RawTensor& rows, int64_t k, bool largest);

// upsample.cpp
RawTensor upsample2x(ExecContext& ctx, const RawTensor& x);
RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy);

// channel_affine.cpp
RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                        Tag channel);
Kernels::AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale,
                                      const RawTensor& gy, Tag channel, bool input, bool params);

// unfold.cpp: torch's unfold and fold (im2col, col2im) of contiguous images and columns.
RawTensor im2col(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                 const Extents& shape);
RawTensor col2im(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                 const Extents& shape);

// scatter_view.cpp: viewWithStrides's VJP, through a view whose elements may coincide.
void scatterAddView(ExecContext& ctx, const RawTensor& dst, const RawTensor& src);

// masked.cpp: maskedScatter by ranks scanned on the device (no host read of the mask).
Kernels::MaskedScatter maskedScatter(ExecContext& ctx, const RawTensor& a, const RawTensor& mask, const RawTensor& src);
Kernels::MaskedScatterGrads maskedScatterVjp(ExecContext& ctx, const RawTensor& where, const RawTensor& gy,
                                             const Tags& src_tags, const Extents& src_shape, bool need_a,
                                             bool need_src);

// slices.cpp: rollBy's and shiftBy's moves, their shifts read on the device.
RawTensor moveSlices(ExecContext& ctx, Kernels::SliceMove how, const RawTensor& src, Tag axis, Tag by_axis,
                     const RawTensor& shifts, bool adjoint);

// weights.cpp: the q8_0 and ternary quantizers, packed right operands (Bᵀ {columns..., depth} f32).
RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis);
RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w);
Kernels::PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last);
RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const Kernels::PackedB& b, const RawTensor& bias,
                        const Tags& tags, const Extents& shape);

// random.cpp
RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale);
// multinomial.cpp: the host's draws, in f64 emulated on the doubles' bits.
RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows, int64_t samples, uint64_t seed, bool replacement);

// attention.cpp
Kernels::Attention attention(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                             const RawTensor& v);
Kernels::AttentionGrads attentionVjp(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q,
                                     const RawTensor& k, const RawTensor& v, const RawTensor& probs,
                                     const RawTensor& gy, bool need_q, bool need_k, bool need_v);

// optim.cpp
void sgdUpdate(ExecContext& ctx, const SgdStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& buf);
void adamUpdate(ExecContext& ctx, const AdamStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& m,
                const RawTensor& v);
Kernels::GradNorm gradNorm(ExecContext& ctx, std::span<const RawTensor> grads, double max_norm);

}  // namespace fucina::backend::webgpu
