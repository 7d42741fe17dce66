// Attention with its probabilities kept (Kernels::attention): operands laid out densely as
// {batch..., heads, time, dim}, each product the tiled GEMM (Note [Tiled GEMM]) with query tile n
// reading kv tile kv(n) in place (grouped heads share keys without a copy), and two row kernels:
// the causal softmax, and dS = scale·P∘(dP − Σ dP∘P). The key and value gradients sum over a kv
// tile's query heads in the product's depth, so no two invocations add into one element.
#include <functional>
#include <string>
#include <vector>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/tiled_gemm.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Words from kGemmWord: H, Hkv, Tq, Tk, D, Dv, causal, scale, then the elements each binding's
// window starts before its piece's first tile (Note [Bound in pieces]): xs(), ys(), cs().
constexpr uint32_t kShiftWord = kGemmWord + 8;
std::string shape() {
  const auto w = [](uint32_t i) { return "uw(" + std::to_string(kGemmWord + i) + "u)"; };
  return "struct Att { H: u32, Hkv: u32, Tq: u32, Tk: u32, D: u32, Dv: u32, causal: u32 }\n"
         "fn att() -> Att { return Att(" + w(0) + ", " + w(1) + ", " + w(2) + ", " + w(3) + ", " + w(4) + ", " + w(5) +
         ", " + w(6) + "); }\n"
         "fn scale() -> f32 { return uf(" + std::to_string(kGemmWord + 7) + "u); }\n"
         "fn xs() -> u32 { return uw(" + std::to_string(kShiftWord) + "u); }\n"
         "fn ys() -> u32 { return uw(" + std::to_string(kShiftWord + 1) + "u); }\n"
         "fn cs() -> u32 { return uw(" + std::to_string(kShiftWord + 2) + "u); }\n"
         "fn kv(n: u32) -> u32 { let q = att(); return n / q.H * q.Hkv + n % q.H / (q.H / q.Hkv); }\n"
         // Query tile n of kv tile b's group member h.
         "fn member(b: u32, h: u32) -> u32 { let q = att(); return b / q.Hkv * q.H + b % q.Hkv * (q.H / q.Hkv) + h; }\n"
         "fn visible(i: u32) -> u32 {\n"
         "  let q = att();\n"
         "  if (q.causal == 0u) { return q.Tk; }\n"
         "  return u32(clamp(i32(i + q.Tk) - i32(q.Tq) + 1, 0, i32(q.Tk)));\n"
         "}\n";
}

// One product: A[b][m][k] = x[a_at] and B[b][k][n] = y[b_at], indices as WGSL expressions over
// (b, m or n, k), stored into c at `store_at` (over b, m, n), times `factor`.
std::string product(const std::string& a_at, const std::string& b_at, const std::string& store_at, const char* factor,
                    bool a_deep_fast, bool b_deep_fast) {  // each operand loaded along k, or along its rows
  return tiledGemmSource(readBinding(0, "x") + readBinding(1, "y") + writeBinding(2, "c") + shape() +
                             "fn a_at(b: u32, m: u32, k: u32) -> f32 { let q = att(); return x[xs() + " + a_at + "]; }\n"
                             "fn b_at(b: u32, n: u32, k: u32) -> f32 { let q = att(); return y[ys() + " + b_at + "]; }\n"
                             "fn store(b: u32, s: u32, m: u32, n: u32, v: f32) { let q = att(); c[cs() + " + store_at +
                             "] = v" + factor + "; }\n",
                         3, along(a_deep_fast), along(b_deep_fast));
}

// Rows r = n·Tq + i of P (in place): the softmax over the keys row i sees, 0 past them.
std::string softmaxSource() {
  return prelude(1) + writeBinding(0, "p") + shape() + rowKernelHead() +
         "  let seen = visible(row % att().Tq);\n"
         "  let pb = xs() + base;\n"
         "  var m = from_bits(0xff800000u);\n"
         "  for (var j = l; j < seen; j = j + 256u) { m = max(m, p[pb + j]); }\n"
         "  m = reduce(l, m, true);\n"
         "  var s = 0.0;\n"
         "  for (var j = l; j < seen; j = j + 256u) { s = s + exp(p[pb + j] - m); }\n"
         "  s = reduce(l, s, false);\n"
         "  for (var j = l; j < n; j = j + 256u) { p[pb + j] = select(0.0, exp(p[pb + j] - m) / s, j < seen); }\n"
         "}\n";
}

// dS over dP (in place) from P.
std::string scoresGradSource() {
  return prelude(2) + readBinding(0, "p") + writeBinding(1, "d") + shape() + rowKernelHead() +
         "  let seen = visible(row % att().Tq);\n"
         "  let pb = xs() + base;\n  let db = ys() + base;\n"
         "  var s = 0.0;\n"
         "  for (var j = l; j < seen; j = j + 256u) { s = s + d[db + j] * p[pb + j]; }\n"
         "  s = reduce(l, s, false);\n"
         "  for (var j = l; j < n; j = j + 256u) {\n"
         "    d[db + j] = select(0.0, scale() * p[pb + j] * (d[db + j] - s), j < seen);\n"
         "  }\n"
         "}\n";
}

struct Run {
  ExecContext& ctx;
  const AttentionGeometry& g;
  Uniforms words() const {
    Uniforms u;
    u.set(kGemmWord - 1, 0);
    u.u(static_cast<uint64_t>(g.H)).u(static_cast<uint64_t>(g.Hkv)).u(static_cast<uint64_t>(g.Tq));
    u.u(static_cast<uint64_t>(g.Tk)).u(static_cast<uint64_t>(g.D)).u(static_cast<uint64_t>(g.Dv));
    u.u(g.causal ? 1 : 0).f(g.scale).u(0).u(0).u(0);
    return u;
  }
  // Note [Bound in pieces]: every operand is a whole number of tiles per kv tile (a kv tile's
  // group of query tiles: query tile n reads kv tile n / group), so past the binding limit each
  // kernel runs over ranges of kv tiles, each operand bound from its window, shifted to the range.
  int64_t units() const { return g.B * g.Hkv; }
  uint64_t unitBytes(const RawTensor& t) const { return 4 * static_cast<uint64_t>(t.numel() / units()); }
  void gemm(const std::string& source, const RawTensor& x, const RawTensor& y, const RawTensor& c,
            const GemmShape& s) const {
    if (s.k == 0) return fill(ctx, c, 0.0);  // an empty sum (no keys, say), with no empty buffer bound
    if (units() == 0) return;
    const uint32_t buffers[3] = {bufferOf(x, "attention"), bufferOf(y, "attention"), bufferOf(c, "attention")};
    const uint64_t unit_bytes[3] = {unitBytes(x), unitBytes(y), unitBytes(c)};
    inPieces(buffers, unit_bytes, [&](int64_t n, const Uniforms& u, std::span<const Window> windows) {
      GemmShape piece = s;
      piece.batches = s.batches / units() * n;
      dispatchGemm(source, buffers, u, piece, "attention", windows);
    });
  }
  // The row kernels, over rows of P's Tk: its uniforms are (rows, n) then the attention's words.
  void rows(const std::string& source, std::span<const RawTensor> operands) const {
    if (units() == 0 || g.Tq == 0 || g.Tk == 0) return;
    std::vector<uint32_t> buffers;
    std::vector<uint64_t> unit_bytes;
    for (const RawTensor& t : operands) {
      buffers.push_back(bufferOf(t, "attention"));
      unit_bytes.push_back(unitBytes(t));
    }
    const uint32_t pipeline = Gpu::get().pipeline(source);
    inPieces(buffers, unit_bytes, [&](int64_t n, const Uniforms& words, std::span<const Window> windows) {
      Uniforms u = words;
      const int64_t r = n * g.group() * g.Tq, x = std::min<int64_t>(r, Gpu::kMaxGroups), y = (r + x - 1) / x;
      u.set(0, static_cast<uint32_t>(r)).set(1, static_cast<uint32_t>(g.Tk));
      Gpu::get().dispatch(pipeline, buffers, u.words, static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1, windows);
    });
  }
  // Runs run(units, words, windows) over every kv tile at once, or over ranges of them, each
  // binding's shift from its window's start in its words.
  void inPieces(std::span<const uint32_t> buffers, std::span<const uint64_t> unit_bytes,
                const std::function<void(int64_t, const Uniforms&, std::span<const Window>)>& run) const {
    inShiftedRowPieces(buffers, unit_bytes, units(),
                       [&](int64_t, int64_t n, std::span<const Window> windows, std::span<const uint64_t> shifts) {
                         Uniforms u = words();
                         for (size_t j = 0; j < shifts.size(); ++j)
                           u.set(kShiftWord + static_cast<uint32_t>(j), static_cast<uint32_t>(shifts[j] / 4));
                         run(n, u, windows);
                       });
  }
  RawTensor dense(const RawTensor& t) const { return whole(ctx, t.permuted(g.layout())); }
  // {batch..., heads, time, dim} of `like`'s extents, with d dims.
  RawTensor laidOut(const RawTensor& like, int64_t d) const {
    Extents s;
    for (Tag t : g.batch) s.push_back(like.extent(t));
    s.insert(s.end(), {like.extent(g.heads), like.extent(g.time), d});
    return RawTensor::empty(ctx, g.layout(), s);
  }
};

}  // namespace

Kernels::Attention attention(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q, const RawTensor& k,
                             const RawTensor& v) {
  requireF32(q, "attention");
  requireF32(k, "attention");
  requireF32(v, "attention");
  const Run run{ctx, g};
  const RawTensor Q = run.dense(q), K = run.dense(k), V = run.dense(v);
  RawTensor P = RawTensor::empty(ctx, {"n", "i", "j"}, {g.B * g.H, g.Tq, g.Tk});
  RawTensor out = run.laidOut(q, g.Dv);
  const int64_t tiles = g.B * g.H;
  // S = scale·Q·Kᵀ, then the softmax rows, then out = P·V.
  run.gemm(product("(b * q.Tq + m) * q.D + k", "(kv(b) * q.Tk + n) * q.D + k", "(b * q.Tq + m) * q.Tk + n",
                   " * scale()", true, true),
           Q, K, P, {tiles, g.Tq, g.Tk, g.D});
  run.rows(softmaxSource(), {&P, 1});
  run.gemm(product("(b * q.Tq + m) * q.Tk + k", "(kv(b) * q.Tk + k) * q.Dv + n", "(b * q.Tq + m) * q.Dv + n",
                   "", true, false),
           P, V, out, {tiles, g.Tq, g.Dv, g.Tk});
  return {out, P};
}

Kernels::AttentionGrads attentionVjp(ExecContext& ctx, const AttentionGeometry& g, const RawTensor& q,
                                     const RawTensor& k, const RawTensor& v, const RawTensor& probs,
                                     const RawTensor& gy, bool need_q, bool need_k, bool need_v) {
  requireF32(gy, "attention VJP");
  const Run run{ctx, g};
  const RawTensor G = run.dense(gy), P = whole(ctx, probs);
  const int64_t tiles = g.B * g.H, kv_tiles = g.B * g.Hkv, depth = g.group() * g.Tq;
  // Element t of a kv tile's depth: query row t % Tq of its member t / Tq.
  const std::string row = "(member(b, k / q.Tq) * q.Tq + k % q.Tq)";
  Kernels::AttentionGrads grads;
  if (need_v) {  // gv[kv] = Σ_group Pᵀ·gy
    grads.v = run.laidOut(v, g.Dv);
    run.gemm(product(row + " * q.Tk + m", row + " * q.Dv + n", "(b * q.Tk + m) * q.Dv + n", "",
                     false, false),
             P, G, grads.v, {kv_tiles, g.Tk, g.Dv, depth});
  }
  if (!need_q && !need_k) return grads;
  const RawTensor V = run.dense(v);
  RawTensor dS = RawTensor::empty(ctx, {"n", "i", "j"}, {tiles, g.Tq, g.Tk});
  // dP = gy·Vᵀ, then dS over it.
  run.gemm(product("(b * q.Tq + m) * q.Dv + k", "(kv(b) * q.Tk + n) * q.Dv + k", "(b * q.Tq + m) * q.Tk + n",
                   "", true, true),
           G, V, dS, {tiles, g.Tq, g.Tk, g.Dv});
  const RawTensor scores[2] = {P, dS};
  run.rows(scoresGradSource(), scores);
  if (need_q) {  // gq = dS·K
    const RawTensor K = run.dense(k);
    grads.q = run.laidOut(q, g.D);
    run.gemm(product("(b * q.Tq + m) * q.Tk + k", "(kv(b) * q.Tk + k) * q.D + n", "(b * q.Tq + m) * q.D + n",
                     "", true, false),
             dS, K, grads.q, {tiles, g.Tq, g.D, g.Tk});
  }
  if (need_k) {  // gk[kv] = Σ_group dSᵀ·Q
    const RawTensor Q = run.dense(q);
    grads.k = run.laidOut(k, g.D);
    run.gemm(product(row + " * q.Tk + m", row + " * q.D + n", "(b * q.Tk + m) * q.D + n", "", false,
                     false),
             dS, Q, grads.k, {kv_tiles, g.Tk, g.D, depth});
  }
  return grads;
}

}  // namespace fucina::backend::webgpu
