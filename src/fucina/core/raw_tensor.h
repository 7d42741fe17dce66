/// @file
/// RawTensor (§8): a strided view of named axes over refcounted Storage. Never carries gradient
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
  /// Copies values (given as f32) into a new tensor of dtype; values.size() must equal numel.
  static RawTensor fromSlice(ExecContext& ctx, Tags tags, Extents shape,
                             std::span<const float> values, DType dtype = DType::f32);

  bool valid() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
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

  bool isContiguous() const;  ///< row-major, no gaps (any offset)
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

  /// Values in logical row-major order, converted to f32.
  std::vector<float> toVector() const;

  // --- views (share storage) ---
  RawTensor withTags(Tags tags) const;                        ///< rename axes, same order
  RawTensor permuted(const Tags& order) const;                ///< reorder axes by name
  RawTensor narrowed(Tag tag, int64_t start, int64_t length) const;
  /// View with extra axes of stride 0 so that it reads as `shape` under `tags` (which must hold
  /// every axis of this tensor with the same extent).
  RawTensor broadcastView(const Tags& tags, const Extents& shape) const;
  static RawTensor view(std::shared_ptr<Storage> storage, DType dtype, Tags tags, Extents shape,
                        std::vector<int64_t> strides, int64_t offset);

  // --- copies (through ctx's allocator) ---
  RawTensor clone(ExecContext& ctx) const;        ///< contiguous deep copy
  RawTensor contiguous(ExecContext& ctx) const;   ///< this, or a contiguous copy when strided
  RawTensor to(ExecContext& ctx, DType dtype) const;  ///< contiguous copy converted to dtype

 private:
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::f32;
  Tags tags_;
  Extents shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
};

}  // namespace fucina::internal
