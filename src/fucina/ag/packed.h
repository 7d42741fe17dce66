/// @file
/// Inference-only packed right operands (intentionally no-grad: results are constants): a
/// weight prepared once for every product that reads it, so inference does not repack it per
/// call. The dense layout is the packing backend's own (Kernels::PackedB; on cpu Note [Packed B],
/// backend/cpu/gemm_simd.h).
#pragma once

#include <cstdint>

#include "fucina/ag/tensor.h"
#include "fucina/core/device.h"
#include "fucina/core/raw_tensor.h"

namespace fucina {

/// A right operand for Tensor::dotPacked, made by packRhs. Dense (f32, f16 or bf16 weights, or a
/// q8_0 weight whose blocks do not run along the contracted axis): f32 in the packing backend's
/// layout (on cpu the GEMM's panels, for this process's SIMD target only). Quantized (a q8_0
/// weight with blocks along the contracted axis): its q8_0 blocks, one row of the free axes after
/// another. Either way it multiplies only under the backend that packed it (DeviceMismatch
/// elsewhere). Immutable; copies share the packed buffer, which counts in fc.memory() /
/// ExecContext's live bytes.
class PackedRhs {
 public:
  PackedRhs() = default;  ///< an empty handle: dotPacked with it is InvalidArgument

  bool defined() const { return depth_ >= 0; }
  Tag axis() const { return axis_; }            ///< the contracted axis
  int64_t depth() const { return depth_; }      ///< its extent
  const Tags& tags() const { return tags_; }    ///< the weight's other axes, in its order
  const Extents& shape() const { return shape_; }
  int64_t columns() const { return columns_; }  ///< the product of shape()
  /// f32 for dense panels, q8_0 for quantized blocks.
  DType dtype() const { return storage_.dtype(); }
  /// The weight's dtype when it was packed (f32, f16, bf16 or q8_0).
  DType sourceDtype() const { return source_; }
  /// The backend whose context packed it: the only one it multiplies under.
  Backend backend() const { return backend_; }
  size_t bytes() const;  ///< the packed buffer's size
  /// "PackedRhs(axis 'in' 784, out 128: f32 panels)" for messages.
  std::string describe() const;

 private:
  friend PackedRhs packRhs(ExecContext& ctx, const Tensor& w, Tag axis);
  friend class Tensor;
  internal::RawTensor storage_;  // Kernels::PackedB's storage, or the q8_0 weight {free..., axis}
  Tag axis_{"packed"};
  int64_t depth_ = -1, columns_ = 0, layout_ = 0;  // layout_: Kernels::packedLayout() when packed
  Backend backend_ = Backend::cpu;
  Tags tags_;
  Extents shape_;
  DType source_ = DType::f32;
};

/// Packs w (f32, f16, bf16 or q8_0) for products contracting `axis`: x.dotPacked(packed) then
/// equals x.dot(w, axis) within f32 rounding. A w that requires grad is
/// GradientPackedMatmulUnsupported unless gradients are off (noGrad) or it is detached; either
/// way the packed copy never sees later updates.
PackedRhs packRhs(ExecContext& ctx, const Tensor& w, Tag axis);

}  // namespace fucina
