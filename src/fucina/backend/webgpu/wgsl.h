/// @file
/// What the webgpu backend's kernels share: the WGSL prelude (uniform words, strided offsets,
/// numeric helpers), the uniform words a dispatch passes, the buffer of a tensor, and the strided
/// layout of up to kMaxOperands tensors over one shape (Note [Strided kernels]).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fucina/backend/kernels.h"
#include "fucina/backend/webgpu/gpu.h"
#include "fucina/core/raw_tensor.h"

namespace fucina {
class ExecContext;
}

namespace fucina::backend::webgpu {

using internal::RawTensor;

/// Note [Strided kernels]: an elementwise kernel walks the logical indices i of one shape and
/// reads (or writes) each operand at offset + Σ coordinate·stride. The shape is first coalesced
/// (axes of extent 1 dropped, neighbours merged where every operand's strides nest), so the
/// common cases reach the kernel as rank 1 or 2; up to kMaxRank axes remain after that.
inline constexpr int kMaxRank = 8;
inline constexpr int kMaxOperands = 5;
/// Word positions in the uniforms of a strided kernel: n, rank, the shape, then per operand its
/// offset and strides, then two f32 parameters.
inline constexpr uint32_t kShapeWord = 2, kOperandWord = kShapeWord + kMaxRank, kOperandWords = kMaxRank + 1,
                          kParamWord = kOperandWord + kMaxOperands * kOperandWords;

/// The words of a dispatch's uniforms.
struct Uniforms {
  std::vector<uint32_t> words;
  Uniforms& u(uint64_t v);
  Uniforms& i(int64_t v);
  Uniforms& f(float v);
  /// Sets word `at` (growing the words with zeros).
  Uniforms& set(uint32_t at, uint32_t v);
  /// Sets word `at` to a float's bits.
  Uniforms& setF(uint32_t at, float v);
};

/// Shape and operands' strides over it, coalesced (Note [Strided kernels]).
struct StridedLayout {
  int64_t n = 0;
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;  // per operand
  std::vector<int64_t> offsets;               // per operand, in elements
  /// The uniforms of a strided kernel: n, rank, shape, operands.
  Uniforms uniforms() const;
};
/// The layout of operands (each viewed over shape already: strides per axis, 0 to broadcast).
StridedLayout stridedLayout(const Extents& shape, const std::vector<std::vector<int64_t>>& strides,
                            const std::vector<int64_t>& offsets);
/// t's strides over (tags, shape): its own for its axes, 0 for the axes it lacks.
std::vector<int64_t> alignedStrides(const RawTensor& t, const Tags& tags);

/// The WGSL every kernel starts with: `uw(i)`, `uf(i)`, `ui(i)` read uniform word i (binding
/// `uniform_binding`), `strided(i, k)` is operand k's element offset for logical index i, and the
/// numeric helpers the elementwise rows use.
std::string prelude(int uniform_binding);
/// WGSL: 64-bit integers as vec2u (low word, high word): mul32 (the full product of two u32),
/// mul64, add64, xor_shift and mix (splitmix64's finalizer: core/random.h).
extern const char* const kU64;
/// WGSL: f32_to_f16, f16_to_f32 and f32_to_bf16 on the bits of 16-bit floats (core/dtype.cpp's).
extern const char* const kHalves;
/// WGSL: `fn <buf>_at(e: u32) -> f32`, element e (an element offset) of the u32 array `buf`
/// holding dtype (f32, u8, f16, bf16 or q8_0: Note [q8_0 layout]) as f32; needs kHalves.
std::string elementReader(const std::string& buf, DType dtype);
/// Declarations of bindings: `var<storage, read> name: array<type>;` at binding b.
std::string readBinding(int b, const std::string& name, const std::string& type = "f32");
std::string writeBinding(int b, const std::string& name, const std::string& type = "f32");
/// The linear index of a 1-D kernel of 256 invocations per group spread over (x, y) groups.
inline constexpr const char* kLinearIndex = "let i = gid.x + gid.y * ng.x * 256u;";
inline constexpr const char* kMainSignature =
    "@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) gid: vec3u, "
    "@builtin(num_workgroups) ng: vec3u)";

/// WGSL: `index_at(j, n)`, element j of the contiguous i64 buffer `ix` clamped into [0, n) (an
/// index out of range is reported by a check kernel: Note [Device faults]).
inline constexpr const char* kIndexAt =
    "fn index_at(j: u32, n: u32) -> u32 {\n"
    "  let lo = ix[2u * j];\n  let hi = ix[2u * j + 1u];\n"
    "  if (hi != 0u || lo >= n) { return select(0u, n - 1u, hi == 0u); }\n"
    "  return lo;\n"
    "}\n";

/// The buffer id of a tensor on the webgpu device; DeviceMismatch for a tensor elsewhere.
uint32_t bufferOf(const RawTensor& t, const char* what);
/// Dispatches a 1-D kernel of n invocations (256 per group), spread over two dimensions when n
/// needs more than 65535 groups.
void dispatchLinear(uint32_t pipeline, std::span<const uint32_t> buffers, const Uniforms& u, int64_t n,
                    std::span<const Window> windows = {});
/// The head of a row kernel (rows along the last axis of contiguous f32: uniforms rows, n): one
/// workgroup of 256 per row, `row`, `n`, `base` (the row's first element) and `l` (the invocation)
/// defined, and `reduce(l, v, take_max)`, which combines every invocation's v in a tree and
/// returns it to all (every invocation must call it: it has barriers). The caller closes main.
std::string rowKernelHead();
/// Dispatches a row kernel over l.rows workgroups (two dimensions past 65535); uf(2u) is param,
/// and words 3... the extra ones. row_bytes: each buffer's bytes per row, 0 for one bound whole,
/// to run in pieces of rows past the binding limit (Note [Bound in pieces]; empty: no pieces).
void dispatchRows(const std::string& source, std::span<const uint32_t> buffers, const RowLayout& l, float param = 0,
                  std::span<const uint32_t> extra = {}, std::span<const uint64_t> row_bytes = {});
/// DTypeMismatch unless f32, InvalidArgument unless contiguous: the row kernels' operands.
void requireRows(const RawTensor& t, const char* what);
/// t when it is contiguous from its buffer's first element, else a copy that is: kernels that
/// index an operand directly read it through whole() (a contiguous view may start inside its
/// buffer: a select, a narrow).
RawTensor whole(ExecContext& ctx, const RawTensor& t);
/// requireRows, then whole.
RawTensor rowsOf(ExecContext& ctx, const RawTensor& t, const char* what);
/// A one-element stand-in for a binding that a kernel does not read or write in this call.
RawTensor placeholder(ExecContext& ctx);
/// An operand written in place must start at its buffer's first element (UnsupportedOnDevice).
void requireWhole(const RawTensor& t, const char* what);

/// UnsupportedOnDevice for a primitive or case the webgpu backend does not compute.
[[noreturn]] void unsupported(const std::string& what);
/// DTypeMismatch unless t is f32 (the dtype every webgpu kernel computes in).
void requireF32(const RawTensor& t, const char* what);

}  // namespace fucina::backend::webgpu
