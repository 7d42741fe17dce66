// The members of RawTensor that allocate from a context's account or move elements: through the
// context's backend (Kernels::fill and copy), so a tensor's copies compute where its context
// does. The host's own reads and writes (fromSlice's values, toVector, q8_0 blocks copied whole)
// are the cpu's copies.
#include <cstring>
#include <limits>
#include <type_traits>

#include "fucina/backend/cpu/copy.h"
#include "fucina/backend/kernels.h"
#include "fucina/core/error.h"
#include "fucina/core/q8.h"
#include "fucina/core/raw_tensor.h"
#include "fucina/exec/context.h"

namespace fucina::internal {
namespace {

void requireElementType(DType dtype, std::string_view what) {
  if (dtype == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, std::string(what) +
                                       ": q8_0 is block-quantized; make it with quantize(ctx, "
                                       "DType::q8_0, block_axis), not element-wise");
}

// A buffer of `bytes` for numel elements, refused in 64 bits: on wasm32 a large shape's byte
// count would wrap around size_t.
std::shared_ptr<Storage> allocate(ExecContext& ctx, const Tags& tags, const Extents& shape,
                                  uint64_t bytes, DType dtype) {
  if (bytes > std::numeric_limits<size_t>::max())
    fail(ErrorCode::OutOfMemory, "tensor " + fucina::describe(tags, shape) + " needs " +
                                     std::to_string(bytes) + " bytes, more than the address space");
  return std::make_shared<Storage>(ctx.account(), static_cast<size_t>(bytes), dtype);
}

}  // namespace

RawTensor RawTensor::empty(ExecContext& ctx, Tags tags, Extents shape, DType dtype) {
  validateShape(tags, shape, "tensor");
  requireElementType(dtype, "tensor");
  RawTensor t;
  t.storage_ = allocate(ctx, tags, shape, static_cast<uint64_t>(numelOf(shape)) * elementSize(dtype), dtype);
  t.dtype_ = dtype;
  t.strides_ = contiguousStrides(shape);
  t.tags_ = std::move(tags);
  t.shape_ = std::move(shape);
  return t;
}

RawTensor RawTensor::emptyQ8(ExecContext& ctx, Tags tags, Extents shape, Tag block_axis) {
  validateShape(tags, shape, "q8_0 tensor");
  const auto b = findTag(tags, block_axis);
  if (!b)
    fail(ErrorCode::ShapeMismatch, "q8_0 block axis " + quoted(block_axis) + " is not one of " +
                                       fucina::describe(tags, shape));
  if (shape[*b] % q8::kBlock != 0)
    fail(ErrorCode::InvalidArgument, "q8_0 blocks are 32 elements of the block axis: " +
                                         quoted(block_axis) + " of " + fucina::describe(tags, shape) +
                                         " has extent " + std::to_string(shape[*b]) +
                                         ", not a multiple of 32");
  RawTensor t;
  t.storage_ = allocate(ctx, tags, shape, q8::bytesFor(numelOf(shape)), DType::q8_0);
  t.dtype_ = DType::q8_0;
  t.strides_ = q8Strides(tags, shape, block_axis);
  t.tags_ = std::move(tags);
  t.shape_ = std::move(shape);
  return t;
}

RawTensor RawTensor::zeros(ExecContext& ctx, Tags tags, Extents shape, DType dtype) {
  RawTensor t = empty(ctx, std::move(tags), std::move(shape), dtype);
  if (dtype == DType::f32 || ctx.device() != Device::cpu) {
    backend::kernelsOf(ctx).fill(ctx, t, 0.0);  // on the pool when large (a step's gradient buffers)
  } else if (t.storage_->bytes() > 0) {
    std::memset(t.storage_->data(), 0, t.storage_->bytes());
  }
  return t;
}

RawTensor RawTensor::full(ExecContext& ctx, Tags tags, Extents shape, double value, DType dtype) {
  RawTensor t = empty(ctx, std::move(tags), std::move(shape), dtype);
  backend::kernelsOf(ctx).fill(ctx, t, value);
  return t;
}

namespace {

// Values (f32 or f64, row-major) into a new tensor of dtype, converted on the host.
template <class T>
RawTensor fromValues(ExecContext& ctx, Tags tags, Extents shape, std::span<const T> values, DType dtype) {
  validateShape(tags, shape, "fromSlice");
  if (static_cast<int64_t>(values.size()) != numelOf(shape))
    fail(ErrorCode::ShapeMismatch, "fromSlice: shape " + fucina::describe(tags, shape) + " holds " +
                                       std::to_string(numelOf(shape)) + " values but " +
                                       std::to_string(values.size()) + " were given");
  if (ctx.device() != Device::cpu) {  // converted on the host, then uploaded
    ExecContext& host = ctx.on(Device::cpu);
    const RawTensor h = fromValues(host, tags, shape, values, dtype);
    RawTensor t = RawTensor::empty(ctx, std::move(tags), std::move(shape), dtype);
    backend::kernelsOf(ctx).copy(ctx, h, t);
    return t;
  }
  RawTensor t = RawTensor::empty(ctx, std::move(tags), std::move(shape), dtype);
  if constexpr (std::is_same_v<T, float>) kernels::copyFromF32(values.data(), t);
  else kernels::copyFromF64(values.data(), t);
  return t;
}

}  // namespace

RawTensor RawTensor::fromSlice(ExecContext& ctx, Tags tags, Extents shape, std::span<const float> values,
                               DType dtype) {
  return fromValues(ctx, std::move(tags), std::move(shape), values, dtype);
}

RawTensor RawTensor::fromSlice(ExecContext& ctx, Tags tags, Extents shape, std::span<const double> values,
                               DType dtype) {
  return fromValues(ctx, std::move(tags), std::move(shape), values, dtype);
}

std::vector<float> RawTensor::toVector() const {
  if (!valid()) return {};
  std::vector<float> out = withOutOfMemoryAsError(
      "toVector of " + describe(), [&] { return std::vector<float>(static_cast<size_t>(numel())); });
  if (out.empty()) return out;
  kernels::copyToF32(*this, out.data());
  return out;
}

RawTensor RawTensor::clone(ExecContext& ctx) const { return to(ctx, dtype_); }

RawTensor RawTensor::contiguous(ExecContext& ctx) const {
  if (dtype_ == DType::q8_0)
    return strides_ == q8Strides(tags_, shape_, blockAxisOf(*this)) ? *this : clone(ctx);
  return isContiguous() ? *this : clone(ctx);
}

RawTensor RawTensor::to(ExecContext& ctx, DType dtype) const {
  if (dtype == DType::q8_0) {
    if (dtype_ != DType::q8_0)
      fail(ErrorCode::DTypeMismatch, "to(q8_0) of " + std::string(name(dtype_)) + " " + describe() +
                                         ": q8_0 is block-quantized, made by quantize(ctx, "
                                         "DType::q8_0, block_axis), not by an element-wise cast");
    RawTensor out = emptyQ8(ctx, tags_, shape_, blockAxisOf(*this));
    kernels::copyBlocks(*this, out, &ctx);
    return out;
  }
  RawTensor out = empty(ctx, tags_, shape_, dtype);
  backend::kernelsOf(ctx).copy(ctx, *this, out);
  return out;
}

}  // namespace fucina::internal
