#include "fucina/optim/clip.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fucina/ag/grad_state.h"
#include "fucina/core/error.h"

namespace fucina::optim {

using internal::RawTensor;

double clipGradNorm(ExecContext& ctx, std::span<const Tensor> params, double max_norm) {
  if (!std::isfinite(max_norm) || max_norm < 0)
    fail(ErrorCode::InvalidArgument,
         "clipGradNorm option max_norm must be finite and >= 0, got " + std::to_string(max_norm));
  struct Entry {
    GradState* state;
    RawTensor grad;  // contiguous f32
  };
  std::vector<Entry> entries;
  double sum_sq = 0;
  for (const Tensor& p : params) {
    if (!p.defined()) fail(ErrorCode::InvalidArgument, "clipGradNorm: empty Tensor handle");
    GradState* state = p.gradState();
    if (state == nullptr) continue;
    std::optional<RawTensor> g = state->gradView();
    if (!g) continue;
    RawTensor c = g->dtype() == DType::f32 ? g->contiguous(ctx) : g->to(ctx, DType::f32);
    const float* d = c.f32();
    for (int64_t i = 0, n = c.numel(); i < n; ++i) sum_sq += static_cast<double>(d[i]) * d[i];
    entries.push_back({state, std::move(c)});
  }
  const double total = std::sqrt(sum_sq);
  if (!(total > max_norm) || !std::isfinite(total)) return total;
  const float coef = static_cast<float>(max_norm / (total + 1e-6));
  for (Entry& e : entries) {
    RawTensor scaled = RawTensor::empty(ctx, e.grad.tags(), e.grad.shape());
    const float* src = e.grad.f32();
    float* dst = scaled.f32();
    for (int64_t i = 0, n = scaled.numel(); i < n; ++i) dst[i] = src[i] * coef;
    e.state->setGrad(std::move(scaled));
  }
  return total;
}

}  // namespace fucina::optim
