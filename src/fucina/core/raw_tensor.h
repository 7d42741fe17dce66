/// @file
/// RawTensor: a strided view of named axes over refcounted Storage. Never carries gradient
/// state. Views (permute, narrow, retag, detach) share storage; nothing here copies unless it says so.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fucina/core/dtype.h"
#include "fucina/core/shape.h"
#include "fucina/core/storage.h"

namespace fucina {
class ExecContext;
}

namespace fucina::internal {

class RawTensor {
 public:
  RawTensor() = default;  ///< an empty handle: valid() is false

  /// New contiguous buffers made through ctx's allocator.
  static RawTensor empty(ExecContext& ctx, Tags tags, Extents shape, DType dtype = DType::f32);
  static RawTensor zeros(ExecContext& ctx, Tags tags, Extents shape, DType dtype = DType::f32);
  static RawTensor full(ExecContext& ctx, Tags tags, Extents shape, double value,
                        DType dtype = DType::f32);
  /// A new q8_0 buffer (Note [q8_0 layout], core/q8.h) of q8::bytesFor(numel) bytes, blocks of 32
  /// along block_axis: stored as the other axes in the given order, then block_axis innermost
  /// (stride 1); tags, shape and strides come back in the given order. A block axis that is
  /// missing is ShapeMismatch, one whose extent is not a multiple of 32 InvalidArgument.
  static RawTensor emptyQ8(ExecContext& ctx, Tags tags, Extents shape, Tag block_axis);
  /// Copies values (given as f32) into a new tensor of dtype; values.size() must equal numel.
  static RawTensor fromSlice(ExecContext& ctx, Tags tags, Extents shape,
                             std::span<const float> values, DType dtype = DType::f32);
  /// The same from values given as f64: exact into f64, and into integers up to 2^53.
  static RawTensor fromSlice(ExecContext& ctx, Tags tags, Extents shape, std::span<const double> values, DType dtype);

  bool valid() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  /// The device of its storage (cpu for an empty handle).
  Device device() const { return storage_ ? storage_->device() : Device::cpu; }
  const Tags& tags() const { return tags_; }
  const Extents& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }  ///< in elements
  int64_t offset() const { return offset_; }                         ///< in elements
  size_t rank() const { return tags_.size(); }
  int64_t numel() const { return numelOf(shape_); }
  /// Extent of the axis named tag; throws ShapeMismatch naming the tags when absent.
  int64_t extent(Tag tag) const;
  size_t axis(Tag tag) const;  ///< position of tag, same error
  /// Element offsets (from the first element) of every index over `axes`, row-major in the listed
  /// order: where the sub-tensors of the other axes start (a GEMM's batch of matrices).
  std::vector<int64_t> offsetsOver(const Tags& axes) const;
  std::string describe() const;  ///< "{batch=2, in=3}"

  bool isContiguous() const;  ///< row-major, no gaps (any offset); for q8_0 see contiguous()
  /// True when this handle is the only owner of its buffer: the engine may then write in place.
  bool isExclusive() const { return storage_ && storage_.use_count() == 1; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  /// Typed pointer to the first element (storage base + offset). T must match the dtype's size.
  /// Null for an empty tensor without a buffer: no offset is added to null (UBSan, ops_fuzz).
  template <class T>
  T* data() const {
    std::byte* base = storage_->data();
    return base ? reinterpret_cast<T*>(base) + offset_ : nullptr;
  }
  float* f32() const;  ///< data<float>() after checking dtype == f32
  /// The first element's bytes (a q8_0 view's: its block's), or nullptr when the storage is empty:
  /// an empty view's offset is never applied to a null buffer (undefined behaviour).
  std::byte* bytes() const;

  /// Values in logical row-major order, converted to f32 (q8_0 dequantized).
  std::vector<float> toVector() const;

  // --- views (share storage) ---
  RawTensor withTags(Tags tags) const;                        ///< rename axes, same order
  RawTensor permuted(const Tags& order) const;                ///< reorder axes by name
  /// On q8_0, the block axis narrows only by whole blocks (start and length multiples of 32).
  RawTensor narrowed(Tag tag, int64_t start, int64_t length) const;
  /// View with extra axes of stride 0 so that it reads as `shape` under `tags` (which must hold
  /// every axis of this tensor with the same extent).
  RawTensor broadcastView(const Tags& tags, const Extents& shape) const;
  static RawTensor view(std::shared_ptr<Storage> storage, DType dtype, Tags tags, Extents shape,
                        std::vector<int64_t> strides, int64_t offset);

  // --- copies (through ctx's allocator) ---
  /// Contiguous deep copy. A q8_0 tensor is copied block by block into the layout emptyQ8 makes
  /// for its tags and block axis (row-major only when the block axis is last).
  RawTensor clone(ExecContext& ctx) const;
  /// This, or a contiguous copy when strided. For q8_0: this when already in emptyQ8's layout.
  RawTensor contiguous(ExecContext& ctx) const;
  /// Contiguous copy converted to dtype. From q8_0 it dequantizes (any view); to q8_0 only from
  /// q8_0 (a block copy): other dtypes are quantized by Tensor::quantize (DTypeMismatch here).
  RawTensor to(ExecContext& ctx, DType dtype) const;

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::f32;
  Tags tags_;
  Extents shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
};

/// The block axis of a q8_0 tensor: its stride-1 axis (Note [q8_0 layout]). A q8_0 view whose
/// blocks are not whole (no stride-1 axis of extent a multiple of 32, or another axis or the
/// offset not a multiple of 32) is InvalidArgument; a tensor of another dtype DTypeMismatch.
Tag blockAxisOf(const RawTensor& t);
/// The element strides emptyQ8 gives tags/shape with blocks along block_axis.
std::vector<int64_t> q8Strides(const Tags& tags, const Extents& shape, Tag block_axis);

}  // namespace fucina::internal
