// normAll on the device: the p-norm of every element of an f32 tensor (Kernels::reduceF64's pNorm
// and norm lines over all axes) and its VJP (pNormVjp). WGSL has no f64: the sum of |x|^p is an
// f32 tree (reduce.cpp's), and the norm is handed over as the f64 the contract names, converted
// on the device from that f32 (memory.cpp). Other f64 lines are UnsupportedOnDevice.
#include <array>
#include <cmath>
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// The norm as f32 {}: max |x| over the non-NaN elements (0 when none) for p = infinity, as the
// host's std::max, else (Σ|x|^p)^(1/p).
RawTensor normF32(ExecContext& ctx, const RawTensor& x, double p) {
  if (x.numel() == 0) {
    RawTensor zero = RawTensor::empty(ctx, {}, {});
    fill(ctx, zero, 0.0);
    return zero;
  }
  if (std::isinf(p)) {
    const RawTensor m = mapOne(ctx, x, "select(abs(a), 0.0, is_nan(a))");
    const RawTensor flat = RawTensor::view(m.storage(), DType::f32, {Tag("all")}, {m.numel()}, {1}, m.offset());
    return reduceAlong(ctx, Kernels::AlongAxis::max, flat, Tag("all")).values;
  }
  const RawTensor terms = mapOne(ctx, x, p == 2 ? "a * a" : p == 1 ? "abs(a)" : "pow_(abs(a), pa)", p);
  const RawTensor sum = sumAxes(ctx, terms, x.tags());
  return p == 1 ? sum : mapOne(ctx, sum, p == 2 ? "sqrt(a)" : "pow_(a, 1.0 / pa)", p);
}

}  // namespace

RawTensor reduceF64(ExecContext& ctx, Kernels::F64Line op, const RawTensor& a, const Tags& axes, double param) {
  const bool norm = op == Kernels::F64Line::norm || op == Kernels::F64Line::pNorm;
  if (!norm || a.dtype() != DType::f32 || axes.size() != a.rank())
    unsupported("f64 lines other than normAll's (WGSL has no f64)");
  return normF32(ctx, a, op == Kernels::F64Line::norm ? 2.0 : param).to(ctx, DType::f64);
}

RawTensor pNormVjp(ExecContext& ctx, const RawTensor& x, const RawTensor& norm, const RawTensor& gy, double p) {
  requireF32(x, "pNormVjp");
  const RawTensor n = norm.to(ctx, DType::f32);
  if (std::isinf(p)) {  // gy split evenly among the elements with |x| = N
    const std::array<const RawTensor*, 2> at{&x, &n};
    const std::string tie = "(abs(xv) == nv && nv > 0.0)";
    const RawTensor on = mapExpr(ctx, x.tags(), x.shape(), at, {"xv", "nv"}, "select(0.0, 1.0, " + tie + ")", {});
    const RawTensor ties = sumAxes(ctx, on, x.tags());
    const std::array<const RawTensor*, 4> in{&x, &n, &gy, &ties};
    return mapExpr(ctx, x.tags(), x.shape(), in, {"xv", "nv", "gv", "tv"},
                   "select(0.0, gv * sign(xv) / tv, " + tie + ")", {});
  }
  const std::array<const RawTensor*, 3> in{&x, &n, &gy};
  return mapExpr(ctx, x.tags(), x.shape(), in, {"xv", "nv", "gv"},
                 p == 2 ? "select(0.0, gv * (xv / nv), nv > 0.0 && xv != 0.0)"
                        : "select(0.0, gv * sign(xv) * pow_(abs(xv) / nv, pa - 1.0), nv > 0.0 && xv != 0.0)",
                 {p});
}

}  // namespace fucina::backend::webgpu
