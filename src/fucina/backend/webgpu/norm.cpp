// Layer, RMS and L2 normalization rows (the last axis of contiguous f32): one workgroup per row,
// its statistics combined in a tree (in f32: the cpu accumulates in f64). An L2 row's `clamped`
// flag (where eps won) is a byte, set with atomics in its word.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

using Norm = Kernels::Norm;

// y = (x - mean)·inv, inv = 1/sqrt(Σ(x - mean)²/n + eps); mean 0 for rms.
std::string forwardSource(bool layer) {
  return prelude(3) + readBinding(0, "x") + writeBinding(1, "y") + writeBinding(2, "inv") + rowKernelHead() +
         "  var mean = 0.0;\n" +
         (layer ? "  var s = 0.0;\n"
                  "  for (var i = l; i < n; i = i + 256u) { s = s + x[base + i]; }\n"
                  "  mean = reduce(l, s, false) / f32(n);\n"
                : "") +
         "  var q = 0.0;\n"
         "  for (var i = l; i < n; i = i + 256u) { let d = x[base + i] - mean; q = q + d * d; }\n"
         "  let k = 1.0 / sqrt(reduce(l, q, false) / f32(n) + uf(2u));\n"
         "  if (l == 0u) { inv[row] = k; }\n"
         "  for (var i = l; i < n; i = i + 256u) { y[base + i] = (x[base + i] - mean) * k; }\n"
         "}\n";
}

// inv = 1/max(|x|, eps), y = x·inv, clamped = |x| <= eps.
std::string l2Source() {
  return prelude(4) + readBinding(0, "x") + writeBinding(1, "y") + writeBinding(2, "inv") +
         "@group(0) @binding(3) var<storage, read_write> cl: array<atomic<u32>>;\n" + rowKernelHead() +
         "  var q = 0.0;\n"
         "  for (var i = l; i < n; i = i + 256u) { q = q + x[base + i] * x[base + i]; }\n"
         "  let norm = sqrt(reduce(l, q, false));\n"
         "  let k = 1.0 / max(norm, uf(2u));\n"
         "  if (l == 0u) {\n"
         "    inv[row] = k;\n"
         "    let shift = 8u * (row % 4u);\n"
         "    atomicAnd(&cl[row / 4u], ~(0xffu << shift));\n"
         "    atomicOr(&cl[row / 4u], select(0u, 1u, norm <= uf(2u)) << shift);\n"
         "  }\n"
         "  for (var i = l; i < n; i = i + 256u) { y[base + i] = x[base + i] * k; }\n"
         "}\n";
}

// gx = inv·(g - y·Σ g·y), inv·g where the row was clamped.
std::string l2VjpSource() {
  return prelude(5) + readBinding(0, "y") + readBinding(1, "inv") + readBinding(2, "g") + readBinding(3, "cl", "u32") +
         writeBinding(4, "gx") + rowKernelHead() +
         "  var sgy = 0.0;\n"
         "  for (var i = l; i < n; i = i + 256u) { sgy = sgy + g[base + i] * y[base + i]; }\n"
         "  let clamped = ((cl[row / 4u] >> (8u * (row % 4u))) & 0xffu) != 0u;\n"
         "  let k = select(reduce(l, sgy, false), 0.0, clamped);\n"
         "  let v = inv[row];\n"
         "  for (var i = l; i < n; i = i + 256u) { gx[base + i] = v * (g[base + i] - y[base + i] * k); }\n"
         "}\n";
}

// gx = inv·(g - <g> - y·<g·y>), <g> taken as 0 for rms.
std::string vjpSource(bool layer) {
  return prelude(4) + readBinding(0, "y") + readBinding(1, "inv") + readBinding(2, "g") + writeBinding(3, "gx") +
         rowKernelHead() +
         "  var sg = 0.0;\n  var sgy = 0.0;\n"
         "  for (var i = l; i < n; i = i + 256u) { sg = sg + g[base + i]; sgy = sgy + g[base + i] * y[base + i]; }\n" +
         (layer ? "  let mg = reduce(l, sg, false) / f32(n);\n" : "  let mg = 0.0;\n") +
         "  let k = reduce(l, sgy, false) / f32(n);\n"
         "  let v = inv[row];\n"
         "  for (var i = l; i < n; i = i + 256u) { gx[base + i] = v * (g[base + i] - mg - y[base + i] * k); }\n"
         "}\n";
}

}  // namespace

Kernels::NormRows normRows(ExecContext& ctx, const RawTensor& x_in, Norm kind, double eps) {
  const RawTensor x = rowsOf(ctx, x_in, "normalization");
  const Tags row_tags(x.tags().begin(), x.tags().end() - (x.rank() > 0 ? 1 : 0));
  const Extents row_shape(x.shape().begin(), x.shape().end() - (x.rank() > 0 ? 1 : 0));
  Kernels::NormRows out{RawTensor::empty(ctx, x.tags(), x.shape()), RawTensor::empty(ctx, row_tags, row_shape), {}};
  if (kind == Norm::l2) out.clamped = RawTensor::zeros(ctx, row_tags, row_shape, DType::u8);
  if (x.numel() == 0) return out;
  const RowLayout l = rowLayout(x);
  const uint64_t row = 4 * static_cast<uint64_t>(l.n);  // each operand in pieces of rows (Note [Bound in pieces])
  if (kind == Norm::l2) {
    const uint32_t buffers[4] = {bufferOf(x, "normalization"), bufferOf(out.y, "normalization"),
                                 bufferOf(out.inv, "normalization"), bufferOf(out.clamped, "normalization")};
    const uint64_t row_bytes[4] = {row, row, 4, 1};
    dispatchRows(l2Source(), buffers, l, static_cast<float>(eps), {}, row_bytes);
    return out;
  }
  const uint32_t buffers[3] = {bufferOf(x, "normalization"), bufferOf(out.y, "normalization"),
                               bufferOf(out.inv, "normalization")};
  const uint64_t row_bytes[3] = {row, row, 4};
  dispatchRows(forwardSource(kind == Norm::layer), buffers, l, static_cast<float>(eps), {}, row_bytes);
  return out;
}

RawTensor normRowsVjp(ExecContext& ctx, Norm kind, const Kernels::NormRows& saved, const RawTensor& gy_in) {
  requireRows(saved.y, "normalization VJP");  // made by normRows: whole
  const RawTensor gy = rowsOf(ctx, gy_in, "normalization VJP");
  RawTensor gx = RawTensor::empty(ctx, saved.y.tags(), saved.y.shape());
  if (gx.numel() == 0) return gx;
  const RowLayout l = rowLayout(saved.y);
  const uint64_t row = 4 * static_cast<uint64_t>(l.n);
  if (kind == Norm::l2) {
    const uint32_t buffers[5] = {bufferOf(saved.y, "normalization VJP"), bufferOf(saved.inv, "normalization VJP"),
                                 bufferOf(gy, "normalization VJP"), bufferOf(saved.clamped, "normalization VJP"),
                                 bufferOf(gx, "normalization VJP")};
    const uint64_t row_bytes[5] = {row, 4, row, 1, row};
    dispatchRows(l2VjpSource(), buffers, l, 0, {}, row_bytes);
    return gx;
  }
  const uint32_t buffers[4] = {bufferOf(saved.y, "normalization VJP"), bufferOf(saved.inv, "normalization VJP"),
                               bufferOf(gy, "normalization VJP"), bufferOf(gx, "normalization VJP")};
  const uint64_t row_bytes[4] = {row, 4, row, row};
  dispatchRows(vjpSource(kind == Norm::layer), buffers, l, 0, {}, row_bytes);
  return gx;
}

}  // namespace fucina::backend::webgpu
