// The two shapes of elementwise op — unary and binary (operands aligned by tag) — around the math
// that computes them: a row of backend/elementwise_table.h, run by the context's backend
// (RowMath), or the scalar lambdas of elementalUnary/elementalBinary (LambdaMath), which only the
// host's maps can run.
#pragma once

#include <array>
#include <optional>
#include <utility>
#include <string_view>
#include <type_traits>

#include "fucina/backend/cpu/elementwise.h"
#include "fucina/backend/kernels.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"
#include "fucina/ops/layout.h"

namespace fucina::ops {

namespace reads = backend::reads;
using backend::Form;

struct SavedShape {
  Tags tags;
  Extents shape;
};

// Keeps t when `needed`; otherwise an empty handle that the VJP replaces by gy (never read).
inline RawTensor saveIf(bool needed, const RawTensor& t) { return needed ? t : RawTensor(); }

// A row of the table with its scalar parameters. fwd/partial/fwdAs compute through the context's
// backend; `identity` says that a partial hands g on unchanged (add's, sub's for a).
template <class Row>
struct RowMath {
  static constexpr int arity = Row::arity;
  static constexpr unsigned da_reads = Row::da_reads;
  static constexpr unsigned db_reads = [] {
    if constexpr (Row::arity == 2) return Row::db_reads;
    else return 0u;
  }();
  backend::ElemParams p{};

  RawTensor fwd(ExecContext& c, const Tags& tags, const Extents& shape, backend::Inputs in) const {
    return backend::kernelsOf(c).map(c, backend::elemOpOf<Row>(), Form::fwd, tags, shape, in, p);
  }
  RawTensor fwdAs(ExecContext& c, DType dtype, const Tags& tags, const Extents& shape, backend::Inputs in) const {
    return backend::kernelsOf(c).mapAs(c, backend::elemOpOf<Row>(), dtype, tags, shape, in, p);
  }
  RawTensor partial(ExecContext& c, Form f, const Tags& tags, const Extents& shape, backend::Inputs in) const {
    return backend::kernelsOf(c).map(c, backend::elemOpOf<Row>(), f, tags, shape, in, p);
  }
  static constexpr bool identity(Form f) {
    const backend::SimdForm s = f == Form::da ? Row::simd.da : Row::simd.db;
    return s.op == kernels::vec::Op::copy && s.x == 0;
  }
  // y and the partial d(a) in one pass, where the row has a `keep` kernel and the backend runs it
  // (Note [Kept partials]).
  std::optional<std::pair<RawTensor, RawTensor>> fwdKeepingPartial(ExecContext& c, const RawTensor& a) const {
    if constexpr (Row::arity == 1)
      if constexpr (Row::keep != nullptr)
        return backend::kernelsOf(c).mapKeepingPartial(c, backend::elemOpOf<Row>(), a, p);
    return std::nullopt;
  }
};

// Scalar lambdas: fwd(a[, b]) generic over float and double, partials over (g, a, y) or
// (g, a, b, y), computed by the host's maps whatever the backend (a user's C++ function is not a
// row any backend can run).
template <int Arity, class Fwd, class Da, class Db>
struct LambdaMath {
  static constexpr int arity = Arity;
  unsigned da_reads, db_reads;
  Fwd f;
  Da da;
  Db db;

  RawTensor fwd(ExecContext& c, const Tags& tags, const Extents& shape, backend::Inputs in) const {
    if constexpr (Arity == 1) return kernels::map<1>(c, tags, shape, {in[0]}, f);
    else return kernels::map<2>(c, tags, shape, {in[0], in[1]}, f);
  }
  RawTensor fwdAs(ExecContext& c, DType, const Tags& tags, const Extents& shape, backend::Inputs in) const {
    if constexpr (Arity == 1) return kernels::mapAs<double, 1>(c, tags, shape, {in[0]}, f);
    else return kernels::mapAs<double, 2>(c, tags, shape, {in[0], in[1]}, f);
  }
  RawTensor partial(ExecContext& c, Form form, const Tags& tags, const Extents& shape, backend::Inputs in) const {
    if constexpr (Arity == 1) return kernels::map<3>(c, tags, shape, {in[0], in[1], in[2]}, da);
    else if (form == Form::da) return kernels::map<4>(c, tags, shape, {in[0], in[1], in[2], in[3]}, da);
    else return kernels::map<4>(c, tags, shape, {in[0], in[1], in[2], in[3]}, db);
  }
  static constexpr bool identity(Form) { return false; }
  std::optional<std::pair<RawTensor, RawTensor>> fwdKeepingPartial(ExecContext&, const RawTensor&) const {
    return std::nullopt;
  }
};

// y = fwd(a) per element; the partial reads what math.da_reads says. An f64 operand is computed
// by the forward in double (no gradient), a 16-bit one through f32 (Note [Dtype rules]).
template <class Math>
Tensor unaryOp(ExecContext& ctx, std::string_view name, const Tensor& x, const Math& math) {
  if (x.dtype() != DType::f32) {
    if (promotesToF64(name, {&x})) {
      const RawTensor& a = x.value();
      const std::array<const RawTensor*, 1> in{&a};
      return Tensor::make(ctx, math.fwdAs(ctx, DType::f64, a.tags(), a.shape(), in), nullptr);
    }
    return viaF32(ctx, name, {&x}, [&](std::span<const Tensor> f) { return unaryOp(ctx, name, f[0], math); });
  }
  const unsigned reads = math.da_reads;
  // x.value() only where it is read: x may be pending (Note [Checkpoint tail]).
  const auto vjp = [&](const RawTensor& out) {  // out is read only where reads::kY says
    return [sa = reads & reads::kA ? x.value() : RawTensor(), sy = saveIf(reads & reads::kY, out), math](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor& va = sa.valid() ? sa : gy;
      const RawTensor& vy = sy.valid() ? sy : gy;
      const std::array<const RawTensor*, 3> in{&gy, &va, &vy};
      g[0] = math.partial(c, Form::da, gy.tags(), gy.shape(), in);
    };
  };
  auto compute = [&ctx, math](const RawTensor& a) {
    const std::array<const RawTensor*, 1> in{&a};
    return math.fwd(ctx, a.tags(), a.shape(), in);
  };
  if (internal::deferringValues() && !(reads & reads::kY)) {
    const RawTensor& m = x.impl()->meta();
    return finishPending(ctx, name, m.tags(), m.shape(), [compute, a = x.impl()->source()] { return compute(a.get()); },
                         {&x}, [&] { return vjp(RawTensor()); }, static_cast<size_t>(m.numel()));
  }
  if (isGradEnabled() && x.requiresGrad())
    if (auto kept = math.fwdKeepingPartial(ctx, x.value())) {
      // Note [Kept partials]: the VJP multiplies g by d(a), kept in a's place.
      return finishOp(ctx, name, kept->first, {&x}, [&] {
        return [d = std::move(kept->second)](ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
          const std::array<const RawTensor*, 2> in{&gy, &d};
          g[0] = backend::kernelsOf(c).map(c, backend::ElemOp::Mul, Form::fwd, gy.tags(), gy.shape(), in, {});
        };
      }, static_cast<size_t>(kept->first.numel()));
    }
  RawTensor out = compute(x.value());
  return finishOp(ctx, name, out, {&x}, [&] { return vjp(out); }, static_cast<size_t>(out.numel()));
}

// y = fwd(a, b) per element over the aligned axes; the partials times g are each summed back to
// their operand's own axes. Dtypes as unaryOp: any f64 operand computes the forward in double,
// 16-bit constants go through f32.
template <class Math>
Tensor binaryOp(ExecContext& ctx, std::string_view name, const Tensor& x, const Tensor& y, const Math& math) {
  if (!allF32({&x, &y})) {
    if (promotesToF64(name, {&x, &y})) {
      const RawTensor &a = x.value(), &b = y.value();
      const ops::AlignedShape s = ops::alignShapes(name, a, b);
      const std::array<const RawTensor*, 2> in{&a, &b};
      return Tensor::make(ctx, math.fwdAs(ctx, DType::f64, s.tags, s.shape, in), nullptr);
    }
    return viaF32(ctx, name, {&x, &y}, [&](std::span<const Tensor> f) { return binaryOp(ctx, name, f[0], f[1], math); });
  }
  // Operand values only where they are read: either may be pending (Note [Checkpoint tail]).
  const RawTensor &a = x.impl()->meta(), &b = y.impl()->meta();
  const unsigned need = isGradEnabled()
                            ? (x.requiresGrad() ? math.da_reads : 0) | (y.requiresGrad() ? math.db_reads : 0)
                            : 0;
  const auto vjp = [&](const RawTensor& out) {  // out is read only where reads::kY says
    return [sa = need & reads::kA ? x.value() : RawTensor(), sb = need & reads::kB ? y.value() : RawTensor(),
            sy = saveIf(need & reads::kY, out), ma = SavedShape{a.tags(), a.shape()},
            mb = SavedShape{b.tags(), b.shape()}, math](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor& va = sa.valid() ? sa : gy;
      const RawTensor& vb = sb.valid() ? sb : gy;
      const RawTensor& vy = sy.valid() ? sy : gy;
      const std::array<const RawTensor*, 4> in{&gy, &va, &vb, &vy};
      // An identity partial (add's, sub's for x) hands gy on as it is, summed to the operand's
      // axes when it was broadcast; the engine copies a shared gradient before adding into it.
      // (A copy of gy per operand was 3% of a W3 step.)
      auto partial = [&](Form f, const SavedShape& to) {
        return backend::sumTo(c, math.identity(f) ? gy : math.partial(c, f, gy.tags(), gy.shape(), in), to.tags, to.shape);
      };
      if (needs[0]) g[0] = partial(Form::da, ma);
      if (needs[1]) g[1] = partial(Form::db, mb);
    };
  };
  auto compute = [&ctx, name, math](const RawTensor& va, const RawTensor& vb) {
    const ops::AlignedShape s = ops::alignShapes(name, va, vb);
    const std::array<const RawTensor*, 2> in{&va, &vb};
    return math.fwd(ctx, s.tags, s.shape, in);
  };
  if (internal::deferringValues() && !(need & reads::kY)) {
    const ops::AlignedShape s = ops::alignShapes(name, a, b);
    return finishPending(
        ctx, name, s.tags, s.shape,
        [compute, pa = x.impl()->source(), pb = y.impl()->source()] { return compute(pa.get(), pb.get()); },
        {&x, &y}, [&] { return vjp(RawTensor()); }, static_cast<size_t>(numelOf(s.shape)));
  }
  RawTensor out = compute(x.value(), y.value());
  return finishOp(ctx, name, out, {&x, &y}, [&] { return vjp(out); }, static_cast<size_t>(out.numel()));
}

// The ops of a row: unaryOp/binaryOp over RowMath<Row> with scalar parameters p.
template <class Row>
Tensor rowOp(ExecContext& ctx, std::string_view name, const Tensor& x, backend::ElemParams p = {}) {
  return unaryOp(ctx, name, x, RowMath<Row>{p});
}
template <class Row>
Tensor rowOp(ExecContext& ctx, std::string_view name, const Tensor& x, const Tensor& y, backend::ElemParams p = {}) {
  return binaryOp(ctx, name, x, y, RowMath<Row>{p});
}

// The integer path of add, sub, mul and neg (no gradient): the row's forward in the operands'
// integer dtype, wrapping around (backend::Kernels::mapAs).
template <class Row>
Tensor integerOp(ExecContext& ctx, std::string_view name, const Tensor& x, const Tensor* y) {
  const RawTensor& a = x.value();
  if (!y) {
    const std::array<const RawTensor*, 1> in{&a};
    return Tensor::make(ctx, RowMath<Row>{}.fwdAs(ctx, x.dtype(), a.tags(), a.shape(), in), nullptr);
  }
  const RawTensor& b = y->value();
  const ops::AlignedShape s = ops::alignShapes(name, a, b);
  const std::array<const RawTensor*, 2> in{&a, &b};
  return Tensor::make(ctx, RowMath<Row>{}.fwdAs(ctx, x.dtype(), s.tags, s.shape, in), nullptr);
}

}  // namespace fucina::ops
