// The gated units' pairs (backend/gates.h): out = u(up)·g(gate) as one strided map, and the VJP
// as one strided kernel writing both gradients (Note [Strided kernels]). Each gate is its WGSL
// forms u, u', g, g' over x, with situ's scale as the parameter pa.
#include <string>

#include "fucina/backend/webgpu/primitives.h"
#include "fucina/backend/webgpu/wgsl.h"
#include "fucina/core/error.h"
#include "fucina/exec/context.h"

namespace fucina::backend::webgpu {
namespace {

struct GateWgsl {
  const char *u, *du, *g, *dg;
};

GateWgsl formsOf(const GateFn& fn) {
  switch (fn.act) {
    case GateAct::silu: return {"x", "1.0", "x * sigmoid(x)", "silu_grad(x)"};
    case GateAct::geluTanh: return {"x", "1.0", "gelu_tanh(x)", "gelu_tanh_grad(x)"};
    case GateAct::geluErf: return {"x", "1.0", "gelu_erf(x)", "gelu_erf_grad(x)"};
    case GateAct::sigmoid: return {"x", "1.0", "sigmoid(x)", "sigmoid(x) * (1.0 - sigmoid(x))"};
    case GateAct::relu: return {"x", "1.0", "select(0.0, x, x > 0.0)", "select(0.0, 1.0, x > 0.0)"};
    case GateAct::quickGelu: return {"x", "1.0", "x * sigmoid(1.702 * x)", "quick_gelu_grad(x)"};
    case GateAct::situ:
      return {"pa * tanh_(x / pa)", "1.0 - tanh_(x / pa) * tanh_(x / pa)", "pa * tanh_(x * sigmoid(x) / pa)",
              "(1.0 - tanh_(x * sigmoid(x) / pa) * tanh_(x * sigmoid(x) / pa)) * silu_grad(x)"};
  }
  unsupported("this gate");
}

// The gate's forms as WGSL functions of x (and pa).
std::string gateFunctions(const GateWgsl& f) {
  return std::string("fn gate_u(x: f32, pa: f32) -> f32 { return ") + f.u + "; }\n" +
         "fn gate_du(x: f32, pa: f32) -> f32 { return " + f.du + "; }\n" +
         "fn gate_g(x: f32, pa: f32) -> f32 { return " + f.g + "; }\n" +
         "fn gate_dg(x: f32, pa: f32) -> f32 { return " + f.dg + "; }\n";
}

// gy, up, gate read; the two gradients written, into one binding when they share a buffer (two
// halves of one tensor's gradient).
std::string vjpSource(const GateWgsl& f, bool shared) {
  std::string src = prelude(shared ? 4 : 5) + readBinding(0, "gy") + readBinding(1, "up") + readBinding(2, "gate") +
                    writeBinding(3, "gup") + (shared ? "" : writeBinding(4, "ggate")) + gateFunctions(f);
  src += std::string(kMainSignature) + " {\n  " + kLinearIndex + "\n  if (i >= uw(0u)) { return; }\n";
  src += "  let pa = uf(" + std::to_string(kParamWord) + "u);\n";
  src += "  let g = gy[strided(i, 0u)];\n  let x = up[strided(i, 1u)];\n  let a = gate[strided(i, 2u)];\n";
  src += "  gup[strided(i, 3u)] = g * gate_du(x, pa) * gate_g(a, pa);\n";
  src += std::string("  ") + (shared ? "gup" : "ggate") + "[strided(i, 4u)] = g * gate_u(x, pa) * gate_dg(a, pa);\n}\n";
  return src;
}

}  // namespace

RawTensor gated(ExecContext& ctx, const GateFn& fn, const RawTensor& up, const RawTensor& gate) {
  const RawTensor* ins[2] = {&up, &gate};
  return mapExpr(ctx, up.tags(), up.shape(), ins, {"a", "b"}, "gate_u(a, pa) * gate_g(b, pa)", {fn.c, 0},
                 gateFunctions(formsOf(fn)));
}

void gatedVjp(ExecContext&, const GateFn& fn, const RawTensor& gy, const RawTensor& up, const RawTensor& gate,
              const RawTensor& gup, const RawTensor& ggate) {
  if (up.numel() == 0) return;
  const RawTensor* operands[5] = {&gy, &up, &gate, &gup, &ggate};
  std::vector<std::vector<int64_t>> strides;
  std::vector<int64_t> offsets;
  std::vector<uint32_t> buffers;
  for (const RawTensor* t : operands) {
    requireF32(*t, "gated VJP");
    strides.push_back(alignedStrides(*t, up.tags()));
    offsets.push_back(t->offset());
    buffers.push_back(bufferOf(*t, "gated VJP"));
  }
  const bool shared = buffers[3] == buffers[4];
  if (shared) buffers.pop_back();
  Uniforms u = stridedLayout(up.shape(), strides, offsets).uniforms();
  u.setF(kParamWord, fn.c);
  dispatchLinear(Gpu::get().pipeline(vjpSource(formsOf(fn), shared)), buffers, u, up.numel());
}

}  // namespace fucina::backend::webgpu
