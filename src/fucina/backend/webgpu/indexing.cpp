// Rows selected and updated at i64 indices (the embedding and its gradient), and index and value
// checks that run on the device (Note [Device faults]): a kernel records the first index out of
// range (or value: bceLoss's probabilities) in the shim's fault buffer, which the next sync() or
// data() reads and reports; meanwhile the kernels that use indices clamp them into range, so a
// bad index never reads or writes outside a buffer (the values it feeds are then meaningless, and
// the error says so).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/core/q8.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Element i of the index is bad when outside [0, extent) (and, with an ignore value, not equal to
// it: the labels of a loss). Words from kParamWord: extent, then the ignore value's two words.
std::string checkSource(uint32_t words, bool ignore) {
  const std::string p = std::to_string(kParamWord);
  return prelude(2) + readBinding(0, "ix", "u32") +
         "@group(0) @binding(1) var<storage, read_write> fault: array<atomic<u32>>;\n" + kMainSignature + " {\n  " +
         kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n  let o = strided(i, 0u) * " + std::to_string(words) +
         "u;\n  let lo = ix[o];\n" +
         (words == 2 ? "  let hi = ix[o + 1u];\n" : "  let hi = select(0u, 0xffffffffu, bitcast<i32>(lo) < 0);\n") +
         "  var bad = hi != 0u || lo >= uw(" + p + "u);\n" +
         (ignore ? "  if (lo == uw(" + p + "u + 1u) && hi == uw(" + p + "u + 2u)) { bad = false; }\n" : "") +
         "  if (bad) {\n"
         "    atomicMin(&fault[1], i);\n"
         "    atomicStore(&fault[2], uw(" + p + "u));\n"
         "    atomicStore(&fault[0], 1u);\n"
         "  }\n}\n";
}

// out[(a·K + q)·inner + c] = table[(a·n + index[q])·inner + c], for the indices in the rows
// [uw(4), uw(5)) of the table's window, which starts at its element uw(6) (Note [Bound in pieces]).
std::string selectSource() {
  return prelude(3) + readBinding(0, "table") + readBinding(1, "ix", "u32") + writeBinding(2, "out") + kIndexAt +
         kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n  let k = uw(2u);\n  let inner = uw(3u);\n"
         "  let c = i % inner;\n  let q = (i / inner) % k;\n  let a = i / (inner * k);\n"
         "  let r = index_at(q, n);\n"
         "  if (r < uw(4u) || r >= uw(5u)) { return; }\n"
         "  out[i] = table[(a * n + r) * inner + c - uw(6u)];\n}\n";
}

// The same rows as bytes, for tables of 16-bit or q8_0 elements (a row of whole blocks): each
// invocation makes one word of out from its four bytes, wherever they come from, keeping the
// bytes of rows outside the window's (another piece's). Words: bytes, n, K, row bytes, then the
// window's rows and first byte as selectSource's.
std::string selectBytesSource() {
  return prelude(3) + readBinding(0, "table", "u32") + readBinding(1, "ix", "u32") + writeBinding(2, "out", "u32") +
         kIndexAt + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i * 4u >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n  let k = uw(2u);\n  let rb = uw(3u);\n"
         "  let pieces = uw(4u) != 0u || uw(5u) != n;\n"
         "  var word = select(0u, out[i], pieces);\n"
         "  for (var j = 0u; j < 4u && i * 4u + j < uw(0u); j = j + 1u) {\n"
         "    let ob = i * 4u + j;\n    let row = ob / rb;\n    let r = index_at(row % k, n);\n"
         "    if (r < uw(4u) || r >= uw(5u)) { continue; }\n"
         "    let sb = ((row / k) * n + r) * rb + ob % rb - uw(6u);\n"
         "    let byte = (table[sb / 4u] >> (8u * (sb % 4u))) & 0xffu;\n"
         "    word = (word & ~(0xffu << (8u * j))) | (byte << (8u * j));\n"
         "  }\n  out[i] = word;\n}\n";
}

// dst[(a·n + index[q])·inner + c] (+)= src[(a·K + q)·inner + c], or = 0. Each invocation owns
// a column c of a block of dst's rows and applies, in index order, the updates that land there:
// repeated indices add in index order (deterministic, as the cpu's loop) and the last assignment
// wins, with no atomics. Words: count, n, K, inner, blocks, rows per block, then the rows
// [first, end) dst's window holds from its start (Note [Bound in pieces]).
std::string updateSource(Kernels::RowUpdate how) {
  using U = Kernels::RowUpdate;
  const bool reads = how != U::zero;
  const std::string update = how == U::add ? "dst[d] = dst[d] + src[(a * k + q) * inner + c];"
                             : how == U::assign ? "dst[d] = src[(a * k + q) * inner + c];"
                                                : "dst[d] = 0.0;";
  return prelude(reads ? 3 : 2) + readBinding(0, "ix", "u32") + (reads ? readBinding(1, "src") : "") +
         writeBinding(reads ? 2 : 1, "dst") + kIndexAt + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n  let k = uw(2u);\n  let inner = uw(3u);\n"
         "  let c = i % inner;\n  let block = (i / inner) % uw(4u);\n  let a = i / (inner * uw(4u));\n"
         "  let r0 = uw(6u) + block * uw(5u);\n  let r1 = min(uw(7u), r0 + uw(5u));\n"
         "  for (var q = 0u; q < k; q = q + 1u) {\n"
         "    let r = index_at(q, n);\n"
         "    if (r >= r0 && r < r1) {\n"
         "      let d = (a * n + r - uw(6u)) * inner + c;\n"
         "      " + update + "\n"
         "    }\n"
         "  }\n}\n";
}

// gatherAlong: out[i] = table[offset of i without the axis + index[i]·axis stride] over index's
// positions (operand 0: the table, its axis stride 0). Words from kParamWord: n, the axis stride
// (signed, as every stride: a flipped view's are negative).
std::string gatherSource() {
  const std::string p = std::to_string(kParamWord);
  return prelude(3) + readBinding(0, "table") + readBinding(1, "ix", "u32") + writeBinding(2, "out") + kIndexAt +
         kMainSignature + " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n"
         "  out[i] = table[u32(i32(strided(i, 0u)) + i32(index_at(i, uw(" + p + "u))) * ui(" + p + "u + 1u))];\n}\n";
}

// scatterAlong: one invocation per line of index's positions along the axis (operands 0..2: the
// index, src and dst over the other axes), walking it in order, so repeated targets add (or the
// last assignment wins) in row-major order with no atomics. Words from kParamWord: K (the index's
// extent along the axis), n (dst's), then the axis strides of index, src and dst.
std::string scatterSource(bool add) {
  const std::string p = std::to_string(kParamWord);
  return prelude(3) + readBinding(0, "ix", "u32") + readBinding(1, "src") + writeBinding(2, "dst") + kIndexAt +
         kMainSignature + " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n"
         "  let oi = strided(i, 0u);\n  let os = strided(i, 1u);\n  let od = strided(i, 2u);\n"
         "  for (var q = 0u; q < uw(" + p + "u); q = q + 1u) {\n"
         "    let d = u32(i32(od) + i32(index_at(oi + q * uw(" + p + "u + 2u), uw(" + p + "u + 1u))) * ui(" + p + "u + 4u));\n"
         "    let v = src[u32(i32(os) + i32(q) * ui(" + p + "u + 3u))];\n"
         "    dst[d] = " + (add ? "dst[d] + v" : "v") + ";\n"
         "  }\n}\n";
}

// Element i of f32 x is bad when outside [lo, hi] or NaN: the fault's kind 2, with lo and hi's
// bits. Words from kParamWord: lo, hi.
std::string valueCheckSource() {
  const std::string p = std::to_string(kParamWord);
  return prelude(2) + readBinding(0, "x") +
         "@group(0) @binding(1) var<storage, read_write> fault: array<atomic<u32>>;\n" + kMainSignature + " {\n  " +
         kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n  let v = x[strided(i, 0u)];\n"
         "  if (is_nan(v) || v < uf(" + p + "u) || v > uf(" + p + "u + 1u)) {\n"
         "    atomicMin(&fault[1], i);\n"
         "    atomicStore(&fault[2], uw(" + p + "u));\n    atomicStore(&fault[3], uw(" + p + "u + 1u));\n"
         "    atomicStore(&fault[0], 2u);\n"
         "  }\n}\n";
}

// index as contiguous i64 from its buffer's start (an i32 index widened).
RawTensor indexOf(ExecContext& ctx, const RawTensor& index) {
  if (index.dtype() != DType::i64 && index.dtype() != DType::i32)
    fail(ErrorCode::DTypeMismatch, "indices must be i32 or i64, got " + std::string(name(index.dtype())));
  return index.dtype() == DType::i64 ? whole(ctx, index) : index.to(ctx, DType::i64);
}

void requireIndex(const RawTensor& index, const char* what) {
  if (index.dtype() != DType::i64 || !index.isContiguous())
    unsupported(std::string(what) + " at " + std::string(name(index.dtype())) + " indices " + index.describe() +
                " (contiguous i64 only)");
}

Uniforms rowUniforms(int64_t count, int64_t n, int64_t k, int64_t inner) {
  Uniforms u;
  u.u(static_cast<uint64_t>(count)).u(static_cast<uint64_t>(n)).u(static_cast<uint64_t>(k)).u(static_cast<uint64_t>(inner));
  return u;
}

// Runs a select (words: count, n, K, row units, then the window's rows and first unit), whole;
// or, past the binding limit, in ranges of the indices (out's and ix's windows) times ranges of
// the table's rows (Note [Bound in pieces]; a table with axes before the selected one is bound
// whole). A row is `units` units (elements of f32 out, or bytes: bytes_mode, four to an
// invocation) and `row_bytes` bytes.
void selectInPieces(uint32_t pipeline, std::span<const uint32_t> buffers, Uniforms u, const RawTensor& table,
                    size_t axis, int64_t k, uint64_t row_bytes, uint64_t units, bool bytes_mode) {
  const int64_t n = table.shape()[axis], outer = numelOf(table.shape(), 0, axis);
  auto run = [&](int64_t count, std::span<const Window> windows) {
    u.set(0, static_cast<uint32_t>(count));
    dispatchLinear(pipeline, buffers, u, bytes_mode ? (count + 3) / 4 : count, windows);
  };
  u.set(4, 0).set(5, static_cast<uint32_t>(n)).set(6, 0);
  if (outer != 1) return run(outer * k * static_cast<int64_t>(units), {});
  const uint64_t by_index[3] = {0, 8, row_bytes}, by_row[3] = {row_bytes, 0, 0};
  inRowPieces(buffers, by_index, k, [&](int64_t, int64_t nk, std::span<const Window> at_indices) {
    u.set(2, static_cast<uint32_t>(nk));
    inRowPieces(buffers, by_row, n, [&](int64_t first, int64_t rows, std::span<const Window> at_rows) {
      u.set(4, static_cast<uint32_t>(first)).set(5, static_cast<uint32_t>(first + rows));
      u.set(6, static_cast<uint32_t>(at_rows.empty() ? 0 : static_cast<uint64_t>(first) * units));
      Window windows[3] = {};
      if (!at_rows.empty()) windows[0] = at_rows[0];
      if (!at_indices.empty()) {
        windows[1] = at_indices[1];
        windows[2] = at_indices[2];
      }
      const bool bound = !at_rows.empty() || !at_indices.empty();
      run(nk * static_cast<int64_t>(units), bound ? windows : std::span<const Window>{});
    });
  });
}

// selectRows of a contiguous 16-bit or q8_0 table (one that starts at its buffer's start).
RawTensor selectRowBytes(ExecContext& ctx, const RawTensor& table, Tag axis, const RawTensor& index_in) {
  const DType d = table.dtype();
  if (d != DType::f16 && d != DType::bf16 && d != DType::q8_0) requireF32(table, "selectRows");
  if (!table.isContiguous() || table.offset() != 0)
    unsupported("selectRows of a " + std::string(name(d)) + " table that is a view (" + table.describe() + ")");
  requireIndex(index_in, "selectRows");
  const RawTensor index = whole(ctx, index_in);
  const size_t p = table.axis(axis);
  const auto [tags, shape] = withIndexAxes(table, p, index);
  RawTensor out = d == DType::q8_0 ? RawTensor::emptyQ8(ctx, tags, shape, internal::blockAxisOf(table))
                                   : RawTensor::empty(ctx, tags, shape, d);
  const int64_t n = table.shape()[p], inner = numelOf(table.shape(), p + 1, table.rank());
  const int64_t row_bytes = d == DType::q8_0 ? static_cast<int64_t>(q8::bytesFor(inner)) : 2 * inner;
  const int64_t bytes = row_bytes * numelOf(table.shape(), 0, p) * index.numel();
  if (bytes == 0) return out;
  if (bytes > UINT32_MAX - 3) unsupported("selectRows of over 2^32 bytes");
  const uint32_t buffers[3] = {bufferOf(table, "selectRows"), bufferOf(index, "selectRows"), bufferOf(out, "selectRows")};
  selectInPieces(Gpu::get().pipeline(selectBytesSource()), buffers, rowUniforms(bytes, n, index.numel(), row_bytes),
                 table, p, index.numel(), row_bytes, row_bytes, true);
  return out;
}

}  // namespace

Kernels::IndexFault firstIndexOutside(ExecContext&, const RawTensor& index, int64_t extent,
                                     std::optional<int64_t> ignore) {
  if (index.dtype() != DType::i64 && index.dtype() != DType::i32)
    fail(ErrorCode::DTypeMismatch, "indices must be i32 or i64, got " + std::string(name(index.dtype())));
  if (index.numel() == 0) return {};
  if (extent > UINT32_MAX) unsupported("an index range over 2^32");
  Uniforms u = stridedLayout(index.shape(), {index.strides()}, {index.offset()}).uniforms();
  const uint64_t skip = static_cast<uint64_t>(ignore.value_or(0));
  u.set(kParamWord, static_cast<uint32_t>(extent));
  u.set(kParamWord + 1, static_cast<uint32_t>(skip)).set(kParamWord + 2, static_cast<uint32_t>(skip >> 32));
  const uint32_t buffers[2] = {bufferOf(index, "index check"), Gpu::get().faultBuffer()};
  const std::string source = checkSource(index.dtype() == DType::i64 ? 2 : 1, ignore.has_value());
  dispatchLinear(Gpu::get().pipeline(source), buffers, u, index.numel());
  return {};  // a fault is reported by the next sync() or data() (Note [Device faults])
}

Kernels::ValueFault firstValueOutside(ExecContext&, const RawTensor& x, double lo, double hi) {
  requireF32(x, "value check");
  if (x.numel() == 0) return {};
  const StridedLayout l = stridedLayout(x.shape(), {x.strides()}, {x.offset()});
  Uniforms u = l.uniforms();
  u.setF(kParamWord, static_cast<float>(lo)).setF(kParamWord + 1, static_cast<float>(hi));
  const uint32_t buffers[2] = {bufferOf(x, "value check"), Gpu::get().faultBuffer()};
  const DType dtypes[1] = {DType::f32};
  dispatchStrided(Gpu::get().pipeline(valueCheckSource()), buffers, dtypes, l, u);
  return {};  // reported by the next sync() or data() (Note [Device faults])
}

RawTensor selectRows(ExecContext& ctx, const RawTensor& table_in, Tag axis, const RawTensor& index_in) {
  if (table_in.dtype() != DType::f32) return selectRowBytes(ctx, table_in, axis, index_in);
  const RawTensor table = rowsOf(ctx, table_in, "selectRows");
  requireIndex(index_in, "selectRows");
  const RawTensor index = whole(ctx, index_in);
  const size_t p = table.axis(axis);
  const auto [tags, shape] = withIndexAxes(table, p, index);
  RawTensor out = RawTensor::empty(ctx, tags, shape);
  if (out.numel() == 0) return out;
  const int64_t n = table.shape()[p], inner = numelOf(table.shape(), p + 1, table.rank());
  const uint32_t buffers[3] = {bufferOf(table, "selectRows"), bufferOf(index, "selectRows"), bufferOf(out, "selectRows")};
  selectInPieces(Gpu::get().pipeline(selectSource()), buffers, rowUniforms(out.numel(), n, index.numel(), inner),
                 table, p, index.numel(), 4 * static_cast<uint64_t>(inner), inner, false);
  return out;
}

void updateRows(ExecContext& ctx, const RawTensor& dst, Tag axis, const RawTensor& index_in,
                const RawTensor& src_in, Kernels::RowUpdate how) {
  requireRows(dst, "updateRows");
  requireWhole(dst, "updateRows");
  requireIndex(index_in, "updateRows");
  const RawTensor index = whole(ctx, index_in);
  const size_t p = dst.axis(axis);
  const int64_t n = dst.shape()[p], k = index.numel(), inner = numelOf(dst.shape(), p + 1, dst.rank());
  const int64_t outer = numelOf(dst.shape(), 0, p);
  if (outer * k * inner == 0 || n == 0) return;  // no row to update (a bad index is reported by its check)
  const bool reads = how != Kernels::RowUpdate::zero;
  const RawTensor src = reads ? rowsOf(ctx, src_in, "updateRows") : src_in;
  std::vector<uint32_t> buffers{bufferOf(index, "updateRows")};
  if (reads) buffers.push_back(bufferOf(src, "updateRows"));
  buffers.push_back(bufferOf(dst, "updateRows"));
  // Past the binding limit, in ranges of dst's rows (a dst with axes before the updated one is
  // bound whole).
  std::vector<uint64_t> row_bytes(buffers.size(), 0);
  if (outer == 1) row_bytes.back() = 4 * static_cast<uint64_t>(inner);
  const uint32_t pipeline = Gpu::get().pipeline(updateSource(how));
  inRowPieces(buffers, row_bytes, n, [&](int64_t first, int64_t rows, std::span<const Window> windows) {
    // Row blocks enough for some 16k invocations; each reads every index once.
    const int64_t want = std::clamp<int64_t>((16384 + outer * inner - 1) / (outer * inner), 1, rows);
    const int64_t rows_per = (rows + want - 1) / want, blocks = (rows + rows_per - 1) / rows_per;
    const int64_t count = outer * blocks * inner;
    Uniforms u = rowUniforms(count, n, k, inner);
    u.u(static_cast<uint64_t>(blocks)).u(static_cast<uint64_t>(rows_per));
    u.u(static_cast<uint64_t>(windows.empty() ? 0 : first)).u(static_cast<uint64_t>(first + rows));
    dispatchLinear(pipeline, buffers, u, count, windows);
  });
}

}  // namespace fucina::backend::webgpu

namespace fucina::backend::webgpu {

RawTensor gatherAlong(ExecContext& ctx, const RawTensor& table_in, Tag axis, const RawTensor& index_in) {
  requireF32(table_in, "gatherAlong");
  const RawTensor index = indexOf(ctx, index_in);
  RawTensor out = RawTensor::empty(ctx, index.tags(), index.shape());
  if (out.numel() == 0) return out;
  const RawTensor table = table_in.permuted(index.tags());
  const size_t a = index.axis(axis);
  std::vector<int64_t> strides = table.strides();
  const int64_t axis_stride = strides[a], n = table.shape()[a];
  strides[a] = 0;
  Uniforms u = stridedLayout(index.shape(), {strides}, {table.offset()}).uniforms();
  u.set(kParamWord, static_cast<uint32_t>(n)).set(kParamWord + 1, static_cast<uint32_t>(static_cast<int32_t>(axis_stride)));
  const uint32_t buffers[3] = {bufferOf(table, "gatherAlong"), bufferOf(index, "gatherAlong"), bufferOf(out, "gatherAlong")};
  dispatchLinear(Gpu::get().pipeline(gatherSource()), buffers, u, out.numel());
  return out;
}

void scatterAlong(ExecContext& ctx, const RawTensor& dst_in, Tag axis, const RawTensor& index_in,
                  const RawTensor& src_in, bool add) {
  requireF32(dst_in, "scatterAlong");
  requireF32(src_in, "scatterAlong");
  const RawTensor index = indexOf(ctx, index_in);
  if (index.numel() == 0) return;
  const RawTensor dst = dst_in.permuted(index.tags());
  // A buffer is bound for reading or for writing in one dispatch: a source in dst's buffer is copied.
  const RawTensor src = (bufferOf(src_in, "scatterAlong") == bufferOf(dst, "scatterAlong") ? src_in.clone(ctx) : src_in)
                            .permuted(index.tags());
  const size_t a = index.axis(axis);
  const auto contiguous = [&] {  // the index's own strides (it is contiguous)
    std::vector<int64_t> st(index.rank());
    for (size_t d = index.rank(), s = 1; d-- > 0;) st[d] = static_cast<int64_t>(s), s *= static_cast<size_t>(index.shape()[d]);
    return st;
  }();
  std::vector<std::vector<int64_t>> strides{contiguous, src.strides(), dst.strides()};
  const int64_t ix_stride = strides[0][a], src_stride = strides[1][a], dst_stride = strides[2][a];
  for (auto& st : strides) st[a] = 0;
  Extents lines = index.shape();
  const int64_t K = lines[a];
  lines[a] = 1;
  Uniforms u = stridedLayout(lines, strides, {0, src.offset(), dst.offset()}).uniforms();
  u.set(kParamWord, static_cast<uint32_t>(K)).set(kParamWord + 1, static_cast<uint32_t>(dst.shape()[a]));
  u.set(kParamWord + 2, static_cast<uint32_t>(ix_stride));
  u.set(kParamWord + 3, static_cast<uint32_t>(static_cast<int32_t>(src_stride)));
  u.set(kParamWord + 4, static_cast<uint32_t>(static_cast<int32_t>(dst_stride)));
  const uint32_t buffers[3] = {bufferOf(index, "scatterAlong"), bufferOf(src, "scatterAlong"), bufferOf(dst, "scatterAlong")};
  dispatchLinear(Gpu::get().pipeline(scatterSource(add)), buffers, u, numelOf(lines));
}

}  // namespace fucina::backend::webgpu
