// The starter demo behind `npm start`: a two-layer MLP learns y = sin(3·x0)·cos(2·x1) from
// synthetic points with plain SGD, printing the loss as it falls.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <fucina/fucina.h>

using fucina::ExecContext;
using fucina::Tensor;

namespace {

std::vector<float> randomNormal(std::mt19937& rng, size_t n, float stddev) {
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// One SGD step: a fresh leaf holding w - lr·grad (updates build no graph).
Tensor sgdStep(ExecContext& ctx, const Tensor& w, float lr) {
  auto no_grad = fucina::noGrad();
  Tensor updated = w.detach(ctx).sub(ctx, w.grad(ctx)->scale(ctx, lr));
  return Tensor::variable(ctx, updated);
}

}  // namespace

int main() {
  ExecContext ctx;
  std::mt19937 rng(7);
  constexpr int64_t kBatch = 256, kIn = 2, kHidden = 64, kSteps = 600;
  constexpr float kLr = 0.1f;

  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> xs(kBatch * kIn), ys(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) {
    xs[i * kIn] = uniform(rng);
    xs[i * kIn + 1] = uniform(rng);
    ys[i] = std::sin(3 * xs[i * kIn]) * std::cos(2 * xs[i * kIn + 1]);
  }
  const Tensor x = Tensor::fromSlice(ctx, {"batch", "in"}, {kBatch, kIn}, xs);
  const Tensor y = Tensor::fromSlice(ctx, {"batch"}, {kBatch}, ys);

  Tensor w1 = Tensor::variableFromSlice(ctx, {"hidden", "in"}, {kHidden, kIn},
                                        randomNormal(rng, kHidden * kIn, 1.0f));
  Tensor b1 = Tensor::variableFromSlice(ctx, {"hidden"}, {kHidden}, std::vector<float>(kHidden, 0.0f));
  Tensor w2 = Tensor::variableFromSlice(ctx, {"hidden"}, {kHidden},
                                        randomNormal(rng, kHidden, 1.0f / std::sqrt(float(kHidden))));

  std::printf("fucina %s: training a %lld-%lld-1 tanh MLP on %lld synthetic points (%d threads)\n",
              "0.1.0", static_cast<long long>(kIn), static_cast<long long>(kHidden),
              static_cast<long long>(kBatch), ctx.threads());
  float first = 0, last = 0;
  for (int step = 0; step <= kSteps; ++step) {
    fucina::ExecScope scope(ctx);  // frees this step's graph when the step ends
    Tensor h = x.dot(ctx, w1, "in").add(ctx, b1).tanh(ctx);        // {batch, hidden}
    Tensor pred = h.dot(ctx, w2, "hidden");                         // {batch}
    Tensor diff = pred.sub(ctx, y);
    Tensor loss = diff.mul(ctx, diff).meanAll(ctx);
    loss.backward(ctx);
    last = loss.item();
    if (step == 0) first = last;
    if (step % 50 == 0) std::printf("step %4d  loss %.5f\n", step, last);
    w1 = scope.keep(sgdStep(ctx, w1, kLr));
    b1 = scope.keep(sgdStep(ctx, b1, kLr));
    w2 = scope.keep(sgdStep(ctx, w2, kLr));
  }
  std::printf("loss fell from %.4f to %.4f (%.1fx lower)\n", first, last, first / last);
  return last < first / 4 ? 0 : 1;
}
