/// @file
/// The kernel primitives: the one boundary through which ops compute (Note [Backends]).
///
/// Note [Backends]: an op does shape logic, dtype rules and its VJP record, and computes every
/// value through the primitives of `Kernels`, implemented once per backend: `cpu/` (SIMD, the
/// work pool, the GEMM and convolution kernels) and `reference/` (scalar loops on the calling
/// thread, the oracle). A context's ExecOptions::backend picks one; `kernelsOf(ctx)` returns it.
/// Elementwise ops are data: each is one row of backend/elementwise_table.h holding its scalar
/// form and its cpu SIMD form, named by an ElemOp, so a new elementwise op is one row and a new
/// backend implements `map` once for every row. A primitive takes and returns tensors, never a
/// raw pointer, so a backend whose buffers are not host memory can implement it. Every backend
/// passes tests/cpp/backend_tests.cpp, which runs the ops on it against the cpu backend.
#pragma once

#include <span>

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

  /// Sums f32 a over `axes` (each an axis of a), accumulating in f64; the result keeps a's other
  /// axes in a's order and is contiguous.
  virtual RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes) const = 0;
  /// dst += src; dst contiguous f32 and exclusively owned, src of dst's axes and extents.
  virtual void addInto(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) const = 0;

  /// Contracts a (f32) and b (f32, f16, bf16 or q8_0) over `contracted`, with the axis rules of
  /// Tensor::dot: shared axes not contracted are batch axes; result axes are a's remaining axes,
  /// then b's that a lacks. A valid `initial` (axes among the result's) is added to the product.
  virtual RawTensor contract(ExecContext& ctx, const RawTensor& a, const RawTensor& b, const Tags& contracted,
                             const RawTensor& initial) const = 0;

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

  // --- elementwise pairs ---
  /// Gated units: out = u(up)·g(gate), u the identity and g the activation, or situ's
  /// u = c·tanh(up/c), g = u(silu(gate)); gate is a view with up's axes in up's order, both any
  /// strides. The VJP writes gy·u'(up)·g(gate) into gup and gy·u(up)·g'(gate) into ggate (f32
  /// views laid out as up, any strides, not overlapping); gy may have up's axes in any order.
  virtual RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate) const = 0;
  virtual void gatedVjp(ExecContext& ctx, const GateFn& fn, const RawTensor& gy, const RawTensor& up,
                        const RawTensor& gate, const RawTensor& gup, const RawTensor& ggate) const = 0;
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

// --- shared by the backends' implementations ---
/// The rows of a scan: the last axis of t (contiguous f32), n elements each (none when n is 0).
struct RowLayout {
  int64_t rows, n;
};
RowLayout rowLayout(const RawTensor& t);
/// A recurrence's rows: one per element of h0, even when the time axis is empty (gh0 is then 0).
RowLayout recurrenceLayout(const RawTensor& x, const RawTensor& h0);
/// InvalidArgument: a unary row has no Form::db.
[[noreturn]] void failNoForm(ElemOp op, Form form);
/// DTypeMismatch: the row has no forward in dtype.
[[noreturn]] void failNoDTypeForm(ElemOp op, DType dtype);

}  // namespace fucina::backend
