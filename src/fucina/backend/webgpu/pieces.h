/// @file
/// Tensors larger than one binding (Note [Bound in pieces]): the windows of their buffers that a
/// dispatch binds, and the two ways kernels split their work so each piece's windows fit.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "fucina/backend/webgpu/wgsl.h"

namespace fucina::backend::webgpu {

/// Note [Bound in pieces]: WebGPU binds at most maxStorageBufferBindingSize bytes of a buffer to a
/// kernel (128 MiB by default, less than GPT-2's f32 embedding), though a buffer may be larger.
/// A kernel over a larger tensor binds a window of its buffer instead: from a multiple of 256
/// bytes (WebGPU's offset alignment), holding the elements the kernel touches, and its offsets
/// are shifted by the elements before the window. The work goes in pieces whose windows fit:
/// GEMMs in blocks of their outputs and depth (gemm.cpp), gathers in ranges of the table's rows
/// (indexing.cpp), row kernels in ranges of rows, and strided kernels along their outermost axis
/// (here). A kernel with no pieces is UnsupportedOnDevice over the limit (Gpu::dispatch).
/// init's deviceLimits lowers the limit, so the suites split small tensors the same way.

/// Bytes holding elements [0, count) of a dtype (q8_0: the blocks they start).
uint64_t elementBytes(DType dtype, int64_t count);

/// How an operand's elements [lo, hi) of its buffer are bound: whole when the buffer fits one
/// binding, else through a window starting at element `shift`; fits is false when even the
/// window is over the limit.
struct Bound {
  Window window;
  int64_t shift = 0;
  bool fits = true;
};
Bound bindRange(uint32_t buffer, DType dtype, int64_t lo, int64_t hi);
/// Whether any of the buffers is over the binding limit (its kernel must bind windows).
bool overBinding(std::span<const uint32_t> buffers);
/// Whether a window over `elements` of a dtype fits one binding wherever they start (a window
/// starts up to one alignment step before its first element).
bool windowFits(DType dtype, int64_t elements);

/// The elements [lo, hi) a strided operand touches: offset + Σ coordinate·stride over extents.
struct Span {
  int64_t lo, hi;
};
Span spanOf(int64_t offset, std::span<const int64_t> extents, std::span<const int64_t> strides);

/// Runs a strided kernel (Note [Strided kernels]): u holds layout's words and the kernel's from
/// kParamWord on; dtypes are the layout's operands' (its first buffers; any after them, a fault
/// buffer, are bound whole). In blocks when an operand's buffer is over the binding limit.
void dispatchStrided(uint32_t pipeline, std::span<const uint32_t> buffers, std::span<const DType> dtypes,
                     const StridedLayout& layout, Uniforms u);

/// Runs a kernel over rows in pieces of whole rows when one of its operands is over the binding
/// limit: row_bytes[j] is buffer j's bytes per row (its row r at byte r·row_bytes[j]), 0 for an
/// operand bound whole. run(first, rows, windows) dispatches the kernel over the piece's rows
/// [first, first + rows), where every row-aligned operand's window starts; windows is empty when
/// everything fits whole.
void inRowPieces(std::span<const uint32_t> buffers, std::span<const uint64_t> row_bytes, int64_t rows,
                 const std::function<void(int64_t first, int64_t rows, std::span<const Window> windows)>& run);

/// inRowPieces for a kernel that shifts its operands: a piece may start at any row, each window
/// starting shifts[j] bytes before its first row (both empty when everything fits whole).
void inShiftedRowPieces(std::span<const uint32_t> buffers, std::span<const uint64_t> row_bytes, int64_t rows,
                        const std::function<void(int64_t first, int64_t rows, std::span<const Window> windows,
                                                 std::span<const uint64_t> shifts)>& run);

/// Runs a linear kernel whose operands are each read or written at its invocation's element
/// (elem_bytes[j] bytes an element, 0 for an operand bound whole), its count in word 0: in pieces
/// of elements past the binding limit, each piece's first element in word first_word when the
/// kernel needs it (a seeded draw does).
void dispatchElements(uint32_t pipeline, std::span<const uint32_t> buffers, std::span<const uint64_t> elem_bytes,
                      Uniforms u, int64_t n, int first_word = -1);

}  // namespace fucina::backend::webgpu
