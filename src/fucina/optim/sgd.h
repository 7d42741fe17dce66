/// @file
/// Stochastic gradient descent, as torch.optim.SGD (maximize=False):
/// ```
///   g = grad + weight_decay * p                       (L2 penalty added to the gradient)
///   with momentum > 0:  buf = g on the first update, else buf = momentum * buf + (1 - dampening) * g
///                       g = nesterov ? g + momentum * buf : buf
///   p -= lr * g
/// ```
#pragma once

#include "fucina/optim/optimizer.h"

namespace fucina::optim {

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;  ///< needs momentum > 0 and dampening == 0 (as torch)
  double weight_decay = 0;
  bool master_weights = false;  ///< f32 master copies of f16/bf16 parameters (optimizer.h)
};

class Sgd : public Optimizer {
 public:
  explicit Sgd(SgdOptions options = {});  ///< InvalidArgument naming a bad option
  Sgd(std::span<const Tensor> params, SgdOptions options = {});
  const SgdOptions& options() const { return options_; }

 protected:
  void update(ExecContext& ctx, size_t index, int64_t t, const internal::RawTensor& p,
              const internal::RawTensor& g) override;

 private:
  SgdOptions options_;
};

}  // namespace fucina::optim
