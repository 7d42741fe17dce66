// The inference-only packed products (ag/packed.h): packRhs packs a weight once, dotPacked and
// its fused forms multiply by it. Results are constants; an operand that requires grad is
// refused with the reference's error, never silently detached.
#include "fucina/ag/packed.h"

#include <algorithm>
#include <string>

#include "fucina/ag/control.h"
#include "fucina/backend/kernels.h"
#include "fucina/core/error.h"
#include "fucina/core/q8.h"
#include "fucina/exec/context.h"

namespace fucina {

using internal::RawTensor;

namespace {

bool quantized(const PackedRhs& p) { return p.dtype() == DType::q8_0; }

// As the other constant-result entries decide (rope's tables, attention's caches): an operand that
// would record a graph, so under noGrad a trained model's leaves pack and multiply as they are.
void refuseGrad(std::string_view op, ErrorCode code, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands)
    if (t->defined() && t->requiresGrad() && isGradEnabled())
      fail(code, std::string(op) + " is inference-only: " + t->value().describe() +
                     " requires grad (use dot/addDot to train, or detach it)");
}

// The quantized entries' refusal, and the dense dotPacked's.
ErrorCode gradErrorFor(const PackedRhs& p) {
  return quantized(p) ? ErrorCode::GradientQuantizedMatmulUnsupported : ErrorCode::GradientPackedMatmulUnsupported;
}

// An empty handle is refused, and so is one packed under another backend: its storage is in the
// packing backend's own layout.
const PackedRhs& checkedPacked(ExecContext& ctx, std::string_view op, const PackedRhs& p) {
  if (!p.defined()) fail(ErrorCode::InvalidArgument, std::string(op) + ": the packed weight is empty (make it with packRhs)");
  const Backend here = backend::kernelsOf(ctx).backend();
  if (p.backend() != here)
    fail(ErrorCode::DeviceMismatch, std::string(op) + ": " + p.describe() + " was packed by the " +
                                        std::string(name(p.backend())) + " backend, this context computes on the " +
                                        std::string(name(here)) + " backend (pack the weight again with this context)");
  return p;
}

}  // namespace

size_t PackedRhs::bytes() const {
  if (!defined()) return 0;
  return quantized(*this) ? q8::bytesFor(storage_.numel()) : static_cast<size_t>(storage_.numel()) * sizeof(float);
}

std::string PackedRhs::describe() const {
  if (!defined()) return "PackedRhs(empty)";
  const std::string dense = backend_ == Backend::cpu ? " as f32 panels"
                                                     : " as f32 for the " + std::string(name(backend_)) + " backend";
  return "PackedRhs(" + quoted(axis_) + " " + std::to_string(depth_) + " by " + fucina::describe(tags_, shape_) + ": " +
         (quantized(*this) ? "q8_0 blocks" : std::string(name(source_)) + dense) + ")";
}

PackedRhs packRhs(ExecContext& ctx, const Tensor& w, Tag axis) {
  const RawTensor& a = w.value();
  refuseGrad("packRhs", ErrorCode::GradientPackedMatmulUnsupported, {&w});
  const DType dt = a.dtype();
  if (dt != DType::f32 && dt != DType::f16 && dt != DType::bf16 && dt != DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "packRhs packs f32, f16, bf16 or q8_0 weights, got " + a.describe() + " " +
                                       std::string(name(dt)));
  PackedRhs p;
  p.backend_ = backend::kernelsOf(ctx).backend();
  p.axis_ = axis;
  p.depth_ = a.extent(axis);  // ShapeMismatch when w lacks it
  p.source_ = dt;
  for (Tag t : a.tags())
    if (t != axis) {
      p.tags_.push_back(t);
      p.shape_.push_back(a.extent(t));
    }
  p.columns_ = numelOf(p.shape_);
  Tags rows_last = p.tags_;
  rows_last.push_back(axis);
  if (dt == DType::q8_0 && internal::blockAxisOf(a) == axis) {
    // Quantized: the blocks themselves, one row of the free axes after another (emptyQ8's layout
    // for {free..., axis}, which keeps this storage when w is already laid out so).
    p.storage_ = a.permuted(rows_last).contiguous(ctx);
    return p;
  }
  // Dense: op(B) (p, j) read from a view with the depth contiguous (trans_b) when w has one, else
  // from a contiguous copy laid out {axis, free...}; q8_0 blocks along a free axis are dequantized.
  RawTensor src = dt == DType::q8_0 ? a.to(ctx, DType::f32) : a;
  bool trans_b = true;
  RawTensor b = src.permuted(rows_last);
  if (!b.isContiguous()) {
    Tags depth_first{axis};
    depth_first.insert(depth_first.end(), p.tags_.begin(), p.tags_.end());
    b = src.permuted(depth_first).contiguous(ctx);
    trans_b = false;
  }
  backend::Kernels::PackedB packed = backend::kernelsOf(ctx).packRhs(ctx, b, trans_b);
  p.storage_ = std::move(packed.storage);
  p.layout_ = packed.layout;
  return p;
}

Tensor Tensor::dotPacked(ExecContext& ctx, const PackedRhs& packed) const { return dotPacked(ctx, packed, Tensor()); }

Tensor Tensor::dotPacked(ExecContext& ctx, const PackedRhs& packed, const Tensor& bias) const {
  const PackedRhs& p = checkedPacked(ctx, "dotPacked", packed);
  const RawTensor& x = value();
  refuseGrad("dotPacked", gradErrorFor(p), {this, &bias});
  const DType dt = x.dtype();
  if (dt != DType::f32 && dt != DType::f16 && dt != DType::bf16)
    fail(ErrorCode::DTypeMismatch, "dotPacked multiplies f32, f16 or bf16 activations, got " + x.describe() + " " +
                                       std::string(name(dt)));
  if (x.extent(p.axis()) != p.depth())
    fail(ErrorCode::ShapeMismatch, "dotPacked: " + x.describe() + " has " + quoted(p.axis()) + " " +
                                       std::to_string(x.extent(p.axis())) + ", " + p.describe() + " contracts " +
                                       std::to_string(p.depth()));
  Tags rows, out_tags;
  Extents out_shape;
  for (Tag t : x.tags()) {
    if (hasTag(p.tags(), t))
      fail(ErrorCode::ShapeMismatch, "dotPacked: " + x.describe() + " has the packed weight's axis " + quoted(t) +
                                         " (a packed product has no batch axes; " + p.describe() + ")");
    if (t == p.axis()) continue;
    rows.push_back(t);
    out_tags.push_back(t);
    out_shape.push_back(x.extent(t));
  }
  out_tags.insert(out_tags.end(), p.tags().begin(), p.tags().end());
  out_shape.insert(out_shape.end(), p.shape().begin(), p.shape().end());
  RawTensor bias_row;  // the bias in the packed weight's column order
  if (bias.defined()) {
    const RawTensor& bv = bias.value();
    bool same = bv.rank() == p.tags().size();
    for (size_t i = 0; same && i < p.tags().size(); ++i)
      same = hasTag(bv.tags(), p.tags()[i]) && bv.extent(p.tags()[i]) == p.shape()[i];
    if (!same)
      fail(ErrorCode::ShapeMismatch, "dotPacked: the bias " + bv.describe() + " must have exactly the packed weight's other axes " +
                                         fucina::describe(p.tags(), p.shape()));
    if (bv.dtype() != DType::f32 && bv.dtype() != DType::f16 && bv.dtype() != DType::bf16)
      fail(ErrorCode::DTypeMismatch, "dotPacked: the bias is f32, f16 or bf16, got " + std::string(name(bv.dtype())));
    bias_row = bv.permuted(p.tags()).to(ctx, DType::f32);
  }
  if (numelOf(out_shape) == 0) return Tensor::fromRaw(ctx, RawTensor::empty(ctx, std::move(out_tags), std::move(out_shape)));
  // A: rows × depth with the depth contiguous (f32, converted when 16-bit).
  Tags a_order = rows;
  a_order.push_back(p.axis());
  RawTensor av = x.permuted(a_order);
  if (dt != DType::f32) av = av.to(ctx, DType::f32);
  else if (!av.isContiguous()) av = av.contiguous(ctx);
  const backend::Kernels& kernels = backend::kernelsOf(ctx);
  if (!quantized(p) && p.layout_ != kernels.packedLayout())
    fail(ErrorCode::InvalidArgument, "dotPacked: " + p.describe() + " was packed for another SIMD target");
  RawTensor out = kernels.packedProduct(ctx, av, {p.storage_, p.layout_}, bias_row, out_tags, out_shape);
  return Tensor::fromRaw(ctx, std::move(out));
}

Tensor Tensor::rmsNormMulDotPacked(ExecContext& ctx, const Tensor& weight, const PackedRhs& packed, double eps) const {
  const PackedRhs& p = checkedPacked(ctx, "rmsNormMulDotPacked", packed);
  refuseGrad("rmsNormMulDotPacked", ErrorCode::GradientQuantizedMatmulUnsupported, {this, &weight});
  return rmsNormMul(ctx, p.axis(), weight, eps).dotPacked(ctx, p);
}

Tensor Tensor::splitSwiGluDotPacked(ExecContext& ctx, const PackedRhs& packed) const {
  const PackedRhs& p = checkedPacked(ctx, "splitSwiGluDotPacked", packed);
  refuseGrad("splitSwiGluDotPacked", ErrorCode::GradientQuantizedMatmulUnsupported, {this});
  return swiglu(ctx, p.axis()).dotPacked(ctx, p);
}

Tensor Tensor::gegluQuantDotPacked(ExecContext& ctx, const PackedRhs& packed) const {
  const PackedRhs& p = checkedPacked(ctx, "gegluQuantDotPacked", packed);
  refuseGrad("gegluQuantDotPacked", ErrorCode::GradientQuantizedMatmulUnsupported, {this});
  if (!quantized(p))
    fail(ErrorCode::DTypeMismatch, "gegluQuantDotPacked multiplies by a quantized weight: " + p.describe() +
                                       " is dense (pack a q8_0 weight whose blocks run along the contracted axis)");
  return geglu(ctx, p.axis()).dotPacked(ctx, p);
}

}  // namespace fucina
