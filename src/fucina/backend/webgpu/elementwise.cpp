// Elementwise kernels: one WGSL module per (row, form), made from the row's WGSL expression
// (backend/elementwise_table.h) over strided operands (Note [Strided kernels]).
#include <array>
#include <string>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

struct RowWgsl {
  int arity;
  WgslForms forms;
};

constexpr std::array<RowWgsl, kElemOpCount> kRows{
#define FUCINA_WGSL_ROW(row) RowWgsl{rows::row::arity, rows::row::wgsl},
    FUCINA_ELEMENTWISE_ROWS(FUCINA_WGSL_ROW)
#undef FUCINA_WGSL_ROW
};

// out[i] = expr over the named operands, each read at its strided offset; pa, pb the parameters.
// out is the last operand, contiguous: only its offset is read (a piece's: Note [Bound in pieces]).
std::string mapSource(const std::vector<std::string>& names, const std::string& expr, const std::string& functions) {
  const int k = static_cast<int>(names.size());
  std::string src = prelude(k + 1);
  for (int j = 0; j < k; ++j) src += readBinding(j, "in" + std::to_string(j));
  src += writeBinding(k, "out") + functions;
  src += std::string(kMainSignature) + " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n";
  src += "  let pa = uf(" + std::to_string(kParamWord) + "u);\n  let pb = uf(" + std::to_string(kParamWord + 1) + "u);\n";
  for (int j = 0; j < k; ++j)
    src += "  let " + names[j] + " = in" + std::to_string(j) + "[strided(i, " + std::to_string(j) + "u)];\n";
  src += "  out[u32(ui(" + std::to_string(kOperandWord + k * kOperandWords) + "u)) + i] = " + expr + ";\n}\n";
  return src;
}

}  // namespace

RawTensor mapExpr(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs ins,
                  const std::vector<std::string>& names, const std::string& expr, const ElemParams& p,
                  const std::string& functions) {
  RawTensor out = RawTensor::empty(ctx, tags, shape);
  if (out.numel() == 0) return out;
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> offsets;
  std::vector<uint32_t> buffers;
  for (const RawTensor* in : ins) {
    requireF32(*in, "elementwise");
    buffers.push_back(bufferOf(*in, "elementwise"));
    strides.push_back(alignedStrides(*in, tags));
    offsets.push_back(in->offset());
  }
  buffers.push_back(bufferOf(out, "elementwise"));
  strides.push_back(out.strides());
  offsets.push_back(0);
  const StridedLayout l = stridedLayout(shape, strides, offsets);
  Uniforms u = l.uniforms();
  u.setF(kParamWord, static_cast<float>(p.a)).setF(kParamWord + 1, static_cast<float>(p.b));
  const std::vector<DType> dtypes(buffers.size(), DType::f32);
  dispatchStrided(Gpu::get().pipeline(mapSource(names, expr, functions)), buffers, dtypes, l, u);
  return out;
}

namespace {

const char* formOf(ElemOp op, Form form) {
  const WgslForms& f = kRows[static_cast<size_t>(op)].forms;
  const char* e = form == Form::fwd ? f.fwd : form == Form::da ? f.da : f.db;
  if (!e)
    unsupported(std::string("the elementwise row ") + name(op) +
                (form == Form::fwd ? "" : form == Form::da ? "'s first partial" : "'s second partial"));
  return e;
}

// dst[i] = expr over a = dst[i] (and b = src[i], src aligned to dst's axes), in place.
std::string updateSource(bool binary, const std::string& expr) {
  std::string src = prelude(binary ? 2 : 1) + writeBinding(0, "dst");
  if (binary) src += readBinding(1, "src");
  src += std::string(kMainSignature) + " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n";
  src += "  let pa = uf(" + std::to_string(kParamWord) + "u);\n  let pb = uf(" + std::to_string(kParamWord + 1) + "u);\n";
  src += "  let o = strided(i, 0u);\n  let a = dst[o];\n";
  if (binary) src += "  let b = src[strided(i, 1u)];\n";
  return src + "  dst[o] = " + expr + ";\n}\n";
}

void updateWith(ExecContext& ctx, const RawTensor& dst, const RawTensor* src, const std::string& expr,
                const ElemParams& p) {
  requireF32(dst, "in-place update");
  if (dst.numel() == 0) return;
  std::vector<uint32_t> buffers{bufferOf(dst, "in-place update")};
  std::vector<std::vector<int64_t>> strides{dst.strides()};
  std::vector<int64_t> offsets{dst.offset()};
  RawTensor s;
  if (src) {
    requireF32(*src, "in-place update");
    // A buffer is bound for reading or for writing in one dispatch, not both: a source sharing
    // dst's buffer is copied first.
    s = bufferOf(*src, "in-place update") == buffers[0] ? src->clone(ctx) : *src;
    buffers.push_back(bufferOf(s, "in-place update"));
    strides.push_back(alignedStrides(s, dst.tags()));
    offsets.push_back(s.offset());
  }
  const StridedLayout l = stridedLayout(dst.shape(), strides, offsets);
  Uniforms u = l.uniforms();
  u.setF(kParamWord, static_cast<float>(p.a)).setF(kParamWord + 1, static_cast<float>(p.b));
  const std::vector<DType> dtypes(buffers.size(), DType::f32);
  dispatchStrided(Gpu::get().pipeline(updateSource(src != nullptr, expr)), buffers, dtypes, l, u);
}

}  // namespace

RawTensor map(ExecContext& ctx, ElemOp op, Form form, const Tags& tags, const Extents& shape, Inputs ins,
              const ElemParams& p) {
  const int arity = kRows[static_cast<size_t>(op)].arity;
  const std::vector<std::string> names = form == Form::fwd ? (arity == 1 ? std::vector<std::string>{"a"}
                                                                          : std::vector<std::string>{"a", "b"})
                                         : arity == 1 ? std::vector<std::string>{"g", "a", "y"}
                                                      : std::vector<std::string>{"g", "a", "b", "y"};
  if (ins.size() != names.size())
    fail(ErrorCode::InvalidArgument, std::string("elementwise row ") + name(op) + " takes " +
                                         std::to_string(names.size()) + " operands, got " + std::to_string(ins.size()));
  return mapExpr(ctx, tags, shape, ins, names, formOf(op, form), p);
}

RawTensor select(ExecContext& ctx, const Tags& tags, const Extents& shape, Inputs ins) {
  return mapExpr(ctx, tags, shape, ins, {"c", "x", "y"}, "select(y, x, c != 0.0)", {});
}

void updateInto(ExecContext& ctx, ElemOp op, const RawTensor& dst, const RawTensor* src, const ElemParams& p) {
  const bool unary = kRows[static_cast<size_t>(op)].arity == 1;
  if (!unary && src == nullptr) fail(ErrorCode::InvalidArgument, std::string("updateInto ") + name(op) + ": no operand");
  updateWith(ctx, dst, unary ? nullptr : src, formOf(op, Form::fwd), p);
}

RawTensor mapOne(ExecContext& ctx, const RawTensor& a, const std::string& expr, double pa) {
  const std::array<const RawTensor*, 1> in{&a};
  return mapExpr(ctx, a.tags(), a.shape(), in, {"a"}, expr, {pa});
}

void addInto(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) { updateWith(ctx, dst, &src, "a + b", {}); }

}  // namespace fucina::backend::webgpu
