// The two shapes of elementwise op — unary (with any scalar parameter folded into its lambdas)
// and binary (operands aligned by tag) — so each op is just its forward and partials side by side.
#pragma once

#include <array>
#include <string_view>
#include <type_traits>

#include "fucina/kernels/elementwise.h"
#include "fucina/kernels/reduce.h"
#include "fucina/ops/finish_op.h"
#include "fucina/ops/typed.h"

namespace fucina::ops {

// What a partial derivative reads besides g, so that a record saves only that (flashlight's rule:
// a value is kept only when a gradient that will be computed needs it).
namespace reads {
enum Reads : unsigned { kNone = 0, kA = 1, kB = 2, kY = 4 };
}

struct SavedShape {
  Tags tags;
  Extents shape;
};

// Keeps t when `needed`; otherwise an empty handle that the VJP replaces by gy (never read).
inline RawTensor saveIf(bool needed, const RawTensor& t) { return needed ? t : RawTensor(); }

// SIMD twins (kernels::VecMap) of an op's forward and partials, for the hot ops that have them.
// The partials' inputs are numbered as their lambdas' arguments: unary (g, a, y), binary
// (g, a, b, y).
struct VecOps {
  kernels::VecMap fwd, da, db;
};

// y = fwd(a) per element; dx(g, a, y) is the partial times g, reading what `reads` says.
// fwd is generic: an f64 operand is computed by the same fwd in double (no gradient), a 16-bit
// one through f32 (Note [Dtype rules]).
template <class Fwd, class Dx>
Tensor unaryOp(ExecContext& ctx, std::string_view name, const Tensor& x, Fwd fwd, unsigned reads,
               Dx dx, VecOps simd = {}) {
  if (x.dtype() != DType::f32) {
    if (promotesToF64(name, {&x})) {
      const RawTensor& a = x.value();  // mapAs reads it as double
      return Tensor::make(ctx, kernels::mapAs<double, 1>(ctx, a.tags(), a.shape(), {&a}, fwd), nullptr);
    }
    return viaF32(ctx, name, {&x}, [&](std::span<const Tensor> f) {
      return unaryOp(ctx, name, f[0], fwd, reads, dx, simd);
    });
  }
  // x.value() only where it is read: x may be pending (Note [Checkpoint tail]).
  const auto vjp = [&](const RawTensor& out) {  // out is read only where reads::kY says
    return [sa = reads & reads::kA ? x.value() : RawTensor(), sy = saveIf(reads & reads::kY, out), dx, simd](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor& va = sa.valid() ? sa : gy;
      const RawTensor& vy = sy.valid() ? sy : gy;
      g[0] = kernels::map<3>(c, gy.tags(), gy.shape(), {&gy, &va, &vy}, dx, simd.da);
    };
  };
  if (internal::deferringValues() && !(reads & reads::kY)) {
    const RawTensor& m = x.impl()->meta();
    auto compute = [&ctx, a = x.impl()->source(), fwd, simd] { return kernels::map1(ctx, a.get(), fwd, simd.fwd); };
    return finishPending(ctx, name, m.tags(), m.shape(), compute, {&x}, [&] { return vjp(RawTensor()); },
                         static_cast<size_t>(m.numel()));
  }
  RawTensor out = kernels::map1(ctx, x.value(), fwd, simd.fwd);
  return finishOp(ctx, name, out, {&x}, [&] { return vjp(out); }, static_cast<size_t>(out.numel()));
}

// y = fwd(a, b) per element over the aligned axes; da(g, a, b, y) and db(g, a, b, y) are the
// partials times g, each summed back to its operand's own axes. Dtypes as unaryOp: any f64
// operand computes fwd in double, 16-bit constants go through f32.
template <class Fwd, class Da, class Db>
Tensor binaryOp(ExecContext& ctx, std::string_view name, const Tensor& x, const Tensor& y, Fwd fwd,
                unsigned da_reads, Da da, unsigned db_reads, Db db, VecOps simd = {}) {
  if (!allF32({&x, &y})) {
    if (promotesToF64(name, {&x, &y})) {
      const RawTensor &a = x.value(), &b = y.value();  // mapAs reads them as double
      const kernels::AlignedShape s = kernels::alignShapes(name, a, b);
      return Tensor::make(ctx, kernels::mapAs<double, 2>(ctx, s.tags, s.shape, {&a, &b}, fwd), nullptr);
    }
    return viaF32(ctx, name, {&x, &y}, [&](std::span<const Tensor> f) {
      return binaryOp(ctx, name, f[0], f[1], fwd, da_reads, da, db_reads, db, simd);
    });
  }
  // Operand values only where they are read: either may be pending (Note [Checkpoint tail]).
  const RawTensor &a = x.impl()->meta(), &b = y.impl()->meta();
  const unsigned need =
      isGradEnabled() ? (x.requiresGrad() ? da_reads : 0) | (y.requiresGrad() ? db_reads : 0) : 0;
  const auto vjp = [&](const RawTensor& out) {  // out is read only where reads::kY says
    return [sa = need & reads::kA ? x.value() : RawTensor(), sb = need & reads::kB ? y.value() : RawTensor(),
            sy = saveIf(need & reads::kY, out), ma = SavedShape{a.tags(), a.shape()},
            mb = SavedShape{b.tags(), b.shape()}, da, db,
            simd](ExecContext& c, const RawTensor& gy, NeedsGrad needs, Grads g) {
      const RawTensor& va = sa.valid() ? sa : gy;
      const RawTensor& vb = sb.valid() ? sb : gy;
      const RawTensor& vy = sy.valid() ? sy : gy;
      const std::array<const RawTensor*, 4> ins{&gy, &va, &vb, &vy};
      // An identity partial (add's, sub's for x) hands gy on as it is, summed to the operand's
      // axes when it was broadcast; the engine copies a shared gradient before adding into it.
      // (A copy of gy per operand was 3% of a W3 step.)
      auto partial = [&](const auto& d, const kernels::VecMap& vm, const SavedShape& to) {
        const bool identity = vm.op == kernels::vec::Op::copy && vm.x == 0;
        return kernels::sumTo(c, identity ? gy : kernels::map<4>(c, gy.tags(), gy.shape(), ins, d, vm), to.tags,
                              to.shape);
      };
      if (needs[0]) g[0] = partial(da, simd.da, ma);
      if (needs[1]) g[1] = partial(db, simd.db, mb);
    };
  };
  if (internal::deferringValues() && !(need & reads::kY)) {
    const kernels::AlignedShape s = kernels::alignShapes(name, a, b);
    auto compute = [&ctx, name, a = x.impl()->source(), b = y.impl()->source(), fwd, simd] {
      return kernels::map2(ctx, name, a.get(), b.get(), fwd, simd.fwd);
    };
    return finishPending(ctx, name, s.tags, s.shape, compute, {&x, &y}, [&] { return vjp(RawTensor()); },
                         static_cast<size_t>(numelOf(s.shape)));
  }
  RawTensor out = kernels::map2(ctx, name, x.value(), y.value(), fwd, simd.fwd);
  return finishOp(ctx, name, out, {&x, &y}, [&] { return vjp(out); }, static_cast<size_t>(out.numel()));
}

// Integer add/sub/mul/neg (no gradient): two's-complement wrap-around without UB, computed in the
// unsigned type of the same width (whose arithmetic wraps by definition) and converted back
// (modular since C++20); u8 wraps mod 256 as torch's uint8.
template <class T, class F>
RawTensor integerMap(ExecContext& ctx, std::string_view name, const RawTensor& a, const RawTensor* b, F f) {
  using U = std::make_unsigned_t<T>;
  auto wrapped = [f](auto... v) { return static_cast<T>(static_cast<U>(f(static_cast<U>(v)...))); };
  if constexpr (std::is_invocable_v<F, U>) {  // neg
    return kernels::mapAs<T, 1>(ctx, a.tags(), a.shape(), {&a}, wrapped);
  } else {
    const kernels::AlignedShape s = kernels::alignShapes(name, a, *b);
    return kernels::mapAs<T, 2>(ctx, s.tags, s.shape, {&a, b}, wrapped);
  }
}

template <class F>
Tensor integerOp(ExecContext& ctx, std::string_view name, const Tensor& x, const Tensor* y, F f) {
  const RawTensor& a = x.value();
  const RawTensor* b = y ? &y->value() : nullptr;
  switch (x.dtype()) {
    case DType::i32: return Tensor::make(ctx, integerMap<int32_t>(ctx, name, a, b, f), nullptr);
    case DType::i64: return Tensor::make(ctx, integerMap<int64_t>(ctx, name, a, b, f), nullptr);
    default: return Tensor::make(ctx, integerMap<uint8_t>(ctx, name, a, b, f), nullptr);
  }
}

}  // namespace fucina::ops
