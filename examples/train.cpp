// Fit y = sin(3x) on [-1, 1] with a small MLP (nn::Linear + tanh) and Adam: the loss falls.
#include <cstdio>
#include <fucina/fucina.h>

using fucina::Tensor;

int main() {
  fucina::ExecContext ctx;
  const Tensor x = Tensor::uniform(ctx, {"sample", "in"}, {256, 1}, -1, 1, /*seed=*/1);
  const Tensor y = x.scale(ctx, 3).sin(ctx).withTags(ctx, {"sample", "out"});
  const fucina::nn::Linear hidden(ctx, "in", "hidden", 1, 32, /*seed=*/2);
  const fucina::nn::Linear head(ctx, "hidden", "out", 32, 1, /*seed=*/3);
  const std::vector<Tensor> params = {hidden.weight, hidden.bias, head.weight, head.bias};
  fucina::optim::Adam opt(params, {.lr = 0.01});
  for (int step = 0; step <= 500; ++step) {
    fucina::ExecScope scope(ctx);  // frees this step's tensors when it closes
    opt.zeroGrad();
    const Tensor loss = head(ctx, hidden(ctx, x).tanh(ctx)).mseLoss(ctx, y);
    loss.backward(ctx);
    opt.step(ctx);
    if (step % 100 == 0) std::printf("step %d: loss %.4f\n", step, loss.item());
  }
}
