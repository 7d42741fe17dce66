// Truth values (u8: 1 true, 0 false), band masks and bands (backend/logic_rows.h states them). WGSL writes
// 32-bit words, so a u8 result is made four elements per invocation, packed into one word of a
// new contiguous tensor (its block holds whole words); u8 operands are read as the byte of their
// word. Operands of any word dtype or u8 are read as f32 (i64 rounded to nearest), two i64 operands
// as i64 pairs; NaN is found by its bits, as a WGSL compiler may assume values are finite.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

using L = Kernels::Logic;

// A WGSL expression: element e (an element offset) of u32 buffer `buf` holding dtype, as f32.
std::string readAs(const std::string& buf, DType dtype, const std::string& e) {
  switch (dtype) {
    case DType::f32: return "bitcast<f32>(" + buf + "[" + e + "])";
    case DType::i32: return "f32(bitcast<i32>(" + buf + "[" + e + "]))";
    case DType::u8: return "f32((" + buf + "[(" + e + ") / 4u] >> (8u * ((" + e + ") % 4u))) & 0xffu)";
    case DType::i64:
      return "i64_to_f32(" + buf + "[2u * (" + e + ")], " + buf + "[2u * (" + e + ") + 1u])";
    default: unsupported("truth values of " + std::string(name(dtype)) + " elements");
  }
}


// The truth of element e as a WGSL bool expression over the operands' values p and q (f32) or
// their i64 words (ph, pl, qh, ql).
std::string truthOf(L op, bool i64) {
  if (i64) {
    switch (op) {
      case L::eq: return "ph == qh && pl == ql";
      case L::ne: return "ph != qh || pl != ql";
      case L::lt: return "ph < qh || (ph == qh && pl < ql)";
      case L::le: return "ph < qh || (ph == qh && pl <= ql)";
      case L::gt: return "ph > qh || (ph == qh && pl > ql)";
      case L::ge: return "ph > qh || (ph == qh && pl >= ql)";
      case L::logicalAnd: return "(ph != 0 || pl != 0u) && (qh != 0 || ql != 0u)";
      case L::logicalOr: return "(ph != 0 || pl != 0u) || (qh != 0 || ql != 0u)";
      case L::logicalXor: return "(ph != 0 || pl != 0u) != (qh != 0 || ql != 0u)";
      default: break;
    }
  }
  const std::string unordered = "is_nan(p) || is_nan(q)";
  switch (op) {
    case L::isnan: return "is_nan(p)";
    case L::isinf: return "!is_finite(p) && !is_nan(p)";
    case L::isfinite: return "is_finite(p)";
    case L::truth: return "p != 0.0 || is_nan(p)";
    case L::logicalNot: return "p == 0.0 && !is_nan(p)";
    case L::logicalAnd: return "(p != 0.0 || is_nan(p)) && (q != 0.0 || is_nan(q))";
    case L::logicalOr: return "(p != 0.0 || is_nan(p)) || (q != 0.0 || is_nan(q))";
    case L::logicalXor: return "(p != 0.0 || is_nan(p)) != (q != 0.0 || is_nan(q))";
    case L::eq: return "!(" + unordered + ") && p == q";
    case L::ne: return "(" + unordered + ") || p != q";
    case L::lt: return "!(" + unordered + ") && p < q";
    case L::le: return "!(" + unordered + ") && p <= q";
    case L::gt: return "!(" + unordered + ") && p > q";
    case L::ge: return "!(" + unordered + ") && p >= q";
  }
  return "false";
}

// The head of a packing kernel: invocation w makes word w of `out` from elements 4w..4w+3 (of
// uw(0u)); the body sets `bit` for element `e` and the caller closes the loop and main.
std::string packHead(const std::string& bindings, int uniform_binding) {
  return prelude(uniform_binding) + bindings + kMainSignature + " {\n  " + kLinearIndex +
         "\n  let n = uw(0u);\n  if (i * 4u >= n) { return; }\n  var word = 0u;\n"
         "  for (var j = 0u; j < 4u && i * 4u + j < n; j = j + 1u) {\n    let e = i * 4u + j;\n    var bit = false;\n";
}
const char* kPackTail = "    word = word | (select(0u, 1u, bit) << (8u * j));\n  }\n  out[i] = word;\n}\n";

std::string logicSource(L op, const std::vector<DType>& dtypes) {
  const bool i64 = dtypes.size() == 2 && dtypes[0] == DType::i64 && dtypes[1] == DType::i64;
  std::string bindings;
  for (size_t k = 0; k < dtypes.size(); ++k) bindings += readBinding(static_cast<int>(k), "in" + std::to_string(k), "u32");
  bindings += writeBinding(static_cast<int>(dtypes.size()), "out", "u32");
  std::string body;
  const char* names[2] = {"p", "q"};
  for (size_t k = 0; k < dtypes.size(); ++k) {
    const std::string at = "strided(e, " + std::to_string(k) + "u)", buf = "in" + std::to_string(k);
    if (i64)
      body += "    let " + std::string(names[k]) + "l = " + buf + "[2u * " + at + "];\n    let " + names[k] +
              "h = bitcast<i32>(" + buf + "[2u * " + at + " + 1u]);\n";
    else
      body += "    let " + std::string(names[k]) + " = " + readAs(buf, dtypes[k], at) + ";\n";
  }
  return packHead(bindings, static_cast<int>(dtypes.size()) + 1) + body + "    bit = " + truthOf(op, i64) + ";\n" +
         kPackTail;
}

// any (all) of each row of n bytes (uniforms: rows, n, any); empty rows read nothing.
std::string truthRowsSource(bool empty) {
  if (empty) return packHead(writeBinding(0, "out", "u32"), 1) + "    bit = uw(2u) != 1u;\n" + kPackTail;
  return packHead(readBinding(0, "src", "u32") + writeBinding(1, "out", "u32"), 2) +
         "    let any = uw(2u) == 1u;\n    bit = !any;\n"
         "    for (var c = 0u; c < uw(1u); c = c + 1u) {\n"
         "      let k = e * uw(1u) + c;\n"
         "      if ((((src[k / 4u] >> (8u * (k % 4u))) & 0xffu) != 0u) == any) { bit = any; break; }\n"
         "    }\n" + kPackTail;
}

// {rows, cols}: whether (i, j) is in the band (uniforms: count, cols, lower, upper; -1 unbounded).
std::string bandMaskSource() {
  return packHead(writeBinding(0, "out", "u32"), 1) +
         "    let r = i32(e / uw(1u));\n    let c = i32(e % uw(1u));\n"
         "    bit = (ui(2u) < 0 || r - c <= ui(2u)) && (ui(3u) < 0 || c - r <= ui(3u));\n" + kPackTail;
}

// A contiguous copy of a with 0 outside the band lo <= j - i <= hi (uniforms: the strided layout,
// then the row axis's inner size and extent, the column axis's, lo, hi).
std::string bandSource() {
  const std::string p = std::to_string(kParamWord);
  return prelude(2) + readBinding(0, "a") + writeBinding(1, "out") + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let r = i32((i / uw(" + p + "u)) % uw(" + p + "u + 1u));\n"
         "  let c = i32((i / uw(" + p + "u + 2u)) % uw(" + p + "u + 3u));\n"
         "  out[i] = select(0.0, a[strided(i, 0u)], c - r >= ui(" + p + "u + 4u) && c - r <= ui(" + p + "u + 5u));\n}\n";
}

// A new contiguous u8 tensor and the dispatch of its packing kernel.
RawTensor packed(ExecContext& ctx, const Tags& tags, const Extents& shape, const std::string& source,
                 std::vector<uint32_t> buffers, Uniforms u) {
  RawTensor out = RawTensor::empty(ctx, tags, shape, DType::u8);
  if (out.numel() == 0) return out;
  buffers.push_back(bufferOf(out, "truth values"));
  u.set(0, static_cast<uint32_t>(out.numel()));
  dispatchLinear(Gpu::get().pipeline(source), buffers, u, (out.numel() + 3) / 4);
  return out;
}

}  // namespace

RawTensor logic(ExecContext& ctx, L op, const Tags& tags, const Extents& shape, Inputs ins) {
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> offsets;
  std::vector<uint32_t> buffers;
  std::vector<DType> dtypes;
  for (const RawTensor* in : ins) {
    if (in->dtype() != DType::f32 && in->dtype() != DType::i32 && in->dtype() != DType::i64 && in->dtype() != DType::u8)
      unsupported("truth values of " + std::string(name(in->dtype())) + " elements");
    strides.push_back(alignedStrides(*in, tags));
    offsets.push_back(in->offset());
    buffers.push_back(bufferOf(*in, "truth values"));
    dtypes.push_back(in->dtype());
  }
  if (numelOf(shape) > UINT32_MAX - 3) unsupported("truth values of over 2^32 elements");
  return packed(ctx, tags, shape, logicSource(op, dtypes), buffers, stridedLayout(shape, strides, offsets).uniforms());
}

RawTensor truthRows(ExecContext& ctx, const RawTensor& truth_in, bool any) {
  if (truth_in.dtype() != DType::u8) fail(ErrorCode::DTypeMismatch, "truthRows reads u8, got " + truth_in.describe());
  const RawTensor truth = whole(ctx, truth_in);
  const Tags tags(truth.tags().begin(), truth.tags().end() - 1);
  const Extents shape(truth.shape().begin(), truth.shape().end() - 1);
  Uniforms u;
  u.u(0).u(static_cast<uint64_t>(truth.shape().back())).u(any ? 1 : 0);
  const bool empty = truth.numel() == 0;
  if (empty) return packed(ctx, tags, shape, truthRowsSource(true), {}, u);
  return packed(ctx, tags, shape, truthRowsSource(false), {bufferOf(truth, "truthRows")}, u);
}

RawTensor bandMask(ExecContext& ctx, Tag row, Tag col, int64_t rows, int64_t cols, int64_t lower, int64_t upper) {
  Uniforms u;
  u.u(0).u(static_cast<uint64_t>(cols)).i(lower < 0 ? -1 : std::min<int64_t>(lower, INT32_MAX))
      .i(upper < 0 ? -1 : std::min<int64_t>(upper, INT32_MAX));
  return packed(ctx, {row, col}, {rows, cols}, bandMaskSource(), {}, u);
}

}  // namespace fucina::backend::webgpu

namespace fucina::backend::webgpu {

RawTensor band(ExecContext& ctx, const RawTensor& a, Tag row, Tag col, int64_t lo, int64_t hi) {
  requireF32(a, "band");
  RawTensor out = RawTensor::empty(ctx, a.tags(), a.shape());
  if (out.numel() == 0) return out;
  const auto inner = [&](Tag t) { return numelOf(a.shape(), a.axis(t) + 1, a.rank()); };
  const auto clamp32 = [](int64_t v) { return static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX)); };
  Uniforms u = stridedLayout(a.shape(), {a.strides()}, {a.offset()}).uniforms();
  u.set(kParamWord, static_cast<uint32_t>(inner(row))).set(kParamWord + 1, static_cast<uint32_t>(a.extent(row)));
  u.set(kParamWord + 2, static_cast<uint32_t>(inner(col))).set(kParamWord + 3, static_cast<uint32_t>(a.extent(col)));
  u.set(kParamWord + 4, static_cast<uint32_t>(clamp32(lo))).set(kParamWord + 5, static_cast<uint32_t>(clamp32(hi)));
  const uint32_t buffers[2] = {bufferOf(a, "band"), bufferOf(out, "band")};
  dispatchLinear(Gpu::get().pipeline(bandSource()), buffers, u, out.numel());
  return out;
}

}  // namespace fucina::backend::webgpu
