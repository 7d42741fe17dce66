// The two shapes of elementwise op — unary (with any scalar parameter folded into its lambdas)
// and binary (operands aligned by tag) — so each op is just its forward and partials side by side.
#pragma once

#include <array>
#include <string_view>

#include "fucina/kernels/elementwise.h"
#include "fucina/kernels/reduce.h"
#include "fucina/ops/finish_op.h"

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
template <class Fwd, class Dx>
Tensor unaryOp(ExecContext& ctx, std::string_view name, const Tensor& x, Fwd fwd, unsigned reads,
               Dx dx, VecOps simd = {}) {
  requireF32(name, x);
  const RawTensor& a = x.value();
  RawTensor out = kernels::map1(ctx, a, fwd, simd.fwd);
  return finishOp(ctx, name, out, {&x}, [&] {
    return [sa = saveIf(reads & reads::kA, a), sy = saveIf(reads & reads::kY, out), dx, simd](
               ExecContext& c, const RawTensor& gy, NeedsGrad, Grads g) {
      const RawTensor& va = sa.valid() ? sa : gy;
      const RawTensor& vy = sy.valid() ? sy : gy;
      g[0] = kernels::map<3>(c, gy.tags(), gy.shape(), {&gy, &va, &vy}, dx, simd.da);
    };
  }, static_cast<size_t>(out.numel()));
}

// y = fwd(a, b) per element over the aligned axes; da(g, a, b, y) and db(g, a, b, y) are the
// partials times g, each summed back to its operand's own axes.
template <class Fwd, class Da, class Db>
Tensor binaryOp(ExecContext& ctx, std::string_view name, const Tensor& x, const Tensor& y, Fwd fwd,
                unsigned da_reads, Da da, unsigned db_reads, Db db, VecOps simd = {}) {
  requireF32(name, x);
  requireF32(name, y);
  const RawTensor& a = x.value();
  const RawTensor& b = y.value();
  RawTensor out = kernels::map2(ctx, name, a, b, fwd, simd.fwd);
  return finishOp(ctx, name, out, {&x, &y}, [&] {
    const unsigned need = (x.requiresGrad() ? da_reads : 0) | (y.requiresGrad() ? db_reads : 0);
    return [sa = saveIf(need & reads::kA, a), sb = saveIf(need & reads::kB, b),
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
  }, static_cast<size_t>(out.numel()));
}

}  // namespace fucina::ops
