// The cpu backend: Kernels over the SIMD maps, the reductions and the GEMM of this folder, split
// over the context's work pool.
#include <array>
#include <type_traits>

#include "fucina/backend/cpu/attention.h"
#include "fucina/backend/cpu/contract_f64.h"
#include "fucina/backend/cpu/conv_core.h"
#include "fucina/backend/cpu/copy.h"
#include "fucina/backend/cpu/cross_entropy_rows.h"
#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/cpu/gated.h"
#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/cpu/gemm_simd.h"
#include "fucina/backend/cpu/indexing.h"
#include "fucina/backend/cpu/logic.h"
#include "fucina/backend/cpu/loss.h"
#include "fucina/backend/cpu/norm.h"
#include "fucina/backend/cpu/optim.h"
#include "fucina/backend/cpu/packed_product.h"
#include "fucina/backend/cpu/quantize.h"
#include "fucina/backend/cpu/reduce.h"
#include "fucina/backend/cpu/rope.h"
#include "fucina/backend/cpu/sampling.h"
#include "fucina/backend/cpu/softmax.h"
#include "fucina/backend/cpu/sorting.h"
#include "fucina/backend/cpu/spatial.h"
#include "fucina/backend/cpu/strided.h"
#include "fucina/backend/f64_lines.h"
#include "fucina/backend/kernels.h"
#include "fucina/backend/scan_rows.h"
#include "fucina/exec/context.h"

namespace fucina::backend {
namespace {

using MapFn = RawTensor (*)(ExecContext&, const Tags&, const Extents&, Inputs, const ElemParams&);
using MapAsFn = RawTensor (*)(ExecContext&, DType, const Tags&, const Extents&, Inputs, const ElemParams&);

// One form of a row over kernels::map, with the row's SIMD twin.
template <class Row, Form F>
RawTensor mapForm(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs in, const ElemParams& p) {
  if constexpr (F == Form::fwd) {
    if constexpr (Row::arity == 1)
      return kernels::map<1>(ctx, tags, shape, {in[0]}, [p](float a) { return Row::fwd(a, p); }, Row::simd.fwd);
    else
      return kernels::map<2>(ctx, tags, shape, {in[0], in[1]}, [p](float a, float b) { return Row::fwd(a, b, p); },
                             Row::simd.fwd);
  } else if constexpr (Row::arity == 1) {
    return kernels::map<3>(ctx, tags, shape, {in[0], in[1], in[2]},
                           [p](float g, float a, float y) { return Row::da(g, a, y, p); }, Row::simd.da);
  } else if constexpr (F == Form::da) {
    return kernels::map<4>(ctx, tags, shape, {in[0], in[1], in[2], in[3]},
                           [p](float g, float a, float b, float y) { return Row::da(g, a, b, y, p); }, Row::simd.da);
  } else {
    return kernels::map<4>(ctx, tags, shape, {in[0], in[1], in[2], in[3]},
                           [p](float g, float a, float b, float y) { return Row::db(g, a, b, y, p); }, Row::simd.db);
  }
}

// The forward in T: f64, or an integer type computed in its unsigned twin, whose arithmetic wraps
// by definition, and converted back (modular since C++20; u8 wraps mod 256 as torch's uint8).
template <class Row, class T>
RawTensor mapIn(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs in, const ElemParams& p) {
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (Row::arity == 1)
      return kernels::mapAs<T, 1>(ctx, tags, shape, {in[0]}, [p](T a) { return Row::fwd(a, p); });
    else
      return kernels::mapAs<T, 2>(ctx, tags, shape, {in[0], in[1]}, [p](T a, T b) { return Row::fwd(a, b, p); });
  } else {
    using U = std::make_unsigned_t<T>;
    if constexpr (Row::arity == 1)
      return kernels::mapAs<T, 1>(ctx, tags, shape, {in[0]},
                                  [p](T a) { return static_cast<T>(static_cast<U>(Row::fwd(static_cast<U>(a), p))); });
    else
      return kernels::mapAs<T, 2>(ctx, tags, shape, {in[0], in[1]}, [p](T a, T b) {
        return static_cast<T>(static_cast<U>(Row::fwd(static_cast<U>(a), static_cast<U>(b), p)));
      });
  }
}

template <class Row>
RawTensor mapAsRow(ExecContext& ctx, DType dtype, const Tags& tags, const Extents& shape, Inputs in,
                   const ElemParams& p) {
  if constexpr (Row::f64)
    if (dtype == DType::f64) return mapIn<Row, double>(ctx, tags, shape, in, p);
  if constexpr (Row::integer) {
    if (dtype == DType::i32) return mapIn<Row, int32_t>(ctx, tags, shape, in, p);
    if (dtype == DType::i64) return mapIn<Row, int64_t>(ctx, tags, shape, in, p);
    if (dtype == DType::u8) return mapIn<Row, uint8_t>(ctx, tags, shape, in, p);
  }
  failNoDTypeForm(elemOpOf<Row>(), dtype);
}

template <class Row>
constexpr std::array<MapFn, 3> formsOf() {
  if constexpr (!Row::partials) return {&mapForm<Row, Form::fwd>, nullptr, nullptr};
  else if constexpr (Row::arity == 2) return {&mapForm<Row, Form::fwd>, &mapForm<Row, Form::da>, &mapForm<Row, Form::db>};
  else return {&mapForm<Row, Form::fwd>, &mapForm<Row, Form::da>, nullptr};
}
#define FUCINA_CPU_FORMS(row) formsOf<rows::row>(),
constexpr std::array<std::array<MapFn, 3>, kElemOpCount> kForms{FUCINA_ELEMENTWISE_ROWS(FUCINA_CPU_FORMS)};
#undef FUCINA_CPU_FORMS
#define FUCINA_CPU_AS(row) &mapAsRow<rows::row>,
constexpr std::array<MapAsFn, kElemOpCount> kAs{FUCINA_ELEMENTWISE_ROWS(FUCINA_CPU_AS)};
#undef FUCINA_CPU_AS

// The forward and the kept partial of a contiguous a (Note [Kept partials]), for the rows with a
// `keep` kernel (nullptr for the others); the scalar forms where the SIMD kernels are off.
using KeepingFn = std::pair<RawTensor, RawTensor> (*)(ExecContext&, const RawTensor&, const ElemParams&);
template <class Row>
std::pair<RawTensor, RawTensor> keepRow(ExecContext& ctx, const RawTensor& a, const ElemParams& p) {
  RawTensor y = RawTensor::empty(ctx, a.tags(), a.shape()), d = RawTensor::empty(ctx, a.tags(), a.shape());
  const float* x = a.f32();
  float *py = y.f32(), *pd = d.f32();
  const bool simd = kernels::vec::enabled();
  ctx.parallelFor(a.numel(), kernels::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    if (simd) return Row::keep(end - begin, x + begin, py + begin, pd + begin);
    for (int64_t i = begin; i < end; ++i) {
      py[i] = Row::fwd(x[i], p);
      pd[i] = Row::da(1.0f, x[i], 0.0f, p);
    }
  });
  return {std::move(y), std::move(d)};
}
template <class Row>
constexpr KeepingFn keepingOf() {
  if constexpr (Row::arity == 1)
    if constexpr (Row::keep != nullptr) return &keepRow<Row>;
  return nullptr;
}
#define FUCINA_CPU_KEEP(row) keepingOf<rows::row>(),
constexpr std::array<KeepingFn, kElemOpCount> kKeeping{FUCINA_ELEMENTWISE_ROWS(FUCINA_CPU_KEEP)};
#undef FUCINA_CPU_KEEP

// The forward in place, for the rows that ask for it (nullptr for the others).
using UpdateFn = void (*)(ExecContext&, const RawTensor&, const RawTensor*, const ElemParams&);
template <class Row>
void updateRow(ExecContext& ctx, const RawTensor& dst, const RawTensor* src, const ElemParams& p) {
  if constexpr (Row::arity == 1)
    kernels::updateInto(ctx, dst, dst, [p](float d, float) { return Row::fwd(d, p); });
  else
    kernels::updateInto(ctx, dst, *src, [p](float d, float s) { return Row::fwd(d, s, p); });
}
template <class Row>
constexpr UpdateFn updateOf() {
  if constexpr (Row::in_place) return &updateRow<Row>;
  else return nullptr;
}
#define FUCINA_CPU_UPDATE(row) updateOf<rows::row>(),
constexpr std::array<UpdateFn, kElemOpCount> kUpdates{FUCINA_ELEMENTWISE_ROWS(FUCINA_CPU_UPDATE)};
#undef FUCINA_CPU_UPDATE

// Rows of a scan: rows of n elements in parallel, about 4096 elements per task.
template <class Fn>
void forRows(ExecContext& ctx, int64_t rows, int64_t n, Fn&& fn) {
  ctx.parallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) fn(r);
  });
}

class CpuKernels final : public Kernels {
 public:
  Backend backend() const override { return Backend::cpu; }

  RawTensor map(ExecContext& ctx, ElemOp op, Form form, const Tags& tags, const Extents& shape, Inputs ins,
                const ElemParams& p) const override {
    const MapFn fn = kForms[static_cast<size_t>(op)][static_cast<size_t>(form)];
    if (!fn) failNoForm(op, form);
    return fn(ctx, tags, shape, ins, p);
  }
  RawTensor mapAs(ExecContext& ctx, ElemOp op, DType dtype, const Tags& tags, const Extents& shape, Inputs ins,
                  const ElemParams& p) const override {
    return kAs[static_cast<size_t>(op)](ctx, dtype, tags, shape, ins, p);
  }
  std::optional<std::pair<RawTensor, RawTensor>> mapKeepingPartial(ExecContext& ctx, ElemOp op, const RawTensor& a,
                                                                   const ElemParams& p) const override {
    const KeepingFn fn = kKeeping[static_cast<size_t>(op)];
    if (!fn || !a.isContiguous() || a.dtype() != DType::f32) return std::nullopt;
    return fn(ctx, a, p);
  }
  void updateInto(ExecContext& ctx, ElemOp op, const RawTensor& dst, const RawTensor* src,
                  const ElemParams& p) const override {
    const UpdateFn fn = kUpdates[static_cast<size_t>(op)];
    if (!fn) failNotInPlace(op);
    fn(ctx, dst, src, p);
  }
  // A scalar operand (maskedFill's value, the VJPs' 0) is captured, so the map keeps two unit-stride
  // inputs and its vectorized loop.
  RawTensor select(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs ins) const override {
    if (ins[1]->rank() == 0) {
      const float x = *ins[1]->f32();
      return kernels::map<2>(ctx, tags, shape, {ins[0], ins[2]}, [x](float c, float y) { return c != 0.0f ? x : y; });
    }
    if (ins[2]->rank() == 0) {
      const float y = *ins[2]->f32();
      return kernels::map<2>(ctx, tags, shape, {ins[0], ins[1]}, [y](float c, float x) { return c != 0.0f ? x : y; });
    }
    return kernels::map<3>(ctx, tags, shape, {ins[0], ins[1], ins[2]},
                           [](float c, float x, float y) { return c != 0.0f ? x : y; });
  }

  void copy(ExecContext& ctx, const RawTensor& src, const RawTensor& dst) const override {
    kernels::copyConvert(src, dst, &ctx);
  }
  void fill(ExecContext& ctx, const RawTensor& dst, double value) const override { kernels::fill(dst, value, &ctx); }
  RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes) const override {
    return kernels::sumAxes(ctx, a, axes);
  }
  void addInto(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) const override {
    kernels::addInto(ctx, dst, src);
  }
  RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted,
                     const RawTensor& initial) const override {
    return kernels::contract(ctx, a, b, contracted, initial);
  }
  RawTensor contractF64(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted) const override {
    return kernels::contractF64(ctx, a, b, contracted);
  }

  RawTensor cumprodRows(ExecContext& ctx, const RawTensor& x) const override {
    const RowLayout l = rowLayout(x);
    RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
    const float* px = x.f32();
    float* py = y.f32();
    forRows(ctx, l.rows, l.n, [&](int64_t r) { scan::cumprodRow(px + r * l.n, py + r * l.n, l.n); });
    return y;
  }
  RawTensor cumprodRowsVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& y,
                           const RawTensor& gy) const override {
    const RowLayout l = rowLayout(x);
    RawTensor gx = RawTensor::empty(ctx, x.tags(), x.shape());
    const float *px = x.f32(), *py = y.f32(), *pg = gy.f32();
    float* out = gx.f32();
    forRows(ctx, l.rows, l.n, [&](int64_t r) {
      const int64_t o = r * l.n;
      scan::cumprodRowVjp(px + o, py + o, pg + o, out + o, l.n);
    });
    return gx;
  }
  RawTensor linearRecurrenceRows(ExecContext& ctx, const RawTensor& x, const RawTensor& d,
                                 const RawTensor& h0) const override {
    const RowLayout l = recurrenceLayout(x, h0);
    RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
    const float *px = x.f32(), *pd = d.f32(), *ph = h0.f32();
    float* py = y.f32();
    forRows(ctx, l.rows, l.n, [&](int64_t r) {
      const int64_t o = r * l.n;
      scan::recurrenceRow(px + o, pd + o, ph[r], py + o, l.n);
    });
    return y;
  }
  RecurrenceGrads linearRecurrenceRowsVjp(ExecContext& ctx, const RawTensor& d, const RawTensor& h0,
                                          const RawTensor& y, const RawTensor& gy) const override {
    const RowLayout l = recurrenceLayout(y, h0);
    RecurrenceGrads g{RawTensor::empty(ctx, y.tags(), y.shape()), RawTensor::empty(ctx, y.tags(), y.shape()),
                      RawTensor::empty(ctx, h0.tags(), h0.shape())};
    const float *pd = d.f32(), *ph = h0.f32(), *py = y.f32(), *pg = gy.f32();
    float *ox = g.x.f32(), *od = g.d.f32(), *oh = g.h0.f32();
    forRows(ctx, l.rows, l.n, [&](int64_t r) {
      const int64_t o = r * l.n;
      oh[r] = scan::recurrenceRowVjp(pd + o, ph[r], py + o, pg + o, ox + o, od + o, l.n);
    });
    return g;
  }

  IndexFault firstIndexOutside(ExecContext&, const RawTensor& index, int64_t extent) const override {
    return kernels::firstIndexOutside(index, extent);
  }
  ValueFault firstValueOutside(ExecContext&, const RawTensor& x, double lo, double hi) const override {
    return kernels::firstValueOutside(x, lo, hi);
  }
  RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) const override {
    return kernels::gatherAlong(ctx, table, axis, index);
  }
  void scatterAlong(ExecContext&, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                    bool add) const override {
    kernels::scatterAlong(dst, axis, index, src, add);
  }
  RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) const override {
    return kernels::selectRows(ctx, table, axis, index);
  }
  void updateRows(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                  RowUpdate how) const override {
    kernels::updateRows(ctx, dst, axis, index, src, how);
  }
  RawTensor maskPositions(ExecContext& ctx, const RawTensor& mask, Tag tag) const override {
    return kernels::maskPositions(ctx, mask, tag);
  }
  SortedRows sortRows(ExecContext& ctx, const RawTensor& rows, int64_t k, bool largest) const override {
    return kernels::sortRows(ctx, rows, k, largest);
  }
  RawTensor argExtremumRows(ExecContext& ctx, const RawTensor& rows, bool largest) const override {
    return kernels::argExtremumRows(ctx, rows, largest);
  }
  RawTensor logic(ExecContext& ctx, Logic op, const Tags& tags, const Extents& shape, Inputs ins) const override {
    return kernels::logic(ctx, op, tags, shape, ins);
  }
  RawTensor truthRows(ExecContext& ctx, const RawTensor& truth, bool any) const override {
    return kernels::truthRows(ctx, truth, any);
  }
  RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower,
                     int64_t upper) const override {
    return kernels::bandMask(ctx, row, col, rows, cols, lower, upper);
  }
  RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale) const override {
    return kernels::dropout(ctx, x, seed, p, keep_scale);
  }
  RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows, int64_t samples, uint64_t seed, bool replacement,
                            const std::string& what) const override {
    return kernels::multinomialRows(ctx, rows, samples, seed, replacement, what);
  }
  RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                   const Extents& shape, const RawTensor& bias, bool relu) const override {
    return kernels::conv2d(ctx, x, w, p, tags, shape, bias, relu);
  }
  RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                            const Tags& tags, const Extents& shape) const override {
    return kernels::conv2dInputGrad(ctx, gy, w, p, tags, shape);
  }
  RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                             const Tags& tags, const Extents& shape) const override {
    return kernels::conv2dWeightGrad(ctx, x, gy, p, tags, shape);
  }
  ConvGrads conv2dVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& relu_y, const RawTensor& x,
                      const RawTensor& w, const ConvPlan& p, const ConvGradLayout& layout, bool bias) const override {
    if (!kernels::fusedVjp(p) || gy.numel() == 0) return Kernels::conv2dVjp(ctx, gy, relu_y, x, w, p, layout, bias);
    return kernels::conv2dVjp(ctx, gy, relu_y, x, w, p, layout, bias);
  }
  Pooled conv2dReluPool(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                        const Extents& shape, const RawTensor& bias, const Conv2dGeometry& pool, size_t trailing,
                        bool argmax) const override {
    if (!kernels::fusedPool(p) || numelOf(shape) == 0)
      return Kernels::conv2dReluPool(ctx, x, w, p, tags, shape, bias, pool, trailing, argmax);
    return kernels::conv2dReluPool(ctx, x, w, p, tags, shape, bias, pool, argmax);
  }
  ConvGrads conv2dReluPoolVjp(ExecContext& ctx, const RawTensor& gy, const RawTensor& pooled, const RawTensor& argmax,
                              const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Conv2dGeometry& pool,
                              size_t trailing, const ConvGradLayout& layout, bool bias) const override {
    if (!kernels::fusedVjp(p) || gy.numel() == 0)  // fusedVjp's plans are fusedPool's too
      return Kernels::conv2dReluPoolVjp(ctx, gy, pooled, argmax, x, w, p, pool, trailing, layout, bias);
    return kernels::conv2dReluPoolVjp(ctx, gy, pooled, argmax, x, w, p, pool, layout, bias);
  }
  RawTensor winogradWeights(ExecContext& ctx, const RawTensor& w, int64_t groups) const override {
    return kernels::winogradWeights(ctx, w, groups);
  }
  RawTensor winogradConv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& u, const ConvPlan& p,
                           const Tags& tags, const Extents& shape, const RawTensor& bias, bool relu) const override {
    return kernels::winogradConv2d(ctx, x, u, p, tags, shape, bias, relu);
  }
  RawTensor im2col(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                   const Extents& shape) const override {
    return kernels::im2colImages(ctx, images, g, tags, shape);
  }
  RawTensor col2im(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                   const Extents& shape) const override {
    return kernels::col2imImages(ctx, cols, g, tags, shape);
  }
  Pooled pool2d(ExecContext& ctx, Pool kind, const RawTensor& x, const Conv2dGeometry& g, size_t trailing,
                bool argmax) const override {
    return kernels::pool2d(ctx, kind, x, g, trailing, argmax);
  }
  RawTensor pool2dVjp(ExecContext& ctx, Pool kind, const RawTensor& gy, const RawTensor& argmax,
                      const Conv2dGeometry& g, size_t trailing) const override {
    return kernels::pool2dVjp(ctx, kind, gy, argmax, g, trailing);
  }
  RawTensor upsample2x(ExecContext& ctx, const RawTensor& x) const override { return kernels::upsample2x(ctx, x); }
  RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy) const override {
    return kernels::upsample2xVjp(ctx, gy);
  }
  RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                          Tag channel) const override {
    return kernels::channelAffine(ctx, x, scale, shift, channel);
  }
  AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& gy,
                               Tag channel, bool input, bool params) const override {
    return kernels::channelAffineVjp(ctx, x, scale, gy, channel, input, params);
  }
  RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log) const override {
    return kernels::softmaxRows(ctx, x, log);
  }
  RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log) const override {
    return kernels::softmaxRowsVjp(ctx, y, gy, log);
  }
  NormRows normRows(ExecContext& ctx, const RawTensor& x, Norm kind, double eps) const override {
    return kernels::normRows(ctx, x, kind, eps);
  }
  RawTensor normRowsVjp(ExecContext& ctx, Norm kind, const NormRows& saved, const RawTensor& gy) const override {
    return kernels::normRowsVjp(ctx, kind, saved, gy);
  }
  IndexFault firstLabelOutside(ExecContext&, const RawTensor& labels, int64_t classes,
                               std::optional<int64_t> ignore) const override {
    return kernels::firstLabelOutside(labels, classes, ignore);
  }
  RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, double smoothing,
                          bool plain) const override {
    return kernels::labelLossRows(ctx, lp, labels, smoothing, plain);
  }
  RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, const RawTensor& gy,
                             float scale, double smoothing, bool plain) const override {
    return kernels::labelLossRowsVjp(ctx, lp, labels, gy, scale, smoothing, plain);
  }
  RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, const Divisor& denom) const override {
    return kernels::reduceLoss(ctx, loss, denom.host());
  }
  Divisor labelWeightSum(ExecContext&, const RawTensor& labels, const RawTensor& weights,
                        int64_t ignore) const override {
    return kernels::labelWeightSum(labels, weights, ignore);
  }
  CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x, const CrossEntropy& ce,
                                    bool in_place) const override {
    return kernels::crossEntropyRows(ctx, x, ce, in_place);
  }
  CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& lse,
                                        const CrossEntropy& ce, const RawTensor& gy, const Divisor& denom, bool need_x,
                                        bool need_target, bool in_place) const override {
    return kernels::crossEntropyRowsVjp(ctx, lp, lse, ce, gy, denom.host(), need_x, need_target, in_place);
  }
  RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x, float inv_t) const override {
    return kernels::temperatureSoftmaxRows(ctx, x, inv_t);
  }
  RawTensor distillRows(ExecContext& ctx, const RawTensor& x, const Distill& d) const override {
    return kernels::distillRows(ctx, x, d);
  }
  RawTensor distillRowsVjp(ExecContext& ctx, const RawTensor& x, const Distill& d,
                           const RawTensor& gy) const override {
    return kernels::distillRowsVjp(ctx, x, d, gy);
  }
  RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin, RopePairs pairs,
                     bool inverse) const override {
    return kernels::ropeRows(ctx, x, cos, sin, pairs, inverse);
  }
  RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base,
                        int64_t offset) const override {
    return kernels::ropeTables(ctx, position, dim, T, D, base, offset);
  }
  RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const RawTensor& cos,
                              const RawTensor& sin, double eps) const override {
    return kernels::rmsNormRopeRows(ctx, x, w, cos, sin, eps);
  }
  RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const RmsRopeRows& saved, const RawTensor& w, const RawTensor& cos,
                                  const RawTensor& sin, const RawTensor& gy, bool need_x, bool need_w) const override {
    return kernels::rmsNormRopeRowsVjp(ctx, saved, w, cos, sin, gy, need_x, need_w);
  }
  RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate) const override {
    return kernels::gated(ctx, fn, up, gate);
  }
  void gatedVjp(ExecContext& ctx, const GateFn& fn, const RawTensor& gy, const RawTensor& up, const RawTensor& gate,
                const RawTensor& gup, const RawTensor& ggate) const override {
    kernels::gatedVjp(ctx, fn, gy, up, gate, gup, ggate);
  }
  Along reduceAlong(ExecContext& ctx, AlongAxis op, const RawTensor& a, Tag axis) const override {
    return kernels::reduceAlong(ctx, op, a, axis);
  }
  RawTensor reduceF64(ExecContext& ctx, F64Line op, const RawTensor& a, const Tags& axes,
                      double param) const override {
    return reduceF64Lines(ctx, op, a, axes, param);
  }
  RawTensor pNormVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& norm, const RawTensor& gy,
                     double p) const override {
    return pNormVjpLoop(ctx, x, norm, gy, p);
  }
  Attention attention(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                      const RawTensor& v) const override {
    return kernels::attention(ctx, g, q, k, v);
  }
  AttentionGrads attentionVjp(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                              const RawTensor& v, const RawTensor& probs, const RawTensor& gy, bool need_q,
                              bool need_k, bool need_v) const override {
    return kernels::attentionVjp(ctx, g, q, k, v, probs, gy, need_q, need_k, need_v);
  }

  std::vector<int64_t> readI64(ExecContext& ctx, const RawTensor& t) const override {
    const RawTensor v = t.to(ctx, DType::i64);
    const int64_t* p = v.data<int64_t>();
    return {p, p + v.numel()};
  }
  // One pass over a copy, on the calling thread.
  RawTensor band(ExecContext& ctx, const RawTensor& a, Tag row, Tag col, int64_t lo, int64_t hi) const override {
    RawTensor out = a.clone(ctx);
    const size_t pr = out.axis(row), pc = out.axis(col);
    const int64_t sr = out.strides()[pr], sc = out.strides()[pc];
    const int64_t nr = out.shape()[pr], nc = out.shape()[pc];
    float* o = out.f32();
    for (int64_t lin = 0, n = out.numel(); lin < n; ++lin) {
      const int64_t i = (lin / sr) % nr, j = (lin / sc) % nc;
      if (j - i < lo || j - i > hi) o[lin] = 0.0f;
    }
    return out;
  }
  // One thread, since the strides may send several elements of src to one element of dst.
  void scatterAddView(ExecContext&, const RawTensor& dst, const RawTensor& src) const override {
    if (src.numel() == 0) return;
    const auto plan = kernels::planStrided<2>(src.shape(), {&src.strides(), &dst.strides()});
    const float* s = src.f32();
    float* d = dst.f32();
    kernels::forEachRow(plan, 0, plan.outer(), [&](const auto& off, int64_t n, const auto& st) {
      for (int64_t i = 0; i < n; ++i) d[off[1] + i * st[1]] += s[off[0] + i * st[0]];
    });
  }
  RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis) const override {
    return kernels::quantizeQ8(ctx, a, block_axis);
  }
  RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w) const override {
    return kernels::ternaryQuantize(ctx, w);
  }
  PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last) const override {
    return kernels::packRhs(ctx, b, depth_last);
  }
  int64_t packedLayout() const override { return kernels::detail::gemmPanelCols(); }
  RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const PackedB& b, const RawTensor& bias,
                          const Tags& tags, const Extents& shape) const override {
    return kernels::packedProduct(ctx, a, b, bias, tags, shape);
  }
  void sgdUpdate(ExecContext& ctx, const SgdStep& s, const RawTensor& p, const RawTensor& g,
                 const RawTensor& buf) const override {
    kernels::sgdUpdate(ctx, s, p, g, buf);
  }
  void adamUpdate(ExecContext& ctx, const AdamStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& m,
                  const RawTensor& v) const override {
    kernels::adamUpdate(ctx, s, p, g, m, v);
  }
  double sumSquares(ExecContext&, const RawTensor& x) const override { return kernels::sumSquares(x); }
};

}  // namespace

const Kernels& cpuKernels() {
  static const CpuKernels kernels;
  return kernels;
}

}  // namespace fucina::backend
