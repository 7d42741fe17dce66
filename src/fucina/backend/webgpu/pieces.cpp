// Windows of buffers larger than one binding, and strided and row kernels run in pieces whose
// windows fit (Note [Bound in pieces]).
#include "fucina/backend/webgpu/pieces.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "fucina/core/error.h"
#include "fucina/core/q8.h"

namespace fucina::backend::webgpu {
namespace {

constexpr uint64_t kOffsetAlign = 256;  // WebGPU's minStorageBufferOffsetAlignment

// The fewest elements (whole q8_0 blocks) whose bytes are a multiple of the offset alignment.
int64_t granule(DType dtype) {
  if (dtype == DType::q8_0) return q8::kBlock * static_cast<int64_t>(kOffsetAlign);  // 34·256 bytes
  return static_cast<int64_t>(kOffsetAlign / std::gcd(kOffsetAlign, static_cast<uint64_t>(elementSize(dtype))));
}

uint64_t roundUp4(uint64_t bytes) { return (bytes + 3) / 4 * 4; }

}  // namespace

uint64_t elementBytes(DType dtype, int64_t count) {
  if (dtype == DType::q8_0) return static_cast<uint64_t>((count + q8::kBlock - 1) / q8::kBlock) * q8::kBlockBytes;
  return static_cast<uint64_t>(count) * elementSize(dtype);
}

Bound bindRange(uint32_t buffer, DType dtype, int64_t lo, int64_t hi) {
  Gpu& gpu = Gpu::get();
  const uint64_t limit = gpu.bindingLimit(), bytes = gpu.bytesOf(buffer);
  if (bytes <= limit) return {};
  const int64_t g = granule(dtype);
  const int64_t shift = std::max<int64_t>(lo, 0) / g * g;
  const uint64_t offset = elementBytes(dtype, shift);
  const uint64_t end = std::min(bytes, roundUp4(elementBytes(dtype, std::max(hi, lo + 1))));
  const Window w{offset, end - offset};
  return {w, shift, w.size <= limit};
}

bool overBinding(std::span<const uint32_t> buffers) {
  Gpu& gpu = Gpu::get();
  return std::any_of(buffers.begin(), buffers.end(), [&](uint32_t b) { return gpu.bytesOf(b) > gpu.bindingLimit(); });
}

bool windowFits(DType dtype, int64_t elements) {
  return elementBytes(dtype, elements + granule(dtype)) + 4 <= Gpu::get().bindingLimit();
}

Span spanOf(int64_t offset, std::span<const int64_t> extents, std::span<const int64_t> strides) {
  Span s{offset, offset + 1};
  for (size_t d = 0; d < extents.size(); ++d) {
    if (extents[d] == 0) return {offset, offset};
    const int64_t reach = strides[d] * (extents[d] - 1);
    (reach < 0 ? s.lo : s.hi) += reach;
  }
  return s;
}

void dispatchStrided(uint32_t pipeline, std::span<const uint32_t> buffers, std::span<const DType> dtypes,
                     const StridedLayout& layout, Uniforms u) {
  const uint64_t limit = Gpu::get().bindingLimit();
  if (!overBinding(buffers) || layout.n == 0) return dispatchLinear(pipeline, buffers, u, layout.n);
  const size_t rank = layout.shape.size();
  // Pieces are blocks: one index of each axis before `split`, `c` indices of axis split, all of
  // the axes after it; split the outermost axis that lets every operand's window fit wherever
  // the block starts, c the most that does.
  const size_t operands = layout.strides.size();  // the buffers after them are bound whole
  auto fits = [&](size_t split, int64_t c) {
    for (size_t k = 0; k < operands; ++k) {
      std::vector<int64_t> extents(layout.shape.begin() + static_cast<std::ptrdiff_t>(split), layout.shape.end());
      if (!extents.empty()) extents[0] = c;
      const Span s = spanOf(0, extents, std::span(layout.strides[k]).subspan(split));
      if (!windowFits(dtypes[k], s.hi - s.lo)) return false;
    }
    return true;
  };
  size_t split = 0;
  while (split < rank && !fits(split, 1)) ++split;
  if (split == rank && !fits(rank, 1))
    unsupported("a strided kernel over elements too far apart for one binding (" + std::to_string(limit) +
                " bytes: Note [Bound in pieces])");
  const int64_t extent = split < rank ? layout.shape[split] : 1;
  int64_t c = 1, hi = extent;  // the largest c in [1, extent] that fits, by bisection
  while (c < hi) {
    const int64_t mid = c + (hi - c + 1) / 2;
    if (fits(split, mid)) c = mid;
    else hi = mid - 1;
  }
  // Every block: its index along the axes before split (row-major), then its chunk of split.
  const int64_t before = numelOf(layout.shape, 0, split);
  const int64_t inner = split < rank ? layout.n / before / extent : 1;
  std::vector<Window> windows(buffers.size());
  for (int64_t outer = 0; outer < before; ++outer) {
    for (int64_t c0 = 0; c0 < extent; c0 += c) {
      StridedLayout p;
      p.shape.assign(layout.shape.begin() + static_cast<std::ptrdiff_t>(split), layout.shape.end());
      if (!p.shape.empty()) p.shape[0] = std::min(c, extent - c0);
      p.n = (p.shape.empty() ? 1 : p.shape[0]) * inner;
      for (size_t k = 0; k < operands; ++k) {
        int64_t offset = layout.offsets[k], rem = outer;
        for (size_t d = split; d-- > 0;) {
          offset += rem % layout.shape[d] * layout.strides[k][d];
          rem /= layout.shape[d];
        }
        if (split < rank) offset += c0 * layout.strides[k][split];
        p.strides.emplace_back(layout.strides[k].begin() + static_cast<std::ptrdiff_t>(split), layout.strides[k].end());
        const Span s = spanOf(offset, p.shape, p.strides[k]);
        const Bound b = bindRange(buffers[k], dtypes[k], s.lo, s.hi);
        if (!b.fits) unsupported("a strided kernel's block over one binding (Note [Bound in pieces])");
        windows[k] = b.window;
        p.offsets.push_back(offset - b.shift);
      }
      Uniforms pu = p.uniforms();
      for (uint32_t w = kParamWord; w < u.words.size(); ++w) pu.set(w, u.words[w]);
      dispatchLinear(pipeline, buffers, pu, p.n, windows);
    }
  }
}

namespace {

// Pieces of rows: aligned, each starting at a row where every window starts on the offset
// alignment; else anywhere, each window starting before its row by shifts[j] bytes.
void rowPieces(std::span<const uint32_t> buffers, std::span<const uint64_t> row_bytes, int64_t rows, bool aligned,
               const std::function<void(int64_t, int64_t, std::span<const Window>, std::span<const uint64_t>)>& run) {
  Gpu& gpu = Gpu::get();
  const uint64_t limit = gpu.bindingLimit();
  if (!overBinding(buffers) || row_bytes.empty() || rows == 0) return run(0, rows, {}, {});
  uint64_t align = 1, widest = 0;
  for (const uint64_t rb : row_bytes) {
    if (rb == 0) continue;
    if (aligned) align = std::max(align, kOffsetAlign / std::gcd(rb, kOffsetAlign));
    widest = std::max(widest, rb);
  }
  const uint64_t room = limit - 4 - (aligned ? 0 : kOffsetAlign);
  const int64_t per = widest == 0 ? rows : static_cast<int64_t>(room / widest / align * align);
  if (per == 0)
    unsupported("rows of " + std::to_string(widest) + " bytes, " + std::to_string(align) +
                " of which are wider than one binding (" + std::to_string(limit) + " bytes: Note [Bound in pieces])");
  std::vector<Window> windows(buffers.size());
  std::vector<uint64_t> shifts(buffers.size());
  for (int64_t r0 = 0; r0 < rows; r0 += per) {
    const int64_t n = std::min(per, rows - r0);
    for (size_t j = 0; j < buffers.size(); ++j) {
      if (row_bytes[j] == 0) continue;
      const uint64_t at = static_cast<uint64_t>(r0) * row_bytes[j], offset = at / kOffsetAlign * kOffsetAlign;
      shifts[j] = at - offset;
      const uint64_t size = roundUp4(shifts[j] + static_cast<uint64_t>(n) * row_bytes[j]);
      windows[j] = {offset, std::min(gpu.bytesOf(buffers[j]) - offset, size)};
    }
    run(r0, n, windows, shifts);
  }
}

}  // namespace

void inRowPieces(std::span<const uint32_t> buffers, std::span<const uint64_t> row_bytes, int64_t rows,
                 const std::function<void(int64_t first, int64_t rows, std::span<const Window> windows)>& run) {
  rowPieces(buffers, row_bytes, rows, true,
            [&](int64_t first, int64_t n, std::span<const Window> windows, std::span<const uint64_t>) {
              run(first, n, windows);
            });
}

void inShiftedRowPieces(std::span<const uint32_t> buffers, std::span<const uint64_t> row_bytes, int64_t rows,
                        const std::function<void(int64_t first, int64_t rows, std::span<const Window> windows,
                                                 std::span<const uint64_t> shifts)>& run) {
  rowPieces(buffers, row_bytes, rows, false, run);
}

void dispatchElements(uint32_t pipeline, std::span<const uint32_t> buffers, std::span<const uint64_t> elem_bytes,
                      Uniforms u, int64_t n, int first_word) {
  inRowPieces(buffers, elem_bytes, n, [&](int64_t first, int64_t count, std::span<const Window> windows) {
    u.set(0, static_cast<uint32_t>(count));
    if (first_word >= 0) u.set(static_cast<uint32_t>(first_word), static_cast<uint32_t>(first));
    dispatchLinear(pipeline, buffers, u, count, windows);
  });
}

}  // namespace fucina::backend::webgpu
