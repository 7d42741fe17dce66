// The reference backend: every primitive as the plainest loop that states it, over logical
// indices, on the calling thread, accumulating in f64 where a sum is involved. It is the oracle
// the cpu backend's SIMD, threaded and blocked kernels are tested against
// (tests/cpp/backend_tests.cpp), and a context with ExecOptions::backend = Backend::reference
// trains on it.
#include <array>
#include <type_traits>
#include <vector>

#include "fucina/backend/cpu/gemm.h"
#include "fucina/backend/element_io.h"
#include "fucina/backend/f64_lines.h"
#include "fucina/backend/kernels.h"
#include "fucina/backend/reference/attention.h"
#include "fucina/backend/reference/indexing.h"
#include "fucina/backend/reference/logic.h"
#include "fucina/backend/reference/reduce_along.h"
#include "fucina/backend/reference/row_kernels.h"
#include "fucina/backend/reference/sampling.h"
#include "fucina/backend/reference/sorting.h"
#include "fucina/backend/reference/weights.h"
#include "fucina/backend/reference/spatial.h"
#include "fucina/backend/scalar_loop.h"
#include "fucina/backend/scan_rows.h"
#include "fucina/core/error.h"
#include "fucina/core/q8.h"
#include "fucina/exec/context.h"

namespace fucina::backend {
namespace {

// Element `off` of t's buffer (an element offset from its first element), converted to T.
template <class T>
T load(const RawTensor& t, int64_t off) {
  switch (t.dtype()) {
    case DType::f32: return static_cast<T>(t.data<float>()[off]);
    case DType::f64: return static_cast<T>(t.data<double>()[off]);
    case DType::i32: return static_cast<T>(t.data<int32_t>()[off]);
    case DType::i64: return static_cast<T>(t.data<int64_t>()[off]);
    case DType::u8: return static_cast<T>(t.data<uint8_t>()[off]);
    case DType::f16: return static_cast<T>(f16ToF32(t.data<uint16_t>()[off]));
    case DType::bf16: return static_cast<T>(bf16ToF32(t.data<uint16_t>()[off]));
    case DType::q8_0: break;
  }
  fail(ErrorCode::DTypeMismatch, "the reference kernels read no q8_0 element by element: " + t.describe());
}

// Walks the logical indices of `shape` in row-major order, keeping each view's element offset.
template <size_t K>
struct Odometer {
  Odometer(const Extents& shape, const std::array<const std::vector<int64_t>*, K>& strides)
      : shape_(shape), strides_(strides), index_(shape.size(), 0) {}
  const std::array<int64_t, K>& offsets() const { return off_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      for (size_t k = 0; k < K; ++k) off_[k] += (*strides_[k])[d];
      if (++index_[d] < shape_[d]) return;
      for (size_t k = 0; k < K; ++k) off_[k] -= (*strides_[k])[d] * shape_[d];
      index_[d] = 0;
    }
  }

 private:
  const Extents& shape_;
  std::array<const std::vector<int64_t>*, K> strides_;
  std::vector<int64_t> index_;
  std::array<int64_t, K> off_{};
};

// `in` broadcast to (tags, shape) as a dense array of T, read element by element.
template <class T>
RawTensor denseAs(ExecContext& ctx, const RawTensor& in, const Tags& tags, const Extents& shape) {
  if constexpr (std::is_same_v<T, float>) in.f32();  // the f32 forms take f32 only (DTypeMismatch)
  const RawTensor v = in.broadcastView(tags, shape);
  RawTensor out = RawTensor::empty(ctx, tags, shape, dtypeOf<T>());
  T* o = out.data<T>();
  Odometer<1> at(shape, {&v.strides()});
  for (int64_t i = 0, n = out.numel(); i < n; ++i, at.next()) o[i] = load<T>(v, at.offsets()[0]);
  return out;
}

// out[i] = f(in_0[i], ...) computed in T over (tags, shape), written as Out. The inputs are made
// dense first, so each row's loop is one flat scalar loop (kept small: every row of the table
// instantiates it for each form and element type).
template <class Out, class T, size_t K, class F>
RawTensor mapScalar(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs in, F f) {
  RawTensor out = RawTensor::empty(ctx, tags, shape, dtypeOf<Out>());
  if (out.numel() == 0) return out;
  std::array<RawTensor, K> dense;
  std::array<const T*, K> p;
  for (size_t k = 0; k < K; ++k) {
    dense[k] = denseAs<T>(ctx, *in[k], tags, shape);
    p[k] = dense[k].template data<T>();
  }
  Out* o = out.data<Out>();
  FUCINA_SCALAR_LOOP
  for (int64_t i = 0, n = out.numel(); i < n; ++i)
    o[i] = static_cast<Out>([&]<size_t... I>(std::index_sequence<I...>) { return f(p[I][i]...); }(
        std::make_index_sequence<K>{}));
  return out;
}

template <class Row, Form F>
RawTensor mapForm(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs in, const ElemParams& p) {
  if constexpr (F == Form::fwd) {
    if constexpr (Row::arity == 1)
      return mapScalar<float, float, 1>(ctx, tags, shape, in, [&](float a) { return Row::fwd(a, p); });
    else
      return mapScalar<float, float, 2>(ctx, tags, shape, in, [&](float a, float b) { return Row::fwd(a, b, p); });
  } else if constexpr (Row::arity == 1) {
    return mapScalar<float, float, 3>(ctx, tags, shape, in, [&](float g, float a, float y) { return Row::da(g, a, y, p); });
  } else if constexpr (F == Form::da) {
    return mapScalar<float, float, 4>(ctx, tags, shape, in,
                                      [&](float g, float a, float b, float y) { return Row::da(g, a, b, y, p); });
  } else {
    return mapScalar<float, float, 4>(ctx, tags, shape, in,
                                      [&](float g, float a, float b, float y) { return Row::db(g, a, b, y, p); });
  }
}

// The forward in T; integers in their unsigned twin, which wraps (as the cpu backend).
template <class Row, class T>
RawTensor mapIn(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs in, const ElemParams& p) {
  using U = typename std::conditional_t<std::is_floating_point_v<T>, std::type_identity<T>, std::make_unsigned<T>>::type;
  if constexpr (Row::arity == 1)
    return mapScalar<T, T, 1>(ctx, tags, shape, in, [&](T a) { return static_cast<T>(static_cast<U>(Row::fwd(static_cast<U>(a), p))); });
  else
    return mapScalar<T, T, 2>(ctx, tags, shape, in, [&](T a, T b) {
      return static_cast<T>(static_cast<U>(Row::fwd(static_cast<U>(a), static_cast<U>(b), p)));
    });
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

using MapFn = RawTensor (*)(ExecContext&, const Tags&, const Extents&, Inputs, const ElemParams&);
using MapAsFn = RawTensor (*)(ExecContext&, DType, const Tags&, const Extents&, Inputs, const ElemParams&);
template <class Row>
constexpr std::array<MapFn, 3> formsOf() {
  if constexpr (!Row::partials) return {&mapForm<Row, Form::fwd>, nullptr, nullptr};
  else if constexpr (Row::arity == 2) return {&mapForm<Row, Form::fwd>, &mapForm<Row, Form::da>, &mapForm<Row, Form::db>};
  else return {&mapForm<Row, Form::fwd>, &mapForm<Row, Form::da>, nullptr};
}
#define FUCINA_REF_FORMS(row) formsOf<rows::row>(),
constexpr std::array<std::array<MapFn, 3>, kElemOpCount> kForms{FUCINA_ELEMENTWISE_ROWS(FUCINA_REF_FORMS)};
#undef FUCINA_REF_FORMS
#define FUCINA_REF_AS(row) &mapAsRow<rows::row>,
constexpr std::array<MapAsFn, kElemOpCount> kAs{FUCINA_ELEMENTWISE_ROWS(FUCINA_REF_AS)};
#undef FUCINA_REF_AS

// The forward in place, element after element, for the rows that ask for it.
using UpdateFn = void (*)(ExecContext&, const RawTensor&, const RawTensor*, const ElemParams&);
template <class Row>
void updateRow(ExecContext&, const RawTensor& dst, const RawTensor* src, const ElemParams& p) {
  if (dst.numel() == 0) return;
  float* d = dst.f32();
  if constexpr (Row::arity == 1) {
    Odometer<1> at(dst.shape(), {&dst.strides()});
    for (int64_t i = 0, n = dst.numel(); i < n; ++i, at.next()) d[at.offsets()[0]] = Row::fwd(d[at.offsets()[0]], p);
  } else {
    const RawTensor s = src->broadcastView(dst.tags(), dst.shape());
    const float* ps = s.f32();
    Odometer<2> at(dst.shape(), {&s.strides(), &dst.strides()});
    for (int64_t i = 0, n = dst.numel(); i < n; ++i, at.next())
      d[at.offsets()[1]] = Row::fwd(d[at.offsets()[1]], ps[at.offsets()[0]], p);
  }
}
template <class Row>
constexpr UpdateFn updateOf() {
  if constexpr (Row::in_place) return &updateRow<Row>;
  else return nullptr;
}
#define FUCINA_REF_UPDATE(row) updateOf<rows::row>(),
constexpr std::array<UpdateFn, kElemOpCount> kUpdates{FUCINA_ELEMENTWISE_ROWS(FUCINA_REF_UPDATE)};
#undef FUCINA_REF_UPDATE

// out[j] = Σ over the summed axes of a, in f64, in row-major order of a.
RawTensor sumOver(ExecContext& ctx, const RawTensor& a, const Tags& axes) {
  Tags kept_tags;
  Extents kept_shape;
  for (Tag tag : axes) a.axis(tag);  // every reduced axis must exist (ShapeMismatch)
  for (size_t i = 0; i < a.rank(); ++i)
    if (!hasTag(axes, a.tags()[i])) {
      kept_tags.push_back(a.tags()[i]);
      kept_shape.push_back(a.shape()[i]);
    }
  RawTensor out = RawTensor::empty(ctx, kept_tags, kept_shape, DType::f32);
  std::vector<double> acc(static_cast<size_t>(out.numel()), 0.0);
  if (a.numel() > 0) {
    const std::vector<int64_t> kept = contiguousStrides(kept_shape);
    std::vector<int64_t> into(a.rank(), 0);  // the accumulator's strides seen from a's axes
    for (size_t i = 0, j = 0; i < a.rank(); ++i)
      if (!hasTag(axes, a.tags()[i])) into[i] = kept[j++];
    const float* src = a.f32();
    Odometer<2> at(a.shape(), {&a.strides(), &into});
    for (int64_t i = 0, n = a.numel(); i < n; ++i, at.next())
      acc[static_cast<size_t>(at.offsets()[1])] += src[at.offsets()[0]];
  }
  float* o = out.f32();
  for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<float>(acc[i]);
  return out;
}

// An f32 view of t: t itself, or its values converted (the typed right operands of contract).
RawTensor asF32(ExecContext& ctx, const RawTensor& t) { return t.dtype() == DType::f32 ? t : t.to(ctx, DType::f32); }

// C[batch, a_free, b_free] = Σ_k A·B in f64 per element, plus `initial`, then the result order;
// a and b of element type T, the result too.
template <class T>
RawTensor contractIn(ExecContext& ctx, const RawTensor& a, const RawTensor& fb, const Tags& contracted,
                   const RawTensor& initial) {
  const kernels::ContractionAxes axes = kernels::contractionAxes(a, fb, contracted);
  Tags out_tags;
  Extents out_shape;
  for (const Tags* group : {&axes.batch, &axes.a_free})
    for (Tag t : *group) {
      out_tags.push_back(t);
      out_shape.push_back(a.extent(t));
    }
  for (Tag t : axes.b_free) {
    out_tags.push_back(t);
    out_shape.push_back(fb.extent(t));
  }
  Extents k_shape;
  for (Tag t : contracted) k_shape.push_back(a.extent(t));
  RawTensor out = RawTensor::empty(ctx, out_tags, out_shape, dtypeOf<T>());
  // Every operand seen over the result's axes then the contracted ones (stride 0 where absent).
  Tags all = out_tags;
  all.insert(all.end(), contracted.begin(), contracted.end());
  auto stridesOver = [&](const RawTensor& t) {
    std::vector<int64_t> s(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i)
      if (auto j = findTag(t.tags(), all[i])) s[i] = t.strides()[*j];
    return s;
  };
  const std::vector<int64_t> sa = stridesOver(a), sb = stridesOver(fb);
  const size_t r = out_tags.size();
  const std::vector<int64_t> oa(sa.begin(), sa.begin() + r), ob(sb.begin(), sb.begin() + r);
  const std::vector<int64_t> ka(sa.begin() + r, sa.end()), kb(sb.begin() + r, sb.end());
  const int64_t depth = numelOf(k_shape);
  const RawTensor init = initial.valid() ? initial.broadcastView(out_tags, out_shape) : RawTensor();
  const std::vector<int64_t> oi = init.valid() ? init.strides() : std::vector<int64_t>(r, 0);
  const T *pa = a.data<T>(), *pb = fb.data<T>();
  T* pc = out.data<T>();
  Odometer<3> o(out_shape, {&oa, &ob, &oi});
  for (int64_t i = 0, n = out.numel(); i < n; ++i, o.next()) {
    double s = init.valid() ? load<double>(init, o.offsets()[2]) : 0.0;
    Odometer<2> k(k_shape, {&ka, &kb});
    for (int64_t p = 0; p < depth; ++p, k.next())
      s += static_cast<double>(pa[o.offsets()[0] + k.offsets()[0]]) * pb[o.offsets()[1] + k.offsets()[1]];
    pc[i] = static_cast<T>(s);
  }
  return kernels::inResultOrder(ctx, out, a, contracted, axes.b_free);
}

class ReferenceKernels final : public Kernels {
 public:
  Backend backend() const override { return Backend::reference; }

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
  void updateInto(ExecContext& ctx, ElemOp op, const RawTensor& dst, const RawTensor* src,
                  const ElemParams& p) const override {
    const UpdateFn fn = kUpdates[static_cast<size_t>(op)];
    if (!fn) failNotInPlace(op);
    fn(ctx, dst, src, p);
  }
  RawTensor select(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs ins) const override {
    return mapScalar<float, float, 3>(ctx, tags, shape, ins, [](float c, float x, float y) { return c != 0.0f ? x : y; });
  }

  void copy(ExecContext&, const RawTensor& src, const RawTensor& dst) const override {
    if (src.shape() != dst.shape())
      fail(ErrorCode::ShapeMismatch, "copy from " + src.describe() + " into " + dst.describe());
    if (dst.dtype() == DType::q8_0)
      fail(ErrorCode::DTypeMismatch, "cannot write into q8_0 " + dst.describe() + " element by element");
    if (src.numel() == 0) return;
    const std::byte* s = src.storage()->data();
    std::byte* d = dst.storage()->data();
    Odometer<2> at(src.shape(), {&src.strides(), &dst.strides()});
    for (int64_t i = 0, n = src.numel(); i < n; ++i, at.next()) {
      const int64_t from = src.offset() + at.offsets()[0];
      const double v = src.dtype() == DType::q8_0 ? q8::load(s, from) : io::load(s, src.dtype(), from);
      io::store(d, dst.dtype(), dst.offset() + at.offsets()[1], v);
    }
  }
  void fill(ExecContext&, const RawTensor& dst, double value) const override {
    if (dst.numel() == 0) return;
    std::byte* d = dst.storage()->data();
    Odometer<1> at(dst.shape(), {&dst.strides()});
    for (int64_t i = 0, n = dst.numel(); i < n; ++i, at.next()) io::store(d, dst.dtype(), dst.offset() + at.offsets()[0], value);
  }
  RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes) const override {
    return sumOver(ctx, a, axes);
  }
  void addInto(ExecContext&, const RawTensor& dst, const RawTensor& src) const override {
    if (dst.numel() == 0) return;
    const RawTensor s = src.broadcastView(dst.tags(), dst.shape());
    const float* ps = s.f32();
    float* pd = dst.f32();
    Odometer<2> at(dst.shape(), {&s.strides(), &dst.strides()});
    for (int64_t i = 0, n = dst.numel(); i < n; ++i, at.next()) pd[at.offsets()[1]] += ps[at.offsets()[0]];
  }

  // C[batch, a_free, b_free] = Σ_k A·B in f64 per element, plus `initial`, then the result order.
  RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted,
                     const RawTensor& initial) const override {
    kernels::contractionAxes(a, b, contracted);  // ShapeMismatch first, as the cpu backend
    if (a.dtype() != DType::f32)
      fail(ErrorCode::DTypeMismatch, "contract: the left operand " + a.describe() + " must be f32, got " +
                                         std::string(fucina::name(a.dtype())));
    return contractIn<float>(ctx, a, asF32(ctx, b), contracted, initial);
  }
  RawTensor contractF64(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted) const override {
    kernels::contractionAxes(a, b, contracted);  // ShapeMismatch before any conversion
    return contractIn<double>(ctx, a.to(ctx, DType::f64), b.to(ctx, DType::f64), contracted, RawTensor());
  }

  RawTensor cumprodRows(ExecContext& ctx, const RawTensor& x) const override {
    const RowLayout l = rowLayout(x);
    RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
    for (int64_t r = 0; r < l.rows; ++r) scan::cumprodRow(x.f32() + r * l.n, y.f32() + r * l.n, l.n);
    return y;
  }
  RawTensor cumprodRowsVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& y,
                           const RawTensor& gy) const override {
    const RowLayout l = rowLayout(x);
    RawTensor gx = RawTensor::empty(ctx, x.tags(), x.shape());
    for (int64_t r = 0, o = 0; r < l.rows; ++r, o += l.n)
      scan::cumprodRowVjp(x.f32() + o, y.f32() + o, gy.f32() + o, gx.f32() + o, l.n);
    return gx;
  }
  RawTensor linearRecurrenceRows(ExecContext& ctx, const RawTensor& x, const RawTensor& d,
                                 const RawTensor& h0) const override {
    const RowLayout l = recurrenceLayout(x, h0);
    RawTensor y = RawTensor::empty(ctx, x.tags(), x.shape());
    for (int64_t r = 0, o = 0; r < l.rows; ++r, o += l.n)
      scan::recurrenceRow(x.f32() + o, d.f32() + o, h0.f32()[r], y.f32() + o, l.n);
    return y;
  }
  RecurrenceGrads linearRecurrenceRowsVjp(ExecContext& ctx, const RawTensor& d, const RawTensor& h0,
                                          const RawTensor& y, const RawTensor& gy) const override {
    const RowLayout l = recurrenceLayout(y, h0);
    RecurrenceGrads g{RawTensor::empty(ctx, y.tags(), y.shape()), RawTensor::empty(ctx, y.tags(), y.shape()),
                      RawTensor::empty(ctx, h0.tags(), h0.shape())};
    for (int64_t r = 0, o = 0; r < l.rows; ++r, o += l.n)
      g.h0.f32()[r] = scan::recurrenceRowVjp(d.f32() + o, h0.f32()[r], y.f32() + o, gy.f32() + o, g.x.f32() + o,
                                             g.d.f32() + o, l.n);
    return g;
  }

  IndexFault firstIndexOutside(ExecContext& ctx, const RawTensor& index, int64_t extent) const override {
    return reference::firstIndexOutside(ctx, index, extent);
  }
  ValueFault firstValueOutside(ExecContext& ctx, const RawTensor& x, double lo, double hi) const override {
    x.f32();  // f32 only (DTypeMismatch), as the cpu backend
    return reference::firstValueOutside(ctx, x, lo, hi);
  }
  RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) const override {
    return reference::gatherAlong(ctx, table, axis, index);
  }
  void scatterAlong(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                    bool add) const override {
    reference::scatterAlong(ctx, dst, axis, index, src, add);
  }
  RawTensor selectRows(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index) const override {
    return reference::selectRows(ctx, table, axis, index);
  }
  void updateRows(ExecContext&, const RawTensor& dst, Tag axis, const RawTensor& index, const RawTensor& src,
                  RowUpdate how) const override {
    reference::updateRows(dst, axis, index, src, how);
  }
  RawTensor maskPositions(ExecContext& ctx, const RawTensor& mask, Tag tag) const override {
    return reference::maskPositions(ctx, mask, tag);
  }
  SortedRows sortRows(ExecContext& ctx, const RawTensor& rows, int64_t k, bool largest) const override {
    return reference::sortRows(ctx, rows, k, largest);
  }
  RawTensor argExtremumRows(ExecContext& ctx, const RawTensor& rows, bool largest) const override {
    return reference::argExtremumRows(ctx, rows, largest);
  }
  RawTensor logic(ExecContext& ctx, Logic op, const Tags& tags, const Extents& shape, Inputs ins) const override {
    return reference::logic(ctx, op, tags, shape, ins);
  }
  RawTensor truthRows(ExecContext& ctx, const RawTensor& truth, bool any) const override {
    return reference::truthRows(ctx, truth, any);
  }
  RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower,
                     int64_t upper) const override {
    return reference::bandMask(ctx, row, col, rows, cols, lower, upper);
  }
  RawTensor dropout(ExecContext& ctx, const RawTensor& x, uint64_t seed, double p, float keep_scale) const override {
    return reference::dropout(ctx, x, seed, p, keep_scale);
  }
  RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows, int64_t samples, uint64_t seed, bool replacement,
                            const std::string& what) const override {
    return reference::multinomialRows(ctx, rows, samples, seed, replacement, what);
  }
  RawTensor conv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const ConvPlan& p, const Tags& tags,
                   const Extents& shape, const RawTensor& bias, bool relu) const override {
    return reference::conv2d(ctx, x, w, p, tags, shape, bias, relu);
  }
  RawTensor conv2dInputGrad(ExecContext& ctx, const RawTensor& gy, const RawTensor& w, const ConvPlan& p,
                            const Tags& tags, const Extents& shape) const override {
    return reference::conv2dInputGrad(ctx, gy, w, p, tags, shape);
  }
  RawTensor conv2dWeightGrad(ExecContext& ctx, const RawTensor& x, const RawTensor& gy, const ConvPlan& p,
                             const Tags& tags, const Extents& shape) const override {
    return reference::conv2dWeightGrad(ctx, x, gy, p, tags, shape);
  }
  RawTensor winogradWeights(ExecContext& ctx, const RawTensor& w, int64_t groups) const override {
    return reference::winogradWeights(ctx, w, groups);
  }
  RawTensor winogradConv2d(ExecContext& ctx, const RawTensor& x, const RawTensor& u, const ConvPlan& p,
                           const Tags& tags, const Extents& shape, const RawTensor& bias, bool relu) const override {
    return reference::winogradConv2d(ctx, x, u, p, tags, shape, bias, relu);
  }
  RawTensor im2col(ExecContext& ctx, const RawTensor& images, const Conv2dGeometry& g, const Tags& tags,
                   const Extents& shape) const override {
    return reference::im2col(ctx, images, g, tags, shape);
  }
  RawTensor col2im(ExecContext& ctx, const RawTensor& cols, const Conv2dGeometry& g, const Tags& tags,
                   const Extents& shape) const override {
    return reference::col2im(ctx, cols, g, tags, shape);
  }
  Pooled pool2d(ExecContext& ctx, Pool kind, const RawTensor& x, const Conv2dGeometry& g, size_t trailing,
                bool argmax) const override {
    return reference::pool2d(ctx, kind, x, g, trailing, argmax);
  }
  RawTensor pool2dVjp(ExecContext& ctx, Pool kind, const RawTensor& gy, const RawTensor& argmax,
                      const Conv2dGeometry& g, size_t trailing) const override {
    return reference::pool2dVjp(ctx, kind, gy, argmax, g, trailing);
  }
  RawTensor upsample2x(ExecContext& ctx, const RawTensor& x) const override { return reference::upsample2x(ctx, x); }
  RawTensor upsample2xVjp(ExecContext& ctx, const RawTensor& gy) const override {
    return reference::upsample2xVjp(ctx, gy);
  }
  RawTensor channelAffine(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& shift,
                          Tag channel) const override {
    return reference::channelAffine(ctx, x, scale, shift, channel);
  }
  AffineGrads channelAffineVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& scale, const RawTensor& gy,
                               Tag channel, bool input, bool params) const override {
    return reference::channelAffineVjp(ctx, x, scale, gy, channel, input, params);
  }
  RawTensor softmaxRows(ExecContext& ctx, const RawTensor& x, bool log) const override {
    return reference::softmaxRows(ctx, x, log);
  }
  RawTensor softmaxRowsVjp(ExecContext& ctx, const RawTensor& y, const RawTensor& gy, bool log) const override {
    return reference::softmaxRowsVjp(ctx, y, gy, log);
  }
  NormRows normRows(ExecContext& ctx, const RawTensor& x, Norm kind, double eps) const override {
    return reference::normRows(ctx, x, kind, eps);
  }
  RawTensor normRowsVjp(ExecContext& ctx, Norm kind, const NormRows& saved, const RawTensor& gy) const override {
    return reference::normRowsVjp(ctx, kind, saved, gy);
  }
  IndexFault firstLabelOutside(ExecContext& ctx, const RawTensor& labels, int64_t classes,
                               std::optional<int64_t> ignore) const override {
    return reference::firstLabelOutside(ctx, labels, classes, ignore);
  }
  RawTensor labelLossRows(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, double smoothing,
                          bool plain) const override {
    return reference::labelLossRows(ctx, lp, labels, smoothing, plain);
  }
  RawTensor labelLossRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& labels, const RawTensor& gy,
                             float scale, double smoothing, bool plain) const override {
    return reference::labelLossRowsVjp(ctx, lp, labels, gy, scale, smoothing, plain);
  }
  RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, const Divisor& denom) const override {
    return reference::reduceLoss(ctx, loss, denom.host());
  }
  Divisor labelWeightSum(ExecContext& ctx, const RawTensor& labels, const RawTensor& weights,
                        int64_t ignore) const override {
    return reference::labelWeightSum(ctx, labels, weights, ignore);
  }
  CrossEntropyRows crossEntropyRows(ExecContext& ctx, const RawTensor& x, const CrossEntropy& ce,
                                    bool in_place) const override {
    return reference::crossEntropyRows(ctx, x, ce, in_place);
  }
  CrossEntropyGrads crossEntropyRowsVjp(ExecContext& ctx, const RawTensor& lp, const RawTensor& lse,
                                        const CrossEntropy& ce, const RawTensor& gy, const Divisor& denom, bool need_x,
                                        bool need_target, bool in_place) const override {
    return reference::crossEntropyRowsVjp(ctx, lp, lse, ce, gy, denom.host(), need_x, need_target, in_place);
  }
  RawTensor temperatureSoftmaxRows(ExecContext& ctx, const RawTensor& x, float inv_t) const override {
    return reference::temperatureSoftmaxRows(ctx, x, inv_t);
  }
  RawTensor distillRows(ExecContext& ctx, const RawTensor& x, const Distill& d) const override {
    return reference::distillRows(ctx, x, d);
  }
  RawTensor distillRowsVjp(ExecContext& ctx, const RawTensor& x, const Distill& d,
                           const RawTensor& gy) const override {
    return reference::distillRowsVjp(ctx, x, d, gy);
  }
  RawTensor ropeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& cos, const RawTensor& sin, RopePairs pairs,
                     bool inverse) const override {
    return reference::ropeRows(ctx, x, cos, sin, pairs, inverse);
  }
  RopeTables ropeTables(ExecContext& ctx, Tag position, Tag dim, int64_t T, int64_t D, double base,
                        int64_t offset) const override {
    return reference::ropeTables(ctx, position, dim, T, D, base, offset);
  }
  RmsRopeRows rmsNormRopeRows(ExecContext& ctx, const RawTensor& x, const RawTensor& w, const RawTensor& cos,
                              const RawTensor& sin, double eps) const override {
    return reference::rmsNormRopeRows(ctx, x, w, cos, sin, eps);
  }
  RmsRopeGrads rmsNormRopeRowsVjp(ExecContext& ctx, const RmsRopeRows& saved, const RawTensor& w, const RawTensor& cos,
                                  const RawTensor& sin, const RawTensor& gy, bool need_x, bool need_w) const override {
    return reference::rmsNormRopeRowsVjp(ctx, saved, w, cos, sin, gy, need_x, need_w);
  }
  RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate) const override {
    return reference::gated(ctx, fn, up, gate);
  }
  void gatedVjp(ExecContext& ctx, const GateFn& fn, const RawTensor& gy, const RawTensor& up, const RawTensor& gate,
                const RawTensor& gup, const RawTensor& ggate) const override {
    reference::gatedVjp(ctx, fn, gy, up, gate, gup, ggate);
  }
  Along reduceAlong(ExecContext& ctx, AlongAxis op, const RawTensor& a, Tag axis) const override {
    return reference::reduceAlong(ctx, op, a, axis);
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
    return reference::attention(ctx, g, q, k, v);
  }
  AttentionGrads attentionVjp(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                              const RawTensor& v, const RawTensor& probs, const RawTensor& gy, bool need_q,
                              bool need_k, bool need_v) const override {
    return reference::attentionVjp(ctx, g, q, k, v, probs, gy, need_q, need_k, need_v);
  }

  std::vector<int64_t> readI64(ExecContext&, const RawTensor& t) const override {
    if (t.dtype() != DType::i32 && t.dtype() != DType::i64)
      fail(ErrorCode::DTypeMismatch, "readI64 reads i32 or i64, got " + t.describe());
    std::vector<int64_t> out(static_cast<size_t>(t.numel()));
    if (out.empty()) return out;
    Odometer<1> at(t.shape(), {&t.strides()});
    for (size_t i = 0; i < out.size(); ++i, at.next()) out[i] = load<int64_t>(t, at.offsets()[0]);
    return out;
  }
  RawTensor band(ExecContext& ctx, const RawTensor& a, Tag row, Tag col, int64_t lo, int64_t hi) const override {
    const size_t pr = a.axis(row), pc = a.axis(col);
    RawTensor out = RawTensor::empty(ctx, a.tags(), a.shape(), DType::f32);
    if (out.numel() == 0) return out;
    const float* src = a.f32();
    float* o = out.f32();
    std::vector<int64_t> index(a.rank(), 0);
    Odometer<1> at(a.shape(), {&a.strides()});
    for (int64_t lin = 0, n = out.numel(); lin < n; ++lin, at.next()) {
      const int64_t d = index[pc] - index[pr];
      o[lin] = d < lo || d > hi ? 0.0f : src[at.offsets()[0]];
      for (size_t k = a.rank(); k-- > 0;) {  // the logical index of the next element
        if (++index[k] < a.shape()[k]) break;
        index[k] = 0;
      }
    }
    return out;
  }
  void scatterAddView(ExecContext&, const RawTensor& dst, const RawTensor& src) const override {
    if (src.numel() == 0) return;
    const float* s = src.f32();
    float* d = dst.f32();
    Odometer<2> at(src.shape(), {&src.strides(), &dst.strides()});
    for (int64_t i = 0, n = src.numel(); i < n; ++i, at.next()) d[at.offsets()[1]] += s[at.offsets()[0]];
  }
  RawTensor quantizeQ8(ExecContext& ctx, const RawTensor& a, Tag block_axis) const override {
    return reference::quantizeQ8(ctx, a, block_axis);
  }
  RawTensor ternaryQuantize(ExecContext& ctx, const RawTensor& w) const override {
    return reference::ternaryQuantize(ctx, w);
  }
  PackedB packRhs(ExecContext& ctx, const RawTensor& b, bool depth_last) const override {
    return reference::packRhs(ctx, b, depth_last);
  }
  int64_t packedLayout() const override { return 0; }  // Bᵀ {column, depth}, the same everywhere
  RawTensor packedProduct(ExecContext& ctx, const RawTensor& a, const PackedB& b, const RawTensor& bias,
                          const Tags& tags, const Extents& shape) const override {
    return reference::packedProduct(ctx, a, b, bias, tags, shape);
  }
  void sgdUpdate(ExecContext&, const SgdStep& s, const RawTensor& p, const RawTensor& g,
                 const RawTensor& buf) const override {
    reference::sgdUpdate(s, p, g, buf);
  }
  void adamUpdate(ExecContext&, const AdamStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& m,
                  const RawTensor& v) const override {
    reference::adamUpdate(s, p, g, m, v);
  }
  double sumSquares(ExecContext&, const RawTensor& x) const override { return reference::sumSquares(x); }
};

}  // namespace

const Kernels& referenceKernels() {
  static const ReferenceKernels kernels;
  return kernels;
}

}  // namespace fucina::backend
