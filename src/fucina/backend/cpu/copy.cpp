#include "fucina/backend/cpu/copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "fucina/core/error.h"
#include "fucina/core/q8.h"
#include "fucina/exec/context.h"
#include "fucina/backend/cpu/strided.h"
#include "fucina/backend/element_io.h"

namespace fucina::kernels {
namespace {

using internal::RawTensor;

using backend::io::load;
using backend::io::store;

std::byte* bytesAt(const RawTensor& t) { return t.bytes(); }

constexpr int64_t kCopyGrain = 64 * 1024;  // elements per parallel chunk

// The one strided copy loop: src and dst described by base pointer, dtype and strides.
void copyStrided(const std::byte* s, DType sdt, const std::vector<int64_t>& sstrides, std::byte* d,
                 DType ddt, const std::vector<int64_t>& dstrides, const Extents& shape,
                 const ExecContext* ctx = nullptr) {
  const auto plan = planStrided<2>(shape, {&sstrides, &dstrides});
  // Signed: a flipped view's rows start below its base pointer (negative offsets).
  const int64_t es = static_cast<int64_t>(elementSize(sdt));
  const bool f32 = sdt == DType::f32 && ddt == DType::f32;
  forEachRowParallel(ctx, plan, kCopyGrain, [&](auto off, int64_t n, auto st) {
    if (sdt == ddt && st[0] == 1 && st[1] == 1) {
      std::memcpy(d + off[1] * es, s + off[0] * es, static_cast<size_t>(n * es));
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

// Dequantizes q8_0 src (any view: element e = offset + Σ index·stride is value e % 32 of block
// e / 32) into d, of dtype ddt with strides dstrides.
void dequantize(const RawTensor& src, std::byte* d, DType ddt, const std::vector<int64_t>& dstrides,
                const ExecContext* ctx) {
  const auto plan = planStrided<2>(src.shape(), {&src.strides(), &dstrides});
  const std::byte* base = src.storage()->data();
  forEachRowParallel(ctx, plan, kCopyGrain, [&](auto off, int64_t n, auto st) {
    int64_t e = src.offset() + off[0], o = off[1];
    if (st[0] != 1) {
      for (int64_t i = 0; i < n; ++i, e += st[0], o += st[1]) store(d, ddt, o, q8::load(base, e));
      return;
    }
    // Along the block axis: the block's scale is read once per run inside it.
    for (int64_t i = 0; i < n;) {
      const std::byte* block = q8::blockOf(base, e);
      const float scale = q8::scaleOf(block);
      const int8_t* q = q8::valuesOf(block);
      const int64_t m = std::min(n - i, q8::kBlock - e % q8::kBlock);
      for (int64_t j = e % q8::kBlock, k = 0; k < m; ++j, ++k, o += st[1]) {
        const float v = scale * static_cast<float>(q[j]);
        if (ddt == DType::f32) reinterpret_cast<float*>(d)[o] = v;
        else store(d, ddt, o, v);
      }
      i += m;
      e += m;
    }
  });
}

}  // namespace

void copyBlocks(const RawTensor& src, const RawTensor& dst, const ExecContext* ctx) {
  if (src.shape() != dst.shape() || src.dtype() != DType::q8_0 || dst.dtype() != DType::q8_0)
    fail(ErrorCode::ShapeMismatch, "copyBlocks from " + src.describe() + " " +
                                       std::string(name(src.dtype())) + " into " + dst.describe() +
                                       " " + std::string(name(dst.dtype())) + ": both must be q8_0 of one shape");
  const size_t a = src.axis(internal::blockAxisOf(src));
  if (dst.axis(internal::blockAxisOf(dst)) != a)
    fail(ErrorCode::InvalidArgument, "copyBlocks: " + src.describe() + " and " + dst.describe() +
                                         " have their q8_0 blocks along different axes");
  if (src.numel() == 0) return;
  // One step per block: the block axis counts blocks, 32 elements apart.
  Extents shape = src.shape();
  shape[a] /= q8::kBlock;
  std::vector<int64_t> ss = src.strides(), ds = dst.strides();
  ss[a] = ds[a] = q8::kBlock;
  const auto plan = planStrided<2>(shape, {&ss, &ds});
  const std::byte* s = src.storage()->data();
  std::byte* d = dst.storage()->data();
  auto at = [](int64_t e) { return static_cast<size_t>(e / q8::kBlock) * q8::kBlockBytes; };
  forEachRowParallel(ctx, plan, kCopyGrain / q8::kBlock, [&](auto off, int64_t n, auto st) {
    const int64_t es = src.offset() + off[0], ed = dst.offset() + off[1];
    if (st[0] == q8::kBlock && st[1] == q8::kBlock) {  // a run of consecutive blocks
      std::memcpy(d + at(ed), s + at(es), static_cast<size_t>(n) * q8::kBlockBytes);
      return;
    }
    for (int64_t i = 0; i < n; ++i) std::memcpy(d + at(ed + i * st[1]), s + at(es + i * st[0]), q8::kBlockBytes);
  });
}

void copyConvert(const RawTensor& src, const RawTensor& dst, const ExecContext* ctx) {
  if (src.shape() != dst.shape())
    fail(ErrorCode::ShapeMismatch, "copy from " + src.describe() + " into " + dst.describe());
  if (dst.dtype() == DType::q8_0)
    fail(ErrorCode::DTypeMismatch, "cannot write into q8_0 " + dst.describe() +
                                       " element by element: q8_0 is block-quantized; make it with "
                                       "quantize(ctx, DType::q8_0, block_axis)");
  if (src.numel() == 0) return;
  if (src.dtype() == DType::q8_0) return dequantize(src, bytesAt(dst), dst.dtype(), dst.strides(), ctx);
  copyStrided(bytesAt(src), src.dtype(), src.strides(), bytesAt(dst), dst.dtype(), dst.strides(),
              src.shape(), ctx);
}

void copyToF32(const RawTensor& src, float* out) {
  if (src.numel() == 0) return;
  if (src.dtype() == DType::q8_0)
    return dequantize(src, reinterpret_cast<std::byte*>(out), DType::f32, contiguousStrides(src.shape()), nullptr);
  copyStrided(bytesAt(src), src.dtype(), src.strides(), reinterpret_cast<std::byte*>(out),
              DType::f32, contiguousStrides(src.shape()), src.shape());
}

void copyFromF32(const float* in, const RawTensor& dst) {
  if (dst.numel() == 0) return;
  copyStrided(reinterpret_cast<const std::byte*>(in), DType::f32, contiguousStrides(dst.shape()),
              bytesAt(dst), dst.dtype(), dst.strides(), dst.shape());
}

void copyFromF64(const double* in, const RawTensor& dst) {
  if (dst.numel() == 0) return;
  copyStrided(reinterpret_cast<const std::byte*>(in), DType::f64, contiguousStrides(dst.shape()), bytesAt(dst),
              dst.dtype(), dst.strides(), dst.shape());
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
