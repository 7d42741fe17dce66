#include "fucina/backend/webgpu/wgsl.h"

#include <cstring>
#include <string>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/core/error.h"

namespace fucina::backend::webgpu {

Uniforms& Uniforms::u(uint64_t v) {
  if (v > UINT32_MAX) unsupported("a size or offset of " + std::to_string(v) + " (over 32 bits)");
  words.push_back(static_cast<uint32_t>(v));
  return *this;
}

Uniforms& Uniforms::i(int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX) unsupported("a stride or offset of " + std::to_string(v) + " (over 32 bits)");
  words.push_back(static_cast<uint32_t>(static_cast<int32_t>(v)));
  return *this;
}

namespace {
uint32_t bitsOf(float v) {  // std::bit_cast is missing from Emscripten 3.1's libc++
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
}  // namespace

Uniforms& Uniforms::f(float v) {
  words.push_back(bitsOf(v));
  return *this;
}

Uniforms& Uniforms::setF(uint32_t at, float v) { return set(at, bitsOf(v)); }

Uniforms& Uniforms::set(uint32_t at, uint32_t v) {
  if (words.size() <= at) words.resize(at + 1, 0);
  words[at] = v;
  return *this;
}

StridedLayout stridedLayout(const Extents& shape, const std::vector<std::vector<int64_t>>& strides,
                            const std::vector<int64_t>& offsets) {
  StridedLayout l;
  l.n = numelOf(shape);
  l.offsets = offsets;
  l.strides.resize(strides.size());
  // Innermost first: merge an axis into the one inside it where every operand's strides nest.
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    bool merge = !l.shape.empty();
    for (size_t k = 0; merge && k < strides.size(); ++k)
      merge = strides[k][d] == l.strides[k].front() * l.shape.front();
    if (merge) {
      l.shape.front() *= shape[d];
      continue;
    }
    l.shape.insert(l.shape.begin(), shape[d]);
    for (size_t k = 0; k < strides.size(); ++k) l.strides[k].insert(l.strides[k].begin(), strides[k][d]);
  }
  if (l.shape.size() > static_cast<size_t>(kMaxRank))
    unsupported("a strided layout of " + std::to_string(l.shape.size()) + " axes that do not merge (at most " +
                std::to_string(kMaxRank) + ")");
  if (strides.size() > static_cast<size_t>(kMaxOperands)) unsupported("more than 5 operands");
  return l;
}

Uniforms StridedLayout::uniforms() const {
  Uniforms u;
  u.u(static_cast<uint64_t>(n)).u(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) u.set(kShapeWord + static_cast<uint32_t>(d), static_cast<uint32_t>(shape[d]));
  for (size_t k = 0; k < strides.size(); ++k) {
    const uint32_t base = kOperandWord + static_cast<uint32_t>(k) * kOperandWords;
    Uniforms w;
    w.i(offsets[k]);
    for (int64_t s : strides[k]) w.i(s);
    for (size_t j = 0; j < w.words.size(); ++j) u.set(base + static_cast<uint32_t>(j), w.words[j]);
  }
  u.set(kParamWord + 1, 0);
  return u;
}

std::vector<int64_t> alignedStrides(const RawTensor& t, const Tags& tags) {
  std::vector<int64_t> s(tags.size(), 0);
  for (size_t i = 0; i < tags.size(); ++i)
    if (auto j = findTag(t.tags(), tags[i])) s[i] = t.strides()[*j];
  return s;
}

std::string prelude(int uniform_binding) {
  const std::string w = std::to_string(kOperandWord), ow = std::to_string(kOperandWords),
                    sw = std::to_string(kShapeWord);
  return "struct Words { w: array<vec4<u32>, " + std::to_string(Gpu::kUniformBytes / 16) + "> };\n"
         "@group(0) @binding(" + std::to_string(uniform_binding) + ") var<uniform> u: Words;\n"
         "fn uw(i: u32) -> u32 { return u.w[i >> 2u][i & 3u]; }\n"
         "fn uf(i: u32) -> f32 { return bitcast<f32>(uw(i)); }\n"
         "fn ui(i: u32) -> i32 { return bitcast<i32>(uw(i)); }\n"
         "fn strided(i: u32, k: u32) -> u32 {\n"
         "  let base = " + w + "u + k * " + ow + "u;\n"
         "  var rem = i;\n"
         "  var off = ui(base);\n"
         "  for (var d = uw(1u); d > 0u; d = d - 1u) {\n"
         "    let e = uw(" + sw + "u + d - 1u);\n"
         "    off = off + i32(rem % e) * ui(base + d);\n"
         "    rem = rem / e;\n"
         "  }\n"
         "  return u32(off);\n"
         "}\n"
         // Bit tests, not comparisons: a WGSL compiler may assume values are finite.
         "fn is_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }\n"
         "fn is_neg_inf(x: f32) -> bool { return bitcast<u32>(x) == 0xff800000u; }\n"
         "fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n"
         // Through a var: a constant NaN or infinity is a WGSL compile error.
         "fn from_bits(b: u32) -> f32 { var v = b; return bitcast<f32>(v); }\n"
         "fn nan() -> f32 { return from_bits(0x7fc00000u); }\n"
         "fn sigmoid(a: f32) -> f32 { if (a >= 0.0) { return 1.0 / (1.0 + exp(-a)); } let e = exp(a); return e / (1.0 + e); }\n"
         // tanh through exp overflows to NaN in some drivers past |x| ~ 44; it is ±1 in f32 from 9.1.
         "fn tanh_(a: f32) -> f32 { return tanh(clamp(a, -10.0, 10.0)); }\n"
         "fn gelu_tanh(a: f32) -> f32 { return 0.5 * a * (1.0 + tanh_(0.7978845608028654 * (a + 0.044715 * a * a * a))); }\n"
         "fn gelu_tanh_grad(a: f32) -> f32 {\n"
         "  let t = tanh_(0.7978845608028654 * (a + 0.044715 * a * a * a));\n"
         "  let dinner = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * a * a);\n"
         "  return 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * dinner;\n"
         "}\n"
         // erfc with a fractional error under 1.2e-7 (Numerical Recipes' Chebyshev fit), so
         // x·Φ(x) = x·erfc(-x/√2)/2 keeps its relative accuracy for negative x.
         "fn erfc_(x: f32) -> f32 {\n"
         "  let z = abs(x);\n  let t = 1.0 / (1.0 + 0.5 * z);\n"
         "  let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + "
         "t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));\n"
         "  return select(2.0 - r, r, x >= 0.0);\n"
         "}\n"
         "fn gelu_erf(a: f32) -> f32 { return 0.5 * a * erfc_(-0.7071067811865476 * a); }\n"
         "fn gelu_erf_grad(a: f32) -> f32 { return 0.5 * erfc_(-0.7071067811865476 * a) + 0.3989422804014327 * a * exp(-0.5 * a * a); }\n"
         "fn silu_grad(a: f32) -> f32 { let s = sigmoid(a); return s * (1.0 + a * (1.0 - s)); }\n"
         "fn clamp_(a: f32, lo: f32, hi: f32) -> f32 { return select(select(a, hi, a > hi), lo, a < lo); }\n"
         // std::pow's cases that WGSL's pow leaves undefined: a zero or negative base.
         "fn pow_(a: f32, e: f32) -> f32 {\n"
         "  if (e == 0.0) { return 1.0; }\n"
         "  if (a > 0.0) { return pow(a, e); }\n"
         "  if (a == 0.0) { return select(from_bits(0x7f800000u), 0.0, e > 0.0); }\n"
         "  if (floor(e) != e) { return nan(); }\n"
         "  let m = pow(-a, e);\n"
         "  return select(m, -m, abs(e) % 2.0 == 1.0);\n"
         "}\n"
         "fn exp_shifted(a: f32, b: f32) -> f32 { return select(exp(a - b), 0.0, is_neg_inf(b)); }\n"
         // WGSL's sin and cos promise only an absolute error of 2^-11 on [-π, π] (SwiftShader's
         // are that coarse): a Cody-Waite reduction by π/2 in three parts, then Cephes' f32
         // polynomials on [-π/4, π/4], within a few ulp of std::sin while |x| < 2^15·π/2.
         "fn sin_quadrant(x: f32, shift: i32) -> f32 {\n"
         "  let q = round(x * 0.6366197723675814);\n"
         "  let r = ((x - q * 1.5703125) - q * 4.837512969970703125e-4) - q * 7.549789948768648e-8;\n"
         "  let z = r * r;\n"
         "  let s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));\n"
         "  let c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));\n"
         "  let k = (i32(q) + shift) & 3;\n"
         "  let v = select(s, c, (k & 1) == 1);\n"
         "  return select(select(v, -v, k >= 2), nan(), !is_finite(x));\n"
         "}\n"
         "fn sin_(x: f32) -> f32 { return sin_quadrant(x, 0); }\n"
         "fn cos_(x: f32) -> f32 { return sin_quadrant(x, 1); }\n"
         // expm1 and log1p from exp and log without cancellation (Kahan's corrections).
         "fn expm1_(x: f32) -> f32 {\n"
         "  let e = exp(x);\n"
         "  if (e == 1.0 || !is_finite(e)) { return select(e, x, e == 1.0); }\n"
         "  let d = e - 1.0;\n"
         "  if (d == -1.0) { return -1.0; }\n"
         "  return d * x / log(e);\n"
         "}\n"
         "fn log1p_(x: f32) -> f32 {\n"
         "  let v = 1.0 + x;\n"
         "  if (v == 1.0 || !is_finite(v) || v == 0.0) { return select(log(v), x, v == 1.0); }\n"
         "  return log(v) * x / (v - 1.0);\n"
         "}\n"
         "fn quick_gelu_grad(a: f32) -> f32 { let s = sigmoid(1.702 * a); return s + 1.702 * a * s * (1.0 - s); }\n"
         // floor, ceil, round half to even, sign (±0 and NaN kept): Rounding's modes 0..3.
         "fn rounding(a: f32, mode: f32) -> f32 {\n"
         "  if (mode == 0.0) { return floor(a); }\n"
         "  if (mode == 1.0) { return ceil(a); }\n"
         "  if (mode == 2.0) { return round(a); }\n"
         "  return select(select(a, -1.0, a < 0.0), 1.0, a > 0.0);\n"
         "}\n"
         // FastTanh's ratio (elementwise_table.h), its clamps passing NaN.
         "fn fast_tanh(a: f32) -> f32 {\n"
         "  let x = clamp_(a, -7.0, 7.0);\n  let z = x * x;\n"
         "  let p = (((z + 990.0) * z + 135135.0) * z + 4729725.0) * z + 34459425.0;\n"
         "  let q = (((45.0 * z + 13860.0) * z + 945945.0) * z + 16216200.0) * z + 34459425.0;\n"
         "  return clamp_(x * p / q, -1.0, 1.0);\n"
         "}\n"
         // An i64's words (low, high) as the nearest f32, as the host's: the magnitude's top 32 bits,
         // the lowest of them also set when any bit below is (so the one rounding is to nearest).
         "fn i64_to_f32(lo: u32, hi: u32) -> f32 {\n"
         "  let neg = bitcast<i32>(hi) < 0;\n"
         "  let ml = select(lo, ~lo + 1u, neg);\n"
         "  let mh = select(hi, ~hi + select(0u, 1u, ml == 0u), neg);\n"
         "  var m = f32(ml);\n"
         "  if (mh != 0u) {\n"
         "    let n = countLeadingZeros(mh);\n"
         "    var top = mh;\n    var rest = ml;\n"
         "    if (n > 0u) { top = (mh << n) | (ml >> (32u - n)); rest = ml << n; }\n"
         "    m = ldexp(f32(top | select(0u, 1u, rest != 0u)), i32(32u - n));\n"
         "  }\n"
         "  return select(m, -m, neg);\n"
         "}\n"
         // BceLoss's log clamped at -100 (as torch's BCELoss), and its derivative.
         "fn bce_log(v: f32) -> f32 { return select(max(log(v), -100.0), -100.0, v <= 0.0); }\n"
         "fn bce_log_grad(v: f32) -> f32 { return select(0.0, 1.0 / v, v > 0.0 && log(v) > -100.0); }\n"
         "fn huber(d: f32, delta: f32) -> f32 { return select(delta * (d - 0.5 * delta), 0.5 * d * d, d <= delta); }\n"
         "fn kl_div(x: f32, t: f32, log_target: f32) -> f32 {\n"
         "  if (log_target != 0.0) { return exp(t) * (t - x); }\n"
         "  return select(0.0, t * (log(t) - x), t > 0.0);\n"
         "}\n";
}

// The 16-bit floats' bits to and from f32 (core/dtype.cpp's f32ToF16, f16ToF32, f32ToBf16).
const char* const kU64 =
    "fn mul32(a: u32, b: u32) -> vec2u {\n"  // the full product of two u32
    "  let a0 = a & 0xffffu;\n  let a1 = a >> 16u;\n  let b0 = b & 0xffffu;\n  let b1 = b >> 16u;\n"
    "  let p00 = a0 * b0;\n  let p01 = a0 * b1;\n  let p10 = a1 * b0;\n"
    "  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);\n"
    "  return vec2u((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));\n"
    "}\n"
    "fn mul64(a: vec2u, b: vec2u) -> vec2u { let p = mul32(a.x, b.x); return vec2u(p.x, p.y + a.x * b.y + a.y * b.x); }\n"
    "fn add64(a: vec2u, b: vec2u) -> vec2u { let lo = a.x + b.x; return vec2u(lo, a.y + b.y + select(0u, 1u, lo < a.x)); }\n"
    "fn xor_shift(z: vec2u, s: u32) -> vec2u { return z ^ vec2u((z.x >> s) | (z.y << (32u - s)), z.y >> s); }\n"
    "fn mix(z: vec2u) -> vec2u {\n"  // splitmix64's finalizer
    "  let a = mul64(xor_shift(z, 30u), vec2u(0x1ce4e5b9u, 0xbf58476du));\n"
    "  let b = mul64(xor_shift(a, 27u), vec2u(0x133111ebu, 0x94d049bbu));\n"
    "  return xor_shift(b, 31u);\n"
    "}\n";

const char* const kHalves =
    "fn f32_to_f16(v: f32) -> u32 {\n"
    "  let x = bitcast<u32>(v);\n  let sign = (x >> 16u) & 0x8000u;\n  let a = x & 0x7fffffffu;\n"
    "  if (a >= 0x7f800000u) { return sign | 0x7c00u | select(0u, 0x200u, a > 0x7f800000u); }\n"
    "  if (a >= 0x477ff000u) { return sign | 0x7c00u; }\n"
    "  if (a < 0x38800000u) { return sign | u32(round(bitcast<f32>(a) * 16777216.0)); }\n"
    "  let r = a - 0x38000000u;\n"
    "  return sign | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);\n"
    "}\n"
    "fn f16_to_f32(h: u32) -> f32 {\n"
    "  let sign = (h & 0x8000u) << 16u;\n  let e = (h >> 10u) & 0x1fu;\n  let m = h & 0x3ffu;\n"
    "  if (e == 0u) { return bitcast<f32>(bitcast<u32>(f32(m) * (1.0 / 16777216.0)) | sign); }\n"
    "  if (e == 31u) { return bitcast<f32>(sign | 0x7f800000u | (m << 13u)); }\n"
    "  return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));\n"
    "}\n"
    "fn f32_to_bf16(v: f32) -> u32 {\n"
    "  let x = bitcast<u32>(v);\n"
    "  if ((x & 0x7fffffffu) > 0x7f800000u) { return (x >> 16u) | 0x40u; }\n"
    "  return (x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u;\n"
    "}\n";

std::string elementReader(const std::string& buf, DType dtype) {
  const std::string head = "fn " + buf + "_at(e: u32) -> f32 {\n";
  auto part = [&](const std::string& at, const char* mask) {  // the byte or half at byte `at`
    return "((" + buf + "[(" + at + ") / 4u] >> (8u * ((" + at + ") % 4u))) & " + mask + ")";
  };
  switch (dtype) {
    case DType::f32: return head + "  return bitcast<f32>(" + buf + "[e]);\n}\n";
    case DType::u8: return head + "  return f32(" + part("e", "0xffu") + ");\n}\n";
    case DType::f16: return head + "  return f16_to_f32(" + part("2u * e", "0xffffu") + ");\n}\n";
    case DType::bf16: return head + "  return bitcast<f32>(" + part("2u * e", "0xffffu") + " << 16u);\n}\n";
    case DType::q8_0:  // Note [q8_0 layout]: value e % 32 of block e / 32, times the block's f16 scale
      return head + "  let blk = (e / 32u) * 34u;\n  let q = " + part("blk + 2u + e % 32u", "0xffu") +
             ";\n  return f16_to_f32(" + part("blk", "0xffffu") + ") * f32(bitcast<i32>(q << 24u) >> 24u);\n}\n";
    default: unsupported("reading " + std::string(name(dtype)) + " elements as f32");
  }
}

std::string readBinding(int b, const std::string& name, const std::string& type) {
  return "@group(0) @binding(" + std::to_string(b) + ") var<storage, read> " + name + ": array<" + type + ">;\n";
}

std::string writeBinding(int b, const std::string& name, const std::string& type) {
  return "@group(0) @binding(" + std::to_string(b) + ") var<storage, read_write> " + name + ": array<" + type + ">;\n";
}

std::string rowKernelHead() {
  return "var<workgroup> red: array<f32, 256>;\n"
         "fn reduce(l: u32, v: f32, take_max: bool) -> f32 {\n"
         "  red[l] = v;\n"
         "  workgroupBarrier();\n"
         "  for (var w = 128u; w > 0u; w = w >> 1u) {\n"
         "    if (l < w) { red[l] = select(red[l] + red[l + w], max(red[l], red[l + w]), take_max); }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  let r = red[0];\n"
         "  workgroupBarrier();\n"
         "  return r;\n"
         "}\n"
         "@compute @workgroup_size(256) fn main(@builtin(local_invocation_index) l: u32, "
         "@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) ng: vec3u) {\n"
         "  let row = wg.x + wg.y * ng.x;\n"
         "  if (row >= uw(0u)) { return; }\n"
         "  let n = uw(1u);\n"
         "  let base = row * n;\n";
}

void dispatchRows(const std::string& source, std::span<const uint32_t> buffers, const RowLayout& l, float param,
                  std::span<const uint32_t> extra, std::span<const uint64_t> row_bytes) {
  if (l.rows == 0 || l.n == 0) return;
  Uniforms u;
  u.u(static_cast<uint64_t>(l.rows)).u(static_cast<uint64_t>(l.n)).f(param);
  for (const uint32_t w : extra) u.u(w);
  const uint32_t pipeline = Gpu::get().pipeline(source);
  inRowPieces(buffers, row_bytes, l.rows, [&](int64_t, int64_t rows, std::span<const Window> windows) {
    u.set(0, static_cast<uint32_t>(rows));
    const int64_t x = std::min<int64_t>(rows, Gpu::kMaxGroups), y = (rows + x - 1) / x;
    Gpu::get().dispatch(pipeline, buffers, u.words, static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1, windows);
  });
}

void requireRows(const RawTensor& t, const char* what) {
  requireF32(t, what);
  if (!t.isContiguous()) fail(ErrorCode::InvalidArgument, std::string(what) + ": rows must be contiguous, got " + t.describe());
}

RawTensor whole(ExecContext& ctx, const RawTensor& t) {
  if (t.offset() == 0 && t.isContiguous()) return t;
  RawTensor c = RawTensor::empty(ctx, t.tags(), t.shape(), t.dtype());
  if (c.numel() > 0) copy(ctx, t, c);
  return c;
}

RawTensor rowsOf(ExecContext& ctx, const RawTensor& t, const char* what) {
  requireRows(t, what);
  return whole(ctx, t);
}

RawTensor placeholder(ExecContext& ctx) { return RawTensor::empty(ctx, {}, {}); }

void requireWhole(const RawTensor& t, const char* what) {
  if (t.offset() != 0)
    unsupported(std::string(what) + " into " + t.describe() + ", a view that starts inside its buffer");
}

uint32_t bufferOf(const RawTensor& t, const char* what) {
  if (t.device() != Device::webgpu)
    fail(ErrorCode::DeviceMismatch, std::string(what) + ": " + t.describe() + " is on the " +
                                        std::string(name(t.device())) +
                                        " device, the op computes on webgpu: move it with to('webgpu')");
  return webgpu::bufferOf(t.storage()->block());
}

void dispatchLinear(uint32_t pipeline, std::span<const uint32_t> buffers, const Uniforms& u, int64_t n,
                    std::span<const Window> windows) {
  if (n <= 0) return;
  const int64_t groups = (n + 255) / 256;
  const int64_t x = std::min<int64_t>(groups, Gpu::kMaxGroups), y = (groups + x - 1) / x;
  Gpu::get().dispatch(pipeline, buffers, u.words, static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1, windows);
}

void unsupported(const std::string& what) {
  fail(ErrorCode::UnsupportedOnDevice, "webgpu does not compute " + what + " yet");
}

void requireF32(const RawTensor& t, const char* what) {
  if (t.dtype() != DType::f32)
    fail(ErrorCode::UnsupportedOnDevice, std::string(what) + ": webgpu computes in f32, got " +
                                             std::string(name(t.dtype())) + " " + t.describe());
}

}  // namespace fucina::backend::webgpu
