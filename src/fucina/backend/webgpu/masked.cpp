// maskedScatter on the device (Kernels::maskedScatter and its VJP), without reading the mask on the
// host: each set element's rank among the set ones (row-major) is an exclusive scan of the mask,
// in three kernels. Each workgroup ranks its 256 elements and writes their count; one workgroup
// turns the counts into offsets and checks the source against the total (Note [Device faults]);
// each element then takes src[rank] where the mask is set and a's element elsewhere. `where` holds
// the ranks (i32, -1 where unset), which the VJP reads.
#include <cstdint>
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// WGSL: the inclusive scan of part[] across the workgroup, in place (every invocation calls it).
constexpr const char* kScan =
    "var<workgroup> part: array<u32, 256>;\n"
    "fn scan(l: u32, v: u32) -> u32 {\n"
    "  part[l] = v;\n"
    "  workgroupBarrier();\n"
    "  for (var d = 1u; d < 256u; d = d * 2u) {\n"
    "    var s = part[l];\n"
    "    if (l >= d) { s = s + part[l - d]; }\n"
    "    workgroupBarrier();\n"
    "    part[l] = s;\n"
    "    workgroupBarrier();\n"
    "  }\n"
    "  return part[l];\n"
    "}\n";

constexpr const char* kGroupSignature =
    "@compute @workgroup_size(256) fn main(@builtin(local_invocation_index) l: u32, "
    "@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) ng: vec3u)";

// Words: n, blocks. A set element is nonzero, NaN included (its bits, not a comparison).
std::string blockRanksSource() {
  return prelude(3) + readBinding(0, "m") + writeBinding(1, "ranks", "i32") + writeBinding(2, "counts", "u32") +
         kScan + kGroupSignature + " {\n"
         "  let block = wg.x + wg.y * ng.x;\n"
         "  if (block >= uw(1u)) { return; }\n"
         "  let i = block * 256u + l;\n"
         "  var on = 0u;\n"
         "  if (i < uw(0u)) { on = select(0u, 1u, (bitcast<u32>(m[i]) & 0x7fffffffu) != 0u); }\n"
         "  let inclusive = scan(l, on);\n"
         "  if (i < uw(0u)) { ranks[i] = select(-1, i32(inclusive - on), on == 1u); }\n"
         "  if (l == 255u) { counts[block] = inclusive; }\n"
         "}\n";
}

// One workgroup. Words: blocks, the source's elements. Fault kind 3: [3, 0, set, source].
std::string offsetsSource() {
  return prelude(2) + writeBinding(0, "counts", "u32") +
         "@group(0) @binding(1) var<storage, read_write> fault: array<atomic<u32>>;\n" + kScan + kGroupSignature +
         " {\n"
         "  let blocks = uw(0u);\n"
         "  let chunk = (blocks + 255u) / 256u;\n"
         "  let lo = min(l * chunk, blocks);\n  let hi = min(lo + chunk, blocks);\n"
         "  var s = 0u;\n"
         "  for (var b = lo; b < hi; b = b + 1u) { s = s + counts[b]; }\n"
         "  let inclusive = scan(l, s);\n"
         "  var run = inclusive - s;\n"
         "  for (var b = lo; b < hi; b = b + 1u) { let c = counts[b]; counts[b] = run; run = run + c; }\n"
         "  if (l == 255u && inclusive > uw(1u) && atomicLoad(&fault[0]) == 0u) {\n"
         "    atomicStore(&fault[1], 0u);\n    atomicStore(&fault[2], inclusive);\n"
         "    atomicStore(&fault[3], uw(1u));\n    atomicStore(&fault[0], 3u);\n"
         "  }\n"
         "}\n";
}

// Words: n, the source's elements. The ranks become global here, for the VJP.
std::string scatterSource() {
  return prelude(5) + writeBinding(0, "ranks", "i32") + readBinding(1, "offsets", "u32") + readBinding(2, "a") +
         readBinding(3, "src") + writeBinding(4, "out") + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  var r = ranks[i];\n"
         "  if (r >= 0) { r = r + i32(offsets[i / 256u]); ranks[i] = r; }\n"
         "  let sn = uw(1u);\n"
         "  out[i] = select(a[i], src[min(u32(max(r, 0)), max(sn, 1u) - 1u)], r >= 0 && sn > 0u);\n"
         "}\n";
}

// Words: n, the source's elements, ga asked for, gsrc asked for (its zeros written before).
std::string vjpSource() {
  return prelude(4) + readBinding(0, "ranks", "i32") + readBinding(1, "gy") + writeBinding(2, "ga") +
         writeBinding(3, "gs") + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let r = ranks[i];\n"
         "  if (uw(2u) == 1u) { ga[i] = select(gy[i], 0.0, r >= 0); }\n"
         // added into the zeros, as the host backends do: a copy but for the sign of a zero
         "  if (uw(3u) == 1u && r >= 0 && u32(r) < uw(1u)) { gs[u32(r)] = 0.0 + gy[i]; }\n"
         "}\n";
}

const Tag kPosition = "position";

}  // namespace

Kernels::MaskedScatter maskedScatter(ExecContext& ctx, const RawTensor& a_in, const RawTensor& mask,
                                     const RawTensor& src_in) {
  requireF32(a_in, "maskedScatter");
  requireF32(src_in, "maskedScatter");
  const int64_t n = a_in.numel();
  if (n > INT32_MAX) unsupported("maskedScatter over 2^31 elements");
  Kernels::MaskedScatter r{RawTensor::empty(ctx, a_in.tags(), a_in.shape()),
                           RawTensor::empty(ctx, {kPosition}, {n}, DType::i32)};
  if (n == 0) return r;
  // The mask as contiguous f32 over a (u8 widened exactly, f32 words as they are).
  const RawTensor m = RawTensor::empty(ctx, a_in.tags(), a_in.shape());
  copy(ctx, mask, m);
  const RawTensor a = whole(ctx, a_in.contiguous(ctx));
  const RawTensor src = src_in.numel() > 0 ? whole(ctx, src_in) : placeholder(ctx);
  const int64_t blocks = (n + 255) / 256;
  const RawTensor counts = RawTensor::empty(ctx, {kPosition}, {blocks}, DType::i32);
  Gpu& gpu = Gpu::get();
  {
    const uint32_t buffers[3] = {bufferOf(m, "maskedScatter"), bufferOf(r.where, "maskedScatter"),
                                 bufferOf(counts, "maskedScatter")};
    Uniforms u;
    u.u(static_cast<uint64_t>(n)).u(static_cast<uint64_t>(blocks));
    const int64_t x = std::min<int64_t>(blocks, Gpu::kMaxGroups), y = (blocks + x - 1) / x;
    gpu.dispatch(gpu.pipeline(blockRanksSource()), buffers, u.words, static_cast<uint32_t>(x),
                 static_cast<uint32_t>(y), 1);
  }
  {
    const uint32_t buffers[2] = {bufferOf(counts, "maskedScatter"), gpu.faultBuffer()};
    Uniforms u;
    u.u(static_cast<uint64_t>(blocks)).u(static_cast<uint64_t>(src_in.numel()));
    gpu.dispatch(gpu.pipeline(offsetsSource()), buffers, u.words, 1, 1, 1);
  }
  const uint32_t buffers[5] = {bufferOf(r.where, "maskedScatter"), bufferOf(counts, "maskedScatter"),
                               bufferOf(a, "maskedScatter"), bufferOf(src, "maskedScatter"),
                               bufferOf(r.out, "maskedScatter")};
  Uniforms u;
  u.u(static_cast<uint64_t>(n)).u(static_cast<uint64_t>(src_in.numel()));
  dispatchLinear(gpu.pipeline(scatterSource()), buffers, u, n);
  return r;
}

Kernels::MaskedScatterGrads maskedScatterVjp(ExecContext& ctx, const RawTensor& where, const RawTensor& gy_in,
                                             const Tags& src_tags, const Extents& src_shape, bool need_a,
                                             bool need_src) {
  Kernels::MaskedScatterGrads g;
  if (need_a) g.a = RawTensor::empty(ctx, gy_in.tags(), gy_in.shape());
  if (need_src) g.src = RawTensor::zeros(ctx, src_tags, src_shape);
  const int64_t n = where.numel();
  if (n == 0 || (!need_a && !need_src)) return g;
  const RawTensor gy = whole(ctx, gy_in.contiguous(ctx));
  const RawTensor ga = need_a ? g.a : placeholder(ctx);
  const RawTensor gs = need_src && g.src.numel() > 0 ? g.src : placeholder(ctx);
  const uint32_t buffers[4] = {bufferOf(where, "maskedScatterVjp"), bufferOf(gy, "maskedScatterVjp"),
                               bufferOf(ga, "maskedScatterVjp"), bufferOf(gs, "maskedScatterVjp")};
  Uniforms u;
  u.u(static_cast<uint64_t>(n)).u(static_cast<uint64_t>(numelOf(src_shape))).u(need_a ? 1 : 0).u(need_src ? 1 : 0);
  dispatchLinear(Gpu::get().pipeline(vjpSource()), buffers, u, n);
  return g;
}

}  // namespace fucina::backend::webgpu
