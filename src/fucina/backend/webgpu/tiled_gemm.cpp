#include "fucina/backend/webgpu/tiled_gemm.h"

#include <algorithm>

namespace fucina::backend::webgpu {
namespace {

// Loads of one operand's 16 x 64 tile: `deep` the depth (k) index, `wide` the row (m, or n)
// index. Four k at a time: invocation t reads quad t % 4 of row t / 4 (kend is a multiple of 4).
std::string tileLoad(const std::string& tile, const std::string& at, const std::string& wide0,
                     const std::string& limit, TileLoad how) {
  if (how == TileLoad::quads)
    return "    {\n"
           "      let kk = (t % 4u) * 4u;\n      let gw = " + wide0 + " + t / 4u;\n"
           "      var v = vec4<f32>(0.0);\n"
           "      if (gw < " + limit + " && k0 + kk < kend) { v = " + at + "4(b, gw, k0 + kk); }\n"
           "      " + tile + "[kk][t / 4u] = v.x;\n      " + tile + "[kk + 1u][t / 4u] = v.y;\n"
           "      " + tile + "[kk + 2u][t / 4u] = v.z;\n      " + tile + "[kk + 3u][t / 4u] = v.w;\n"
           "    }\n";
  const bool deep_fast = how == TileLoad::along_depth;
  const std::string deep = deep_fast ? "e % 16u" : "e / 64u", wide = deep_fast ? "e / 16u" : "e % 64u";
  return "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
         "      let e = t + j * 256u;\n"
         "      let kk = " + deep + ";\n      let ww = " + wide + ";\n"
         "      let gw = " + wide0 + " + ww;\n      let gk = k0 + kk;\n"
         "      var v = 0.0;\n"
         "      if (gw < " + limit + " && gk < kend) { v = " + at + "(b, gw, gk); }\n"
         "      " + tile + "[kk][ww] = v;\n"
         "    }\n";
}

}  // namespace

std::string tiledGemmSource(const std::string& operands, int uniform_binding, TileLoad a, TileLoad b) {
  return prelude(uniform_binding) + operands +
         "var<workgroup> ta: array<array<f32, 64>, 16>;\n"
         "var<workgroup> tb: array<array<f32, 64>, 16>;\n"
         "@compute @workgroup_size(16, 16) fn main(@builtin(local_invocation_id) lid: vec3u, "
         "@builtin(workgroup_id) wg: vec3u) {\n"
         "  let M = uw(0u);\n  let N = uw(1u);\n  let K = uw(2u);\n"
         "  let b = wg.z / uw(3u);\n  let s = wg.z % uw(3u);\n"
         "  let kbegin = s * uw(4u);\n  let kend = min(K, kbegin + uw(4u));\n"
         "  let m0 = wg.y * 64u;\n  let n0 = wg.x * 64u;\n  let t = lid.y * 16u + lid.x;\n"
         "  var acc: array<array<f32, 4>, 4>;\n"
         "  for (var k0 = kbegin; k0 < kend; k0 = k0 + 16u) {\n" +
         tileLoad("ta", "a_at", "m0", "M", a) + tileLoad("tb", "b_at", "n0", "N", b) +
         "    workgroupBarrier();\n"
         "    for (var kk = 0u; kk < 16u; kk = kk + 1u) {\n"
         "      var av: array<f32, 4>;\n      var bv: array<f32, 4>;\n"
         "      for (var i = 0u; i < 4u; i = i + 1u) { av[i] = ta[kk][lid.y + 16u * i]; bv[i] = tb[kk][lid.x + 16u * i]; }\n"
         "      for (var i = 0u; i < 4u; i = i + 1u) {\n"
         "        for (var j = 0u; j < 4u; j = j + 1u) { acc[i][j] = fma(av[i], bv[j], acc[i][j]); }\n"
         "      }\n"
         "    }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  for (var i = 0u; i < 4u; i = i + 1u) {\n"
         "    for (var j = 0u; j < 4u; j = j + 1u) {\n"
         "      let gm = m0 + lid.y + 16u * i;\n      let gn = n0 + lid.x + 16u * j;\n"
         "      if (gm < M && gn < N) { store(b, s, gm, gn, acc[i][j]); }\n"
         "    }\n"
         "  }\n"
         "}\n";
}

void dispatchGemm(const std::string& source, std::span<const uint32_t> buffers, Uniforms u, const GemmShape& s,
                  const char* what, std::span<const Window> windows) {
  if (s.batches == 0 || s.m == 0 || s.n == 0) return;
  const int64_t splits = std::max<int64_t>(s.splits, 1);
  const int64_t chunk = ((s.k + splits - 1) / splits + 15) / 16 * 16;  // slices start at multiples of 16
  Uniforms head;
  head.u(static_cast<uint64_t>(s.m)).u(static_cast<uint64_t>(s.n)).u(static_cast<uint64_t>(s.k));
  head.u(static_cast<uint64_t>(splits)).u(static_cast<uint64_t>(std::max<int64_t>(chunk, 1)));
  for (uint32_t w = 0; w < head.words.size(); ++w) u.set(w, head.words[w]);
  const int64_t gx = (s.n + 63) / 64, gy = (s.m + 63) / 64, gz = s.batches * splits;
  if (gx > Gpu::kMaxGroups || gy > Gpu::kMaxGroups || gz > Gpu::kMaxGroups)
    unsupported(std::string(what) + " over " + std::to_string(s.batches) + " products of " + std::to_string(s.m) +
                " x " + std::to_string(s.n) + " (more workgroups than a dispatch has)");
  Gpu::get().dispatch(Gpu::get().pipeline(source), buffers, u.words, static_cast<uint32_t>(gx),
                      static_cast<uint32_t>(gy), static_cast<uint32_t>(gz), windows);
}

GemmShape splitDepth(GemmShape s) {
  const int64_t tiles = s.batches * ((s.m + 63) / 64) * ((s.n + 63) / 64);
  const int64_t want = std::max<int64_t>(1, 256 / std::max<int64_t>(tiles, 1));
  const int64_t most = std::max<int64_t>(1, s.k / 512);
  const int64_t splits = std::min(want, most);
  const int64_t chunk = ((s.k + splits - 1) / splits + 15) / 16 * 16;
  s.splits = chunk > 0 ? (s.k + chunk - 1) / chunk : 1;
  return s;
}

}  // namespace fucina::backend::webgpu
