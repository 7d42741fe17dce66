// viewWithStrides's VJP (Kernels::scatterAddView) on the device: dst += src through a view whose
// elements may coincide. Where no two coincide it is a strided add (addInto). Else each element
// of the view's span gathers, in a fixed order, every src element that lands on it: the view's
// longest axis (of non-zero stride) is solved for, the others enumerated, so no two invocations
// write one place and no atomics are needed.
#include <algorithm>
#include <string>
#include <vector>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

// Whether two logical indices of (shape, strides >= 0) can reach one element: the axes of
// extent > 1 sorted by stride, each stride must pass everything the smaller ones reach.
bool overlaps(const Extents& shape, const std::vector<int64_t>& strides) {
  std::vector<size_t> axes;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1) axes.push_back(d);
  std::sort(axes.begin(), axes.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t reach = 0;  // the furthest element the smaller axes reach
  for (size_t d : axes) {
    if (strides[d] <= reach) return true;
    reach += (shape[d] - 1) * strides[d];
  }
  return false;
}

constexpr uint32_t kAxisWord = 8, kMaxAxes = 7;

// Words: 0 the span's elements, 1 the enumerated axes, 2 their index tuples, 3 the solved axis's
// extent, 4 its dst stride, 5 its src stride, 6 dst's first element; from kAxisWord, per
// enumerated axis (the last varying fastest): extent, dst stride, src stride.
std::string gatherSource() {
  return prelude(2) + readBinding(0, "src") + writeBinding(1, "dst") + kMainSignature + " {\n  " + kLinearIndex +
         "\n  if (i >= uw(0u)) { return; }\n"
         "  let n = uw(3u);\n  let ds = uw(4u);\n  let ss = uw(5u);\n"
         "  var sum = 0.0;\n"
         "  for (var t = 0u; t < uw(2u); t = t + 1u) {\n"
         "    var rest = t;\n    var at = 0u;\n    var si = 0u;\n"
         "    for (var d = uw(1u); d > 0u; d = d - 1u) {\n"
         "      let w = " + std::to_string(kAxisWord) + "u + 3u * (d - 1u);\n"
         "      let c = rest % uw(w);\n      rest = rest / uw(w);\n"
         "      at = at + c * uw(w + 1u);\n      si = si + c * uw(w + 2u);\n"
         "    }\n"
         "    if (at > i || (i - at) % ds != 0u || (i - at) / ds >= n) { continue; }\n"
         "    sum = sum + src[si + (i - at) / ds * ss];\n"
         "  }\n"
         "  dst[uw(6u) + i] = dst[uw(6u) + i] + sum;\n"
         "}\n";
}

}  // namespace

void scatterAddView(ExecContext& ctx, const RawTensor& dst, const RawTensor& src) {
  requireF32(dst, "scatterAddView");
  if (src.numel() == 0) return;
  if (!overlaps(dst.shape(), dst.strides())) return addInto(ctx, dst, src);
  // src laid out contiguously in dst's axis order, read at row-major strides.
  const RawTensor s = whole(ctx, src);
  std::vector<int64_t> src_strides(dst.rank());
  for (size_t d = dst.rank(), step = 1; d-- > 0;) {
    src_strides[d] = static_cast<int64_t>(step);
    step *= static_cast<size_t>(dst.shape()[d]);
  }
  // The solved axis: the longest with a non-zero stride; with none, every element lands on the
  // first and a solved axis of extent 1 stands in.
  size_t solved = dst.rank();
  for (size_t d = 0; d < dst.rank(); ++d)
    if (dst.strides()[d] > 0 && dst.shape()[d] > 1 && (solved == dst.rank() || dst.shape()[d] > dst.shape()[solved]))
      solved = d;
  const bool none = solved == dst.rank();
  Uniforms u;
  int64_t span = 1, tuples = 1;
  uint32_t enumerated = 0;
  for (size_t d = 0; d < dst.rank(); ++d) {
    span += (dst.shape()[d] - 1) * dst.strides()[d];
    if (d == solved || dst.shape()[d] == 1) continue;
    if (enumerated == kMaxAxes) unsupported("scatterAddView over more than 8 axes of extent > 1");
    const uint32_t w = kAxisWord + 3 * enumerated++;
    u.set(w, static_cast<uint32_t>(dst.shape()[d]));
    u.set(w + 1, static_cast<uint32_t>(dst.strides()[d]));
    u.set(w + 2, static_cast<uint32_t>(src_strides[d]));
    tuples *= dst.shape()[d];
  }
  u.set(0, static_cast<uint32_t>(span)).set(1, enumerated).set(2, static_cast<uint32_t>(tuples));
  u.set(3, none ? 1 : static_cast<uint32_t>(dst.shape()[solved]));
  u.set(4, none ? 1 : static_cast<uint32_t>(dst.strides()[solved]));
  u.set(5, none ? 0 : static_cast<uint32_t>(src_strides[solved])).set(6, static_cast<uint32_t>(dst.offset()));
  const uint32_t buffers[2] = {bufferOf(s, "scatterAddView"), bufferOf(dst, "scatterAddView")};
  dispatchLinear(Gpu::get().pipeline(gatherSource()), buffers, u, span);
}

}  // namespace fucina::backend::webgpu
