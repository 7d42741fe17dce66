// Sums over axes: one workgroup per output element, its 256 invocations striding over the summed
// elements and adding their partial sums in a tree (f32 throughout: WGSL has no f64, so a long
// sum differs from the cpu's f64 accumulation by rounding, bounded by the tree's log2 depth).
// Short lines (32 or fewer elements) are summed by one invocation per output instead.
#include <string>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// The summed axes' layout follows the kept axes' in the uniforms: count, rank, shape, strides;
// then out's offset.
constexpr uint32_t kLineWord = kParamWord + 2, kOutWord = kLineWord + 2 + 2 * kMaxRank;

std::string lineOffset() {
  const std::string w = std::to_string(kLineWord);
  return "fn line_offset(r: u32) -> u32 {\n"
         "  var rem = r;\n  var off = 0;\n"
         "  for (var d = uw(" + w + "u + 1u); d > 0u; d = d - 1u) {\n"
         "    let e = uw(" + w + "u + 1u + d);\n"
         "    off = off + i32(rem % e) * ui(" + w + "u + 1u + " + std::to_string(kMaxRank) + "u + d);\n"
         "    rem = rem / e;\n  }\n  return u32(off);\n}\n";
}

std::string treeSource() {
  return prelude(2) + readBinding(0, "a") + writeBinding(1, "out") + lineOffset() +
         "var<workgroup> part: array<f32, 256>;\n"
         "@compute @workgroup_size(256) fn main(@builtin(local_invocation_index) l: u32, "
         "@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) ng: vec3u) {\n"
         "  let o = wg.x + wg.y * ng.x;\n"
         "  let n = uw(0u);\n"
         "  let count = uw(" + std::to_string(kLineWord) + "u);\n"
         "  var s = 0.0;\n"
         "  if (o < n) {\n"
         "    let base = strided(o, 0u);\n"
         "    for (var r = l; r < count; r = r + 256u) { s = s + a[base + line_offset(r)]; }\n"
         "  }\n"
         "  part[l] = s;\n"
         "  workgroupBarrier();\n"
         "  for (var w = 128u; w > 0u; w = w >> 1u) {\n"
         "    if (l < w) { part[l] = part[l] + part[l + w]; }\n"
         "    workgroupBarrier();\n"
         "  }\n"
         "  if (l == 0u && o < n) { out[uw(" + std::to_string(kOutWord) + "u) + o] = part[0]; }\n"
         "}\n";
}

std::string lineSource() {
  return prelude(2) + readBinding(0, "a") + writeBinding(1, "out") + lineOffset() + kMainSignature + " {\n  " +
         kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n  let base = strided(i, 0u);\n  var s = 0.0;\n"
         "  for (var r = 0u; r < uw(" + std::to_string(kLineWord) + "u); r = r + 1u) { s = s + a[base + line_offset(r)]; }\n"
         "  out[uw(" + std::to_string(kOutWord) + "u) + i] = s;\n}\n";
}

// out (contiguous, a's kept axes) = a summed over axes. Past the binding limit (Note [Bound in
// pieces]) a and out are bound through windows, and where a's window is still too wide the sum
// goes in halves: of a summed axis when one output's line alone is too wide (the halves' sums
// added), else of a kept axis.
void sumInto(ExecContext& ctx, const RawTensor& a, const Tags& axes, const RawTensor& out) {
  Extents kept_shape, line_shape;
  std::vector<int64_t> kept_strides, line_strides;
  int split_line = -1, split_kept = -1;  // the outermost axis of each kind with more than one element
  for (size_t d = 0; d < a.rank(); ++d) {
    const bool summed = hasTag(axes, a.tags()[d]);
    (summed ? line_shape : kept_shape).push_back(a.shape()[d]);
    (summed ? line_strides : kept_strides).push_back(a.strides()[d]);
    int& split = summed ? split_line : split_kept;
    if (split < 0 && a.shape()[d] > 1) split = static_cast<int>(d);
  }
  const int64_t n = out.numel();
  const Span span = spanOf(a.offset(), a.shape(), a.strides());
  const Bound in = bindRange(bufferOf(a, "sumAxes"), a.dtype(), span.lo, span.hi);
  const Bound to = bindRange(bufferOf(out, "sumAxes"), out.dtype(), out.offset(), out.offset() + n);
  if (!in.fits || !to.fits) {
    const Span line = spanOf(0, line_shape, line_strides);
    const int d = !windowFits(DType::f32, line.hi - line.lo) || split_kept < 0 ? split_line : split_kept;
    if (d < 0) unsupported("a sum whose every piece spans more than one binding (Note [Bound in pieces])");
    const Tag tag = a.tags()[static_cast<size_t>(d)];
    const int64_t e = a.shape()[static_cast<size_t>(d)], h = e / 2;
    if (hasTag(axes, tag)) {
      sumInto(ctx, a.narrowed(tag, 0, h), axes, out);
      const RawTensor rest = RawTensor::empty(ctx, out.tags(), out.shape());
      sumInto(ctx, a.narrowed(tag, h, e - h), axes, rest);
      addInto(ctx, out, rest);
    } else {
      sumInto(ctx, a.narrowed(tag, 0, h), axes, out.narrowed(tag, 0, h));
      sumInto(ctx, a.narrowed(tag, h, e - h), axes, out.narrowed(tag, h, e - h));
    }
    return;
  }
  Uniforms u = stridedLayout(kept_shape, {kept_strides}, {a.offset() - in.shift}).uniforms();
  const StridedLayout line = stridedLayout(line_shape, {line_strides}, {0});
  u.set(kLineWord, static_cast<uint32_t>(line.n));
  u.set(kLineWord + 1, static_cast<uint32_t>(line.shape.size()));
  for (size_t d = 0; d < line.shape.size(); ++d) {
    u.set(kLineWord + 2 + static_cast<uint32_t>(d), static_cast<uint32_t>(line.shape[d]));
    u.set(kLineWord + 2 + kMaxRank + static_cast<uint32_t>(d), static_cast<uint32_t>(static_cast<int32_t>(line.strides[0][d])));
  }
  u.set(kOutWord, static_cast<uint32_t>(out.offset() - to.shift));
  const uint32_t buffers[2] = {bufferOf(a, "sumAxes"), bufferOf(out, "sumAxes")};
  const Window windows[2] = {in.window, to.window};
  const std::span<const Window> bound = in.window.size || to.window.size ? windows : std::span<const Window>{};
  if (line.n <= 32) return dispatchLinear(Gpu::get().pipeline(lineSource()), buffers, u, n, bound);
  const int64_t x = std::min<int64_t>(n, Gpu::kMaxGroups), y = (n + x - 1) / x;
  Gpu::get().dispatch(Gpu::get().pipeline(treeSource()), buffers, u.words, static_cast<uint32_t>(x),
                      static_cast<uint32_t>(y), 1, bound);
}

}  // namespace

RawTensor sumAxes(ExecContext& ctx, const RawTensor& a, const Tags& axes) {
  requireF32(a, "sumAxes");
  Tags kept_tags;
  Extents kept_shape;
  int64_t count = 1;
  for (size_t d = 0; d < a.rank(); ++d) {
    if (hasTag(axes, a.tags()[d])) {
      count *= a.shape()[d];
      continue;
    }
    kept_tags.push_back(a.tags()[d]);
    kept_shape.push_back(a.shape()[d]);
  }
  for (Tag t : axes) a.axis(t);  // ShapeMismatch for an axis a lacks
  if (count == 0) return RawTensor::zeros(ctx, kept_tags, kept_shape);
  RawTensor out = RawTensor::empty(ctx, kept_tags, kept_shape);
  if (out.numel() > 0) sumInto(ctx, a, axes, out);
  return out;
}

RawTensor reduceLoss(ExecContext& ctx, const RawTensor& loss, const Kernels::Divisor& denom) {
  requireF32(loss, "reduceLoss");  // per-row losses in f64 are the cpu's
  const RawTensor sum = sumAxes(ctx, loss, loss.tags());
  if (denom.tensor.valid()) {
    const RawTensor* in[2] = {&sum, &denom.tensor};
    return map(ctx, ElemOp::Div, Form::fwd, {}, {}, in, {});
  }
  if (denom.value == 1.0) return sum;
  const RawTensor* in[1] = {&sum};
  return map(ctx, ElemOp::DivScalar, Form::fwd, {}, {}, in, {denom.value});
}

}  // namespace fucina::backend::webgpu
