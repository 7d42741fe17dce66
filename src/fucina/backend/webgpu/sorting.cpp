// Sorted rows (Kernels::sortRows): a bitonic network over each row padded to a power of two P,
// keys and positions in scratch buffers, one dispatch per stage (log2(P)·(log2(P)+1)/2 of them),
// then the first k of each row written out. The order is the host's (value, index): NaN above
// every number, ties the lower index first, descending when largest; the padding sorts last.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Uniforms of every kernel here: rows, n, P, k, largest, then a stage's block size and stride.
const char* kBefore =
    // Whether (av at ai) comes before (bv at bi) in the row's order.
    "fn before(av: f32, ai: u32, bv: f32, bi: u32) -> bool {\n"
    "  let n = uw(1u);\n"
    "  if (ai >= n || bi >= n) { return bi >= n && (ai < n || ai < bi); }\n"
    "  let largest = uw(4u) == 1u;\n"
    "  if (is_nan(av) || is_nan(bv)) {\n"
    "    if (is_nan(av) && is_nan(bv)) { return ai < bi; }\n"
    "    return select(is_nan(bv), is_nan(av), largest);\n"
    "  }\n"
    "  if (av != bv) { return select((av < bv), (av > bv), largest); }\n"
    "  return ai < bi;\n"
    "}\n";

std::string initSource() {
  return prelude(3) + readBinding(0, "x") + writeBinding(1, "key") + writeBinding(2, "pos", "u32") + kMainSignature +
         " {\n  " + kLinearIndex + "\n  if (i >= uw(0u) * uw(2u)) { return; }\n"
         "  let r = i / uw(2u);\n  let p = i % uw(2u);\n"
         "  key[i] = select(0.0, x[r * uw(1u) + min(p, uw(1u) - 1u)], p < uw(1u));\n  pos[i] = p;\n}\n";
}

// One compare-exchange per pair (i, i + stride) of each row, ascending in blocks whose size bit
// of i is 0 (the network's direction), so the row ends in `before` order.
std::string stageSource() {
  return prelude(2) + writeBinding(0, "key") + writeBinding(1, "pos", "u32") + kBefore + kMainSignature + " {\n  " +
         kLinearIndex + "\n  let half = uw(2u) / 2u;\n  if (i >= uw(0u) * half) { return; }\n"
         "  let r = i / half;\n  let t = i % half;\n  let size = uw(5u);\n  let stride = uw(6u);\n"
         "  let a = (t / stride) * 2u * stride + t % stride;\n  let b = a + stride;\n"
         "  let ia = r * uw(2u) + a;\n  let ib = r * uw(2u) + b;\n"
         "  let up = (a & size) == 0u;\n"
         "  if (before(key[ib], pos[ib], key[ia], pos[ia]) == up) {\n"
         "    let kv = key[ia];\n    key[ia] = key[ib];\n    key[ib] = kv;\n"
         "    let pv = pos[ia];\n    pos[ia] = pos[ib];\n    pos[ib] = pv;\n"
         "  }\n}\n";
}

// The first k of each row: values and their positions as i64 (two words).
std::string outSource() {
  return prelude(4) + readBinding(0, "key") + readBinding(1, "pos", "u32") + writeBinding(2, "val") +
         writeBinding(3, "ix", "u32") + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u) * uw(3u)) { return; }\n"
         "  let at = (i / uw(3u)) * uw(2u) + i % uw(3u);\n"
         "  val[i] = key[at];\n  ix[2u * i] = pos[at];\n  ix[2u * i + 1u] = 0u;\n}\n";
}

}  // namespace

Kernels::SortedRows sortRows(ExecContext& ctx, const RawTensor& rows_in, int64_t k, bool largest) {
  const RawTensor rows = rowsOf(ctx, rows_in, "sortRows");
  const RowLayout l = rowLayout(rows);
  Extents shape = rows.shape();
  shape.back() = k;
  Kernels::SortedRows out{RawTensor::empty(ctx, rows.tags(), shape), RawTensor::empty(ctx, rows.tags(), shape, DType::i64)};
  if (l.rows == 0 || k == 0) return out;
  int64_t P = 1;
  while (P < l.n) P *= 2;
  if (P > (int64_t{1} << 24) || l.rows * P > UINT32_MAX) unsupported("sorting rows of over 2^24 elements");
  const RawTensor keys = RawTensor::empty(ctx, {Tag("row"), Tag("p")}, {l.rows, P});
  const RawTensor pos = RawTensor::empty(ctx, {Tag("row"), Tag("p")}, {l.rows, P}, DType::i32);
  Uniforms u;
  u.u(static_cast<uint64_t>(l.rows)).u(static_cast<uint64_t>(l.n)).u(static_cast<uint64_t>(P));
  u.u(static_cast<uint64_t>(k)).u(largest ? 1 : 0);
  Gpu& gpu = Gpu::get();
  const uint32_t kb = bufferOf(keys, "sortRows"), pb = bufferOf(pos, "sortRows");
  const uint32_t init[3] = {bufferOf(rows, "sortRows"), kb, pb};
  dispatchLinear(gpu.pipeline(initSource()), init, u, l.rows * P);
  const uint32_t stage[2] = {kb, pb};
  const uint32_t pipeline = gpu.pipeline(stageSource());
  for (int64_t size = 2; size <= P; size *= 2)
    for (int64_t stride = size / 2; stride > 0; stride /= 2) {
      Uniforms s = u;
      s.set(5, static_cast<uint32_t>(size)).set(6, static_cast<uint32_t>(stride));
      dispatchLinear(pipeline, stage, s, l.rows * P / 2);
    }
  const uint32_t write[4] = {kb, pb, bufferOf(out.values, "sortRows"), bufferOf(out.indices, "sortRows")};
  dispatchLinear(gpu.pipeline(outSource()), write, u, l.rows * k);
  return out;
}

}  // namespace fucina::backend::webgpu
