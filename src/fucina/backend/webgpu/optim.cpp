// The optimizers' updates, element by element over contiguous f32 parameters and state, in the
// order of backend/reference/optim.cpp's loops.
#include <string>

#include "fucina/backend/webgpu/pieces.h"
#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

std::string header(const std::vector<std::pair<std::string, bool>>& bindings) {
  std::string src = prelude(static_cast<int>(bindings.size()));
  for (size_t b = 0; b < bindings.size(); ++b)
    src += bindings[b].second ? writeBinding(static_cast<int>(b), bindings[b].first)
                              : readBinding(static_cast<int>(b), bindings[b].first);
  return src + kMainSignature + " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n";
}

void requireState(const RawTensor& p, const RawTensor& t, const char* what) {
  requireF32(t, what);
  requireWhole(t, what);
  if (t.numel() != p.numel() || !t.isContiguous())
    fail(ErrorCode::ShapeMismatch, std::string(what) + ": " + t.describe() + " must be contiguous, of " + p.describe() +
                                       "'s elements");
}

}  // namespace

void sgdUpdate(ExecContext&, const SgdStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& buf) {
  requireState(p, p, "sgd");
  requireState(p, g, "sgd");
  const bool momentum = buf.valid();
  if (momentum) requireState(p, buf, "sgd");
  std::string src = header(momentum ? std::vector<std::pair<std::string, bool>>{{"p", true}, {"g", false}, {"buf", true}}
                                    : std::vector<std::pair<std::string, bool>>{{"p", true}, {"g", false}});
  src += "  var d = g[i] + uf(2u) * p[i];\n";
  if (momentum)
    src += "  var b = buf[i];\n"
           "  if (uw(5u) != 0u) { b = d; } else { b = uf(3u) * b + uf(4u) * d; }\n"
           "  buf[i] = b;\n"
           "  if (uw(6u) != 0u) { d = d + uf(3u) * b; } else { d = b; }\n";
  src += "  p[i] = p[i] - uf(1u) * d;\n}\n";
  Uniforms u;
  u.u(static_cast<uint64_t>(p.numel())).f(s.lr).f(s.weight_decay).f(s.momentum).f(s.keep).u(s.first).u(s.nesterov);
  std::vector<uint32_t> buffers{bufferOf(p, "sgd"), bufferOf(g, "sgd")};
  if (momentum) buffers.push_back(bufferOf(buf, "sgd"));
  const uint64_t elem_bytes[3] = {4, 4, 4};
  dispatchElements(Gpu::get().pipeline(src), buffers, std::span(elem_bytes, buffers.size()), u, p.numel());
}

void adamUpdate(ExecContext&, const AdamStep& s, const RawTensor& p, const RawTensor& g, const RawTensor& m,
                const RawTensor& v) {
  for (const RawTensor* t : {&p, &g, &m, &v}) requireState(p, *t, "adam");
  const std::string src = header({{"p", true}, {"g", false}, {"m", true}, {"v", true}}) +
                          "  let pi = p[i];\n"
                          "  let gi = g[i] + uf(8u) * pi;\n"
                          "  let mi = uf(1u) * m[i] + uf(3u) * gi;\n"
                          "  let vi = uf(2u) * v[i] + uf(4u) * gi * gi;\n"
                          "  m[i] = mi;\n  v[i] = vi;\n"
                          "  p[i] = pi * uf(9u) - uf(5u) * (mi / (sqrt(vi) * uf(6u) + uf(7u)));\n}\n";
  Uniforms u;
  u.u(static_cast<uint64_t>(p.numel())).f(s.b1).f(s.b2).f(s.one_b1).f(s.one_b2).f(s.step_size).f(s.inv_sqrt_bc2);
  u.f(s.eps).f(s.l2).f(s.shrink);
  const uint32_t buffers[4] = {bufferOf(p, "adam"), bufferOf(g, "adam"), bufferOf(m, "adam"), bufferOf(v, "adam")};
  const uint64_t elem_bytes[4] = {4, 4, 4, 4};
  dispatchElements(Gpu::get().pipeline(src), buffers, elem_bytes, u, p.numel());
}

Kernels::GradNorm gradNorm(ExecContext& ctx, std::span<const RawTensor> grads, double max_norm) {
  Kernels::GradNorm r{RawTensor::empty(ctx, {}, {}), RawTensor::empty(ctx, {}, {})};
  const uint32_t out[2] = {bufferOf(r.norm, "clipGradNorm"), bufferOf(r.factor, "clipGradNorm")};
  // Σ g² of each gradient in a tree, added into norm[0] (set by the first).
  const std::string squares = prelude(2) + readBinding(0, "g") + writeBinding(1, "acc") + rowKernelHead() +
                              "  var s = 0.0;\n"
                              "  for (var i = l; i < n; i = i + 256u) { s = s + g[i] * g[i]; }\n"
                              "  s = reduce(l, s, false);\n"
                              "  if (l == 0u) { acc[0] = select(acc[0], 0.0, uf(2u) != 0.0) + s; }\n"
                              "}\n";
  bool first = true;
  const uint32_t pipeline = Gpu::get().pipeline(squares);
  for (const RawTensor& g_in : grads) {
    if (g_in.numel() == 0) continue;
    const RawTensor g = rowsOf(ctx, g_in, "clipGradNorm");
    const uint32_t buffers[2] = {bufferOf(g, "clipGradNorm"), out[0]};
    const uint64_t elem_bytes[2] = {4, 0};  // a gradient over one binding: a row per piece
    inRowPieces(buffers, elem_bytes, g.numel(), [&](int64_t, int64_t n, std::span<const Window> windows) {
      Uniforms u;
      u.u(1).u(static_cast<uint64_t>(n)).f(first ? 1.0f : 0.0f);
      Gpu::get().dispatch(pipeline, buffers, u.words, 1, 1, 1, windows);
      first = false;
    });
  }
  if (first) fill(ctx, r.norm, 0.0);
  // The norm, and the factor as backend::clipFactor (in f32).
  const std::string factor = prelude(2) + writeBinding(0, "norm") + writeBinding(1, "factor") +
                             "@compute @workgroup_size(1) fn main() {\n"
                             "  let t = sqrt(norm[0]);\n"
                             "  norm[0] = t;\n"
                             "  factor[0] = select(1.0, uf(0u) / (t + 1e-6), t > uf(0u) && is_finite(t));\n"
                             "}\n";
  Uniforms u;
  u.f(static_cast<float>(max_norm));
  Gpu::get().dispatch(Gpu::get().pipeline(factor), out, u.words, 1);
  return r;
}

}  // namespace fucina::backend::webgpu
