#include "fucina/optim/clip.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fucina/ag/grad_state.h"
#include "fucina/backend/kernels.h"
#include "fucina/backend/optim_steps.h"
#include "fucina/core/error.h"

namespace fucina::optim {

using internal::RawTensor;

namespace {

struct Entry {
  GradState* state;
  RawTensor grad;  // contiguous f32
};

// The parameters' gradients, contiguous f32; parameters without one are skipped.
std::vector<Entry> gradients(ExecContext& ctx, std::span<const Tensor> params, double max_norm) {
  if (!std::isfinite(max_norm) || max_norm < 0)
    fail(ErrorCode::InvalidArgument,
         "clipGradNorm option max_norm must be finite and >= 0, got " + std::to_string(max_norm));
  std::vector<Entry> entries;
  for (const Tensor& p : params) {
    if (!p.defined()) fail(ErrorCode::InvalidArgument, "clipGradNorm: empty Tensor handle");
    GradState* state = p.gradState();
    if (state == nullptr) continue;
    std::optional<RawTensor> g = state->gradView();
    if (!g) continue;
    entries.push_back({state, g->dtype() == DType::f32 ? g->contiguous(ctx) : g->to(ctx, DType::f32)});
  }
  return entries;
}

// Each gradient times the factor: `factor` an f32 scalar on the gradients' device.
void scale(ExecContext& ctx, std::vector<Entry>& entries, const RawTensor& factor) {
  const backend::Kernels& k = backend::kernelsOf(ctx);
  for (Entry& e : entries) {
    const RawTensor f = factor.broadcastView(e.grad.tags(), e.grad.shape());
    const RawTensor* in[] = {&e.grad, &f};
    e.state->setGrad(k.map(ctx, backend::ElemOp::Mul, backend::Form::fwd, e.grad.tags(), e.grad.shape(), in, {}));
  }
}

}  // namespace

double clipGradNorm(ExecContext& ctx, std::span<const Tensor> params, double max_norm) {
  std::vector<Entry> entries = gradients(ctx, params, max_norm);
  double sum_sq = 0;
  for (const Entry& e : entries) sum_sq += backend::kernelsOf(ctx).sumSquares(ctx, e.grad);
  const double total = std::sqrt(sum_sq);
  const float coef = backend::clipFactor(total, max_norm);
  if (coef == 1.0f) return total;
  const backend::Kernels& k = backend::kernelsOf(ctx);
  for (Entry& e : entries) {
    const RawTensor* in[] = {&e.grad};
    e.state->setGrad(k.map(ctx, backend::elemOpOf<backend::rows::Scale>(), backend::Form::fwd, e.grad.tags(),
                           e.grad.shape(), in, backend::ElemParams{static_cast<double>(coef)}));
  }
  return total;
}

Tensor clipGradNormTensor(ExecContext& ctx, std::span<const Tensor> params, double max_norm) {
  std::vector<Entry> entries = gradients(ctx, params, max_norm);
  std::vector<RawTensor> grads;
  for (const Entry& e : entries) grads.push_back(e.grad);
  const backend::Kernels::GradNorm n = backend::kernelsOf(ctx).gradNorm(ctx, grads, max_norm);
  scale(ctx, entries, n.factor);
  return Tensor::fromRaw(ctx, n.norm);
}

}  // namespace fucina::optim
