// multinomial's draws on the device (Kernels::multinomialRows): the host's draws, bit for bit
// (Note [f64 draws on the device]). The host sums each row's weights in f64, in order, scales its
// uniform by the total, and walks the running f64 sums to the first that passes it; without
// replacement it subtracts each pick from the total. WGSL has no f64, so these few operations
// are emulated on the doubles' bits (vec2u: low word, high word) with round-to-nearest-even, as
// IEEE does them: a sum of two doubles, the product of a 53-bit integer (the uniform's bits) and
// a double, and an order. One invocation draws one sample with replacement (each sums its row
// again, in the same order), or a row's samples in turn without. The weights are checked on the
// device as the host checks them, and a row that cannot be drawn from is a device fault
// (Note [Device faults]).
#include <string>

#include "fucina/backend/random_rows.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/random.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// WGSL: doubles as vec2u. f64_add(a, b) = fl(a + b) for finite a and b (inf on overflow);
// f64_scale(k, t) = fl(k·t·2⁻⁵³) for an integer k < 2⁵³ (vec2u) and a double t (inf or NaN as
// IEEE gives them); f64_lt(a, b) = a < b (false with a NaN).
constexpr const char* kF64Arithmetic =
    "fn shl64(a: vec2u, s: u32) -> vec2u {\n"
    "  if (s == 0u) { return a; }\n  if (s >= 64u) { return vec2u(0u); }\n"
    "  if (s >= 32u) { return vec2u(0u, a.x << (s - 32u)); }\n"
    "  return vec2u(a.x << s, (a.y << s) | (a.x >> (32u - s)));\n"
    "}\n"
    "fn shr64(a: vec2u, s: u32) -> vec2u {\n"
    "  if (s == 0u) { return a; }\n  if (s >= 64u) { return vec2u(0u); }\n"
    "  if (s >= 32u) { return vec2u(a.y >> (s - 32u), 0u); }\n"
    "  return vec2u((a.x >> s) | (a.y << (32u - s)), a.y >> s);\n"
    "}\n"
    "fn sub64(a: vec2u, b: vec2u) -> vec2u { return vec2u(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x)); }\n"
    "fn lt64(a: vec2u, b: vec2u) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }\n"
    "fn clz64(a: vec2u) -> u32 { return select(32u + countLeadingZeros(a.x), countLeadingZeros(a.y), a.y != 0u); }\n"
    "fn is_zero64(a: vec2u) -> bool { return a.x == 0u && a.y == 0u; }\n"
    "fn magnitude(a: vec2u) -> vec2u { return vec2u(a.x, a.y & 0x7fffffffu); }\n"
    // the effective exponent (1 for subnormals) and the 53-bit significand
    "fn f64_exp(a: vec2u) -> u32 { return max((a.y >> 20u) & 0x7ffu, 1u); }\n"
    "fn f64_sig(a: vec2u) -> vec2u {\n"
    "  return vec2u(a.x, (a.y & 0xfffffu) | select(0u, 0x100000u, ((a.y >> 20u) & 0x7ffu) != 0u));\n"
    "}\n"
    // s: a significand with three more bits (guard, round, sticky) at exponent e; rounded to
    // nearest even and packed with the sign bit
    "fn f64_pack(s_in: vec2u, e_in: u32, sgn: u32) -> vec2u {\n"
    "  let g = s_in.x & 7u;\n"
    "  var s = shr64(s_in, 3u);\n  var e = e_in;\n"
    "  if (g > 4u || (g == 4u && (s.x & 1u) == 1u)) { s = add64(s, vec2u(1u, 0u)); }\n"
    "  if (s.y >= 0x200000u) { s = shr64(s, 1u); e = e + 1u; }\n"
    "  if (e >= 2047u) { return vec2u(0u, sgn | 0x7ff00000u); }\n"
    "  let field = select(0u, e, s.y >= 0x100000u);\n"
    "  return vec2u(s.x, sgn | (field << 20u) | (s.y & 0xfffffu));\n"
    "}\n"
    "fn f64_add(a: vec2u, b: vec2u) -> vec2u {\n"
    "  var x = a;\n  var y = b;\n"
    "  if (lt64(magnitude(x), magnitude(y))) { x = b; y = a; }\n"
    "  let ex = f64_exp(x);\n  let d = ex - f64_exp(y);\n"
    "  let mx = shl64(f64_sig(x), 3u);\n  var my = shl64(f64_sig(y), 3u);\n"
    "  if (d > 0u) {\n"
    "    let kept = shr64(my, d);\n"
    "    let lost = !is_zero64(sub64(my, shl64(kept, d)));\n"
    "    my = vec2u(kept.x | select(0u, 1u, lost), kept.y);\n"
    "  }\n"
    "  let sgn = x.y & 0x80000000u;\n"
    "  if (((x.y ^ y.y) & 0x80000000u) == 0u) {\n"
    "    var s = add64(mx, my);\n    var e = ex;\n"
    "    if (s.y >= 0x1000000u) { s = vec2u(shr64(s, 1u).x | (s.x & 1u), s.y >> 1u); e = e + 1u; }\n"
    "    return f64_pack(s, e, sgn);\n"
    "  }\n"
    "  var s = sub64(mx, my);\n"
    "  if (is_zero64(s)) { return vec2u(0u); }\n"
    "  var e = ex;\n"
    "  let lz = clz64(s);\n"
    "  if (lz > 8u) { let k = min(lz - 8u, e - 1u); s = shl64(s, k); e = e - k; }\n"
    "  return f64_pack(s, e, sgn);\n"
    "}\n"
    // 128-bit products as vec4u (low word first): v added at word j
    "fn add128(p: vec4u, j: u32, v: vec2u) -> vec4u {\n"
    "  var r = p;\n  var carry = 0u;\n"
    "  for (var w = j; w < 4u; w = w + 1u) {\n"
    "    let add = select(select(0u, v.y, w == j + 1u), v.x, w == j);\n"
    "    let t = r[w] + add;\n    let c1 = select(0u, 1u, t < add);\n"
    "    let u = t + carry;\n    let c2 = select(0u, 1u, u < carry);\n"
    "    r[w] = u;\n    carry = c1 + c2;\n"
    "  }\n"
    "  return r;\n"
    "}\n"
    // bits [b, b + 32) of p
    "fn bits32(p: vec4u, b: u32) -> u32 {\n"
    "  let q = b / 32u;\n  let s = b % 32u;\n"
    "  if (q >= 4u) { return 0u; }\n"
    "  let lo = p[q];\n  let hi = select(0u, p[min(q + 1u, 3u)], q + 1u < 4u);\n"
    "  return select((lo >> s) | (hi << (32u - s)), lo, s == 0u);\n"
    "}\n"
    // whether any of bits [0, b) of p is set
    "fn any_below(p: vec4u, b: u32) -> bool {\n"
    "  var found = false;\n"
    "  for (var w = 0u; w < 4u; w = w + 1u) {\n"
    "    let lo = w * 32u;\n"
    "    if (lo + 32u <= b) { found = found || p[w] != 0u; }\n"
    "    else if (lo < b) { found = found || (p[w] & ((1u << (b - lo)) - 1u)) != 0u; }\n"
    "  }\n"
    "  return found;\n"
    "}\n"
    "fn f64_scale(k: vec2u, t: vec2u) -> vec2u {\n"
    "  let sgn = t.y & 0x80000000u;\n"
    "  if (((t.y >> 20u) & 0x7ffu) == 2047u) { return select(vec2u(0u, sgn | 0x7ff00000u), vec2u(0u, 0x7ff80000u), is_zero64(k)); }\n"
    "  let m = f64_sig(t);\n"
    "  if (is_zero64(k) || is_zero64(m)) { return vec2u(0u, sgn); }\n"
    "  var p = vec4u(mul32(k.x, m.x), 0u, 0u);\n"
    "  p = add128(p, 1u, mul32(k.x, m.y));\n  p = add128(p, 1u, mul32(k.y, m.x));\n  p = add128(p, 2u, mul32(k.y, m.y));\n"
    "  var top = 0u;\n"  // the highest set bit of p
    "  for (var w = 0u; w < 4u; w = w + 1u) { if (p[w] != 0u) { top = w * 32u + 31u - countLeadingZeros(p[w]); } }\n"
    // k·m·2^(et - 1075 - 53) = M·2^(E - 1075), M = p >> r with its top bit at 52: E = r + et - 53
    "  var e = i32(top) + i32(f64_exp(t)) - 105;\n"
    "  var r = i32(top) - 52;\n"
    "  if (e < 1) { r = r + 1 - e; e = 1; }\n"
    "  var s = vec2u(0u);\n"
    "  if (r <= 0) {\n"
    "    s = shl64(vec2u(p.x, p.y), u32(-r) + 3u);\n"
    "  } else {\n"
    "    let ur = u32(r);\n"
    "    let sig = vec2u(bits32(p, ur), bits32(p, ur + 32u) & 0x1fffffu);\n"
    "    let guard = (bits32(p, ur - 1u) & 1u) << 2u;\n"
    "    let sticky = select(0u, 1u, ur > 1u && any_below(p, ur - 1u));\n"
    "    s = shl64(sig, 3u);\n    s.x = s.x | guard | sticky;\n"
    "  }\n"
    "  return f64_pack(s, u32(e), sgn);\n"
    "}\n"
    "fn f64_lt(a: vec2u, b: vec2u) -> bool {\n"
    "  let na = ((a.y >> 20u) & 0x7ffu) == 2047u && !is_zero64(vec2u(a.x, a.y & 0xfffffu));\n"
    "  let nb = ((b.y >> 20u) & 0x7ffu) == 2047u && !is_zero64(vec2u(b.x, b.y & 0xfffffu));\n"
    "  let ma = magnitude(a);\n  let mb = magnitude(b);\n"
    "  if (na || nb || (is_zero64(ma) && is_zero64(mb))) { return false; }\n"
    "  let sa = (a.y >> 31u) == 1u;\n  let sb = (b.y >> 31u) == 1u;\n"
    "  if (sa != sb) { return sa; }\n"
    "  return select(lt64(ma, mb), lt64(mb, ma), sa);\n"
    "}\n";

// Words: 0 invocations, 1 n, 2 samples, 3 replacement, 4-5 mix(seed). Bindings: the rows (f64
// words), the draws (i64 words), each row's taken flags (without replacement), the fault buffer.
// Fault kind 4: [4, the first row that cannot be drawn from].
std::string drawSource() {
  return prelude(4) + readBinding(0, "w", "u32") + writeBinding(1, "out", "u32") + writeBinding(2, "taken", "u32") +
         "@group(0) @binding(3) var<storage, read_write> fault: array<atomic<u32>>;\n" + kU64 + kF64Arithmetic +
         "fn weight(j: u32) -> vec2u { return vec2u(w[2u * j], w[2u * j + 1u]); }\n"
         "fn positive(v: vec2u) -> bool { return (v.y >> 31u) == 0u && !is_zero64(v); }\n" + kMainSignature +
         " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n  let samples = uw(2u);\n  let replacement = uw(3u) == 1u;\n"
         "  let row = select(i, i / samples, replacement);\n"
         "  let base = row * n;\n"
         // the host's checks, and its total
         "  var total = vec2u(0u);\n  var count = 0u;\n  var bad = false;\n"
         "  for (var c = 0u; c < n; c = c + 1u) {\n"
         "    let v = weight(base + c);\n"
         "    bad = bad || ((v.y >> 31u) == 1u && !is_zero64(magnitude(v))) || ((v.y >> 20u) & 0x7ffu) == 2047u;\n"
         "    total = f64_add(total, v);\n"
         "    count = count + select(0u, 1u, positive(v));\n"
         "  }\n"
         "  if (bad || count == 0u || (!replacement && samples > count)) {\n"
         "    atomicMin(&fault[1], row);\n    atomicStore(&fault[0], 4u);\n"
         "    for (var j = 0u; j < select(samples, 1u, replacement); j = j + 1u) {\n"
         "      let o = select(row * samples + j, i, replacement);\n"
         "      out[2u * o] = 0u;\n      out[2u * o + 1u] = 0u;\n"
         "    }\n"
         "    return;\n"
         "  }\n"
         "  for (var j = 0u; j < select(samples, 1u, replacement); j = j + 1u) {\n"
         "    let o = select(row * samples + j, i, replacement);\n"  // the draw's index in the stream
         "    let bits = mix(add64(vec2u(uw(4u), uw(5u)), mul64(vec2u(o, 0u), vec2u(0x7f4a7c15u, 0x9e3779b9u))));\n"
         "    let goal = f64_scale(vec2u((bits.x >> 11u) | (bits.y << 21u), bits.y >> 11u), total);\n"
         "    var acc = vec2u(0u);\n    var pick = 0u;\n"
         "    for (var c = 0u; c < n; c = c + 1u) {\n"
         "      let v = weight(base + c);\n"
         "      if (!positive(v) || (!replacement && taken[base + c] == 1u)) { continue; }\n"
         "      pick = c;\n"
         "      acc = f64_add(acc, v);\n"
         "      if (f64_lt(goal, acc)) { break; }\n"
         "    }\n"
         "    out[2u * o] = pick;\n    out[2u * o + 1u] = 0u;\n"
         "    if (!replacement) {\n"
         "      let v = weight(base + pick);\n"
         "      total = f64_add(total, vec2u(v.x, v.y ^ 0x80000000u));\n"
         "      taken[base + pick] = 1u;\n"
         "    }\n"
         "  }\n"
         "}\n";
}

}  // namespace

RawTensor multinomialRows(ExecContext& ctx, const RawTensor& rows_in, int64_t samples, uint64_t seed,
                          bool replacement) {
  if (rows_in.dtype() != DType::f64) fail(ErrorCode::DTypeMismatch, "multinomialRows: rows must be f64");
  const int64_t n = rows_in.shape().back();
  Extents shape = rows_in.shape();
  shape.back() = samples;
  RawTensor out = RawTensor::empty(ctx, rows_in.tags(), shape, DType::i64);
  const int64_t rows = sampling::multinomialRowCount(rows_in.numel(), n, out.numel(), samples);
  if (rows == 0 || samples == 0) return out;
  if (rows * samples > UINT32_MAX || rows * std::max<int64_t>(n, 1) > UINT32_MAX / 2)
    unsupported("multinomial over 2^31 weights or 2^32 draws");
  const RawTensor w = n > 0 ? whole(ctx, rows_in) : placeholder(ctx);
  const RawTensor taken = replacement || n == 0 ? placeholder(ctx) : RawTensor::zeros(ctx, rows_in.tags(), rows_in.shape(), DType::i32);
  const uint64_t mixed = random::mix(seed);
  Uniforms u;
  const int64_t invocations = replacement ? rows * samples : rows;
  u.u(static_cast<uint64_t>(invocations)).u(static_cast<uint64_t>(n)).u(static_cast<uint64_t>(samples));
  u.u(replacement ? 1 : 0).u(mixed & 0xffffffffu).u(mixed >> 32);
  const uint32_t buffers[4] = {bufferOf(w, "multinomial"), bufferOf(out, "multinomial"), bufferOf(taken, "multinomial"),
                               Gpu::get().faultBuffer()};
  dispatchLinear(Gpu::get().pipeline(drawSource()), buffers, u, invocations);
  return out;
}

}  // namespace fucina::backend::webgpu
