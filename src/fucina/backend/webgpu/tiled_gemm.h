/// @file
/// The webgpu backend's one GEMM (Note [Tiled GEMM]): contractions, convolutions and attention
/// are each this kernel with their own WGSL functions for reading the operands and storing C.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "fucina/backend/webgpu/wgsl.h"

namespace fucina::backend::webgpu {

/// Note [Tiled GEMM]: C[b] = A[b]·B[b] for batches b, 64x64 tiles of C per workgroup of 16x16
/// invocations, each computing 4x4 outputs from 16-deep slices of A and B staged in workgroup
/// memory. The caller's WGSL defines the operands as functions, called only inside the bounds:
///   fn a_at(b: u32, m: u32, k: u32) -> f32     A[b][m][k]
///   fn b_at(b: u32, n: u32, k: u32) -> f32     B[b][k][n]
///   fn store(b: u32, s: u32, m: u32, n: u32, v: f32)   C[b][m][n] of depth slice s
/// so a convolution reads its image taps and a grouped attention its shared keys in place, with
/// no copy laid out for the product. Each operand's tile is loaded along its contiguous direction,
/// so neighbouring invocations read neighbouring words (TileLoad). A product whose depth dwarfs its outputs (a weight gradient summed over a batch of
/// images) splits the depth into `splits` slices, one workgroup layer each; the caller sums them.
struct GemmShape {
  int64_t batches = 1, m = 0, n = 0, k = 0;
  int64_t splits = 1;
};

/// The first uniform word the caller's functions may use (words before it are the GEMM's).
inline constexpr uint32_t kGemmWord = 6;

/// How an operand's tiles are loaded: neighbouring invocations take neighbouring rows (m or n) or
/// neighbouring k; or four k at a time, through `fn a_at4(b, m, k) -> vec4<f32>` (`b_at4`) in
/// place of a_at (b_at), for an operand contiguous along k whose rows start at multiples of four
/// floats, with K a multiple of 4.
enum class TileLoad { along_rows, along_depth, quads };
inline TileLoad along(bool depth) { return depth ? TileLoad::along_depth : TileLoad::along_rows; }

/// The WGSL of a tiled GEMM over `operands` (bindings and the functions; the uniforms are at
/// binding `uniform_binding`).
std::string tiledGemmSource(const std::string& operands, int uniform_binding, TileLoad a, TileLoad b);
/// Runs it: u holds the caller's words from kGemmWord on; UnsupportedOnDevice naming `what` when
/// the grid exceeds the device's.
void dispatchGemm(const std::string& source, std::span<const uint32_t> buffers, Uniforms u, const GemmShape& s,
                  const char* what, std::span<const Window> windows = {});
/// Depth slices for a product of few output tiles over a long depth: enough workgroups to fill a
/// GPU, each slice at least 512 deep (a multiple of 16).
GemmShape splitDepth(GemmShape s);

}  // namespace fucina::backend::webgpu
