// RawTensor's views and metadata. What allocates or moves elements (the factories, clone, to,
// contiguous, toVector) needs a context and its backend: backend/raw_tensor_memory.cpp.
#include "fucina/core/raw_tensor.h"

#include <optional>

#include "fucina/core/error.h"
#include "fucina/core/q8.h"

namespace fucina::internal {

std::vector<int64_t> q8Strides(const Tags& tags, const Extents& shape, Tag block_axis) {
  const auto b = findTag(tags, block_axis);
  std::vector<int64_t> strides(tags.size(), 1);
  if (!b) return strides;
  // Row-major over the storage order: the other axes as given, then the block axis.
  int64_t inner = shape[*b];
  for (size_t i = tags.size(); i-- > 0;) {
    if (i == *b) continue;
    strides[i] = inner;
    inner *= shape[i];
  }
  return strides;
}

Tag blockAxisOf(const RawTensor& t) {
  if (t.dtype() != DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "blockAxisOf: " + t.describe() + " is " +
                                       std::string(name(t.dtype())) + ", not q8_0");
  std::optional<size_t> block;
  bool whole = t.offset() % q8::kBlock == 0;
  for (size_t i = 0; i < t.rank(); ++i) {
    if (t.strides()[i] == 1 && !block) block = i;
    else whole = whole && t.strides()[i] % q8::kBlock == 0;
  }
  if (!block || !whole || t.shape()[*block] % q8::kBlock != 0)
    fail(ErrorCode::InvalidArgument,
         "q8_0 view " + t.describe() + " does not hold whole blocks (Note [q8_0 layout]: a stride-1 "
         "block axis of extent a multiple of 32, other strides and the offset multiples of 32); "
         "dequantize with to(ctx, DType::f32)");
  return t.tags()[*block];
}

std::vector<int64_t> RawTensor::offsetsOver(const Tags& axes) const {
  std::vector<int64_t> offsets{0};
  for (Tag tag : axes) {
    const int64_t e = extent(tag), s = strides_[axis(tag)];
    std::vector<int64_t> next;
    next.reserve(offsets.size() * static_cast<size_t>(e));
    for (int64_t o : offsets)
      for (int64_t x = 0; x < e; ++x) next.push_back(o + x * s);
    offsets.swap(next);
  }
  return offsets;
}

int64_t RawTensor::extent(Tag tag) const { return shape_[axis(tag)]; }

size_t RawTensor::axis(Tag tag) const {
  if (auto i = findTag(tags_, tag)) return *i;
  fail(ErrorCode::ShapeMismatch,
       "axis '" + std::string(tag.name()) + "' is not one of " + describe());
}

std::string RawTensor::describe() const { return fucina::describe(tags_, shape_); }

bool RawTensor::isContiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return numel() == 0;
    expected *= shape_[i];
  }
  return true;
}

std::byte* RawTensor::bytes() const {
  std::byte* base = storage_->data();
  if (!base) return nullptr;
  return dtype_ == DType::q8_0 ? base + q8::bytesFor(offset_) : base + offset_ * static_cast<int64_t>(elementSize(dtype_));
}

float* RawTensor::f32() const {
  if (!valid()) fail(ErrorCode::InvalidArgument, "empty tensor");
  if (dtype_ != DType::f32)
    fail(ErrorCode::DTypeMismatch, "expected an f32 tensor, got " + std::string(name(dtype_)) +
                                       " " + describe() + "; convert with to(ctx, DType::f32)");
  return data<float>();
}

RawTensor RawTensor::view(std::shared_ptr<Storage> storage, DType dtype, Tags tags, Extents shape,
                          std::vector<int64_t> strides, int64_t offset) {
  RawTensor t;
  t.storage_ = std::move(storage);
  t.dtype_ = dtype;
  t.tags_ = std::move(tags);
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  return t;
}

RawTensor RawTensor::withTags(Tags tags) const {
  if (tags.size() != tags_.size())
    fail(ErrorCode::ShapeMismatch, "withTags: " + std::to_string(tags.size()) + " tags " +
                                       fucina::describe(tags) + " for " + describe());
  validateShape(tags, shape_, "withTags");
  return view(storage_, dtype_, std::move(tags), shape_, strides_, offset_);
}

RawTensor RawTensor::permuted(const Tags& order) const {
  if (order.size() != tags_.size())
    fail(ErrorCode::ShapeMismatch, "permute " + describe() + " to " + fucina::describe(order) +
                                       ": the order must name every axis once");
  Extents shape;
  std::vector<int64_t> strides;
  for (Tag tag : order) {
    const size_t a = axis(tag);
    shape.push_back(shape_[a]);
    strides.push_back(strides_[a]);
  }
  validateShape(order, shape, "permute");
  return view(storage_, dtype_, order, std::move(shape), std::move(strides), offset_);
}

RawTensor RawTensor::narrowed(Tag tag, int64_t start, int64_t length) const {
  const size_t a = axis(tag);
  if (start < 0 || length < 0 || start > shape_[a] - length)
    fail(ErrorCode::IndexOutOfRange, "narrow '" + std::string(tag.name()) + "' of " + describe() +
                                         " to start " + std::to_string(start) + ", length " +
                                         std::to_string(length));
  // A q8_0 block axis (stride 1) keeps whole blocks, so that the view is q8_0 too.
  if (dtype_ == DType::q8_0 && strides_[a] == 1 && (start % q8::kBlock || length % q8::kBlock))
    fail(ErrorCode::InvalidArgument, "narrow the q8_0 block axis '" + std::string(tag.name()) +
                                         "' of " + describe() + " to start " + std::to_string(start) +
                                         ", length " + std::to_string(length) +
                                         ": both must be multiples of 32 (whole blocks)");
  Extents shape = shape_;
  shape[a] = length;
  return view(storage_, dtype_, tags_, std::move(shape), strides_, offset_ + start * strides_[a]);
}

RawTensor RawTensor::broadcastView(const Tags& tags, const Extents& shape) const {
  validateShape(tags, shape, "broadcastTo");
  for (size_t i = 0; i < tags_.size(); ++i) {
    auto j = findTag(tags, tags_[i]);
    if (!j || shape[*j] != shape_[i])
      fail(ErrorCode::ShapeMismatch, "cannot broadcast " + describe() + " to " +
                                         fucina::describe(tags, shape) +
                                         ": every axis must appear with the same extent");
  }
  std::vector<int64_t> strides(tags.size(), 0);
  for (size_t j = 0; j < tags.size(); ++j)
    if (auto i = findTag(tags_, tags[j])) strides[j] = strides_[*i];
  return view(storage_, dtype_, tags, shape, std::move(strides), offset_);
}

}  // namespace fucina::internal
