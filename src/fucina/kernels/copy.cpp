#include "fucina/kernels/copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "fucina/core/error.h"
#include "fucina/exec/context.h"
#include "fucina/kernels/strided.h"

namespace fucina::kernels {
namespace {

using internal::RawTensor;

double load(const std::byte* base, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::f32: return reinterpret_cast<const float*>(base)[i];
    case DType::f16: return f16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::bf16: return bf16ToF32(reinterpret_cast<const uint16_t*>(base)[i]);
    case DType::f64: return reinterpret_cast<const double*>(base)[i];
    case DType::i32: return reinterpret_cast<const int32_t*>(base)[i];
    case DType::i64: return static_cast<double>(reinterpret_cast<const int64_t*>(base)[i]);
    case DType::u8: return reinterpret_cast<const uint8_t*>(base)[i];
    case DType::q8_0: break;
  }
  fail(ErrorCode::DTypeMismatch, "q8_0 tensors have no element-wise representation");
}

// Float -> integer casts truncate toward zero and saturate; NaN becomes 0 (defined, unlike C++).
template <class I>
I saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

void store(std::byte* base, DType dtype, int64_t i, double v) {
  switch (dtype) {
    case DType::f32: reinterpret_cast<float*>(base)[i] = static_cast<float>(v); return;
    case DType::f16: reinterpret_cast<uint16_t*>(base)[i] = f32ToF16(static_cast<float>(v)); return;
    case DType::bf16: reinterpret_cast<uint16_t*>(base)[i] = f32ToBf16(static_cast<float>(v)); return;
    case DType::f64: reinterpret_cast<double*>(base)[i] = v; return;
    case DType::i32: reinterpret_cast<int32_t*>(base)[i] = saturate<int32_t>(v); return;
    case DType::i64: reinterpret_cast<int64_t*>(base)[i] = saturate<int64_t>(v); return;
    case DType::u8: reinterpret_cast<uint8_t*>(base)[i] = saturate<uint8_t>(v); return;
    case DType::q8_0: break;
  }
  fail(ErrorCode::DTypeMismatch, "q8_0 tensors have no element-wise representation");
}

std::byte* bytesAt(const RawTensor& t) {
  return t.storage()->data() + t.offset() * static_cast<int64_t>(elementSize(t.dtype()));
}

constexpr int64_t kCopyGrain = 64 * 1024;  // elements per parallel chunk

// The one strided copy loop: src and dst described by base pointer, dtype and strides.
void copyStrided(const std::byte* s, DType sdt, const std::vector<int64_t>& sstrides, std::byte* d,
                 DType ddt, const std::vector<int64_t>& dstrides, const Extents& shape,
                 const ExecContext* ctx = nullptr) {
  const auto plan = planStrided<2>(shape, {&sstrides, &dstrides});
  const size_t es = elementSize(sdt);
  const bool f32 = sdt == DType::f32 && ddt == DType::f32;
  forEachRowParallel(ctx, plan, kCopyGrain, [&](auto off, int64_t n, auto st) {
    if (sdt == ddt && st[0] == 1 && st[1] == 1) {
      std::memcpy(d + off[1] * es, s + off[0] * es, static_cast<size_t>(n) * es);
      return;
    }
    if (f32) {  // permutes and broadcasts of f32 tensors: no dtype switch per element
      const float* src = reinterpret_cast<const float*>(s) + off[0];
      float* dst = reinterpret_cast<float*>(d) + off[1];
      for (int64_t i = 0; i < n; ++i) dst[i * st[1]] = src[i * st[0]];
      return;
    }
    for (int64_t i = 0; i < n; ++i) store(d, ddt, off[1] + i * st[1], load(s, sdt, off[0] + i * st[0]));
  });
}

}  // namespace

void copyConvert(const RawTensor& src, const RawTensor& dst, const ExecContext* ctx) {
  if (src.shape() != dst.shape())
    fail(ErrorCode::ShapeMismatch, "copy from " + src.describe() + " into " + dst.describe());
  if (src.dtype() == DType::q8_0 || dst.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "q8_0 tensors have no element-wise representation");
  if (src.numel() == 0) return;
  copyStrided(bytesAt(src), src.dtype(), src.strides(), bytesAt(dst), dst.dtype(), dst.strides(),
              src.shape(), ctx);
}

void copyToF32(const RawTensor& src, float* out) {
  if (src.numel() == 0) return;
  copyStrided(bytesAt(src), src.dtype(), src.strides(), reinterpret_cast<std::byte*>(out),
              DType::f32, contiguousStrides(src.shape()), src.shape());
}

void copyFromF32(const float* in, const RawTensor& dst) {
  if (dst.numel() == 0) return;
  copyStrided(reinterpret_cast<const std::byte*>(in), DType::f32, contiguousStrides(dst.shape()),
              bytesAt(dst), dst.dtype(), dst.strides(), dst.shape());
}

void fill(const RawTensor& dst, double value, const ExecContext* ctx) {
  if (dst.numel() == 0) return;
  const auto plan = planStrided<1>(dst.shape(), {&dst.strides()});
  std::byte* d = bytesAt(dst);
  const bool f32 = dst.dtype() == DType::f32;
  forEachRowParallel(ctx, plan, kCopyGrain, [&](auto off, int64_t n, auto st) {
    if (f32 && st[0] == 1) {  // the common case: no per-element dtype dispatch
      std::fill_n(reinterpret_cast<float*>(d) + off[0], n, static_cast<float>(value));
      return;
    }
    for (int64_t i = 0; i < n; ++i) store(d, dst.dtype(), off[0] + i * st[0], value);
  });
}

}  // namespace fucina::kernels
