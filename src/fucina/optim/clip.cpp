#include "fucina/optim/clip.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "fucina/ag/grad_state.h"
#include "fucina/backend/kernels.h"
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
    sum_sq += backend::kernelsOf(ctx).sumSquares(ctx, c);
    entries.push_back({state, std::move(c)});
  }
  const double total = std::sqrt(sum_sq);
  if (!(total > max_norm) || !std::isfinite(total)) return total;
  // coef in f32, as the product is: each gradient element times the same float.
  const auto coef = static_cast<double>(static_cast<float>(max_norm / (total + 1e-6)));
  const backend::Kernels& k = backend::kernelsOf(ctx);
  for (Entry& e : entries) {
    const RawTensor* in[] = {&e.grad};
    e.state->setGrad(k.map(ctx, backend::elemOpOf<backend::rows::Scale>(), backend::Form::fwd, e.grad.tags(),
                           e.grad.shape(), in, backend::ElemParams{coef}));
  }
  return total;
}

}  // namespace fucina::optim
