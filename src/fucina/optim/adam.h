/// @file
/// Adam and AdamW, as torch.optim.Adam / AdamW (amsgrad=False, maximize=False). At update t:
/// ```
///   Adam:  g = grad + weight_decay * p                (L2 penalty added to the gradient)
///   AdamW: p -= lr * weight_decay * p                 (decoupled decay, before the Adam step); g = grad
///   m = beta1 * m + (1 - beta1) * g
///   v = beta2 * v + (1 - beta2) * g^2
///   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
/// ```
#pragma once

#include "fucina/optim/optimizer.h"

namespace fucina::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  ///< AdamW's constructor uses 0.01 when given default options
  bool master_weights = false;  ///< f32 master copies of f16/bf16 parameters (optimizer.h)
};

class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});  ///< InvalidArgument naming a bad option
  Adam(std::span<const Tensor> params, AdamOptions options = {});
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(AdamOptions options, bool decoupled);
  void update(ExecContext& ctx, size_t index, int64_t t, const internal::RawTensor& p,
              const internal::RawTensor& g) override;

 private:
  AdamOptions options_;
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  static AdamOptions defaults() { return AdamOptions{.weight_decay = 0.01}; }
  explicit AdamW(AdamOptions options = defaults());
  AdamW(std::span<const Tensor> params, AdamOptions options = defaults());
};

}  // namespace fucina::optim
