// The optimizers' updates, element by element over contiguous f32 parameters and state, in the
// order of backend/reference/optim.cpp's loops.
#include <string>

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
  dispatchLinear(Gpu::get().pipeline(src), buffers, u, p.numel());
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
  dispatchLinear(Gpu::get().pipeline(src), buffers, u, p.numel());
}

}  // namespace fucina::backend::webgpu
