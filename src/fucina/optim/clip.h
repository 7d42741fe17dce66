/// @file
/// Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_ (norm_type 2).
#pragma once

#include <span>

#include "fucina/ag/tensor.h"
#include "fucina/exec/context.h"

namespace fucina::optim {

/// total = sqrt(sum of squares of every element of every parameter's gradient), in double.
/// When total > max_norm, every gradient is replaced (GradState::setGrad, a new buffer; views
/// taken earlier keep the old values) by itself times max_norm / (total + 1e-6). Parameters
/// without a gradient (or without gradient state) are skipped. Returns total, unclipped.
/// max_norm must be finite and >= 0 (InvalidArgument). A non-finite total scales nothing.
double clipGradNorm(ExecContext& ctx, std::span<const Tensor> params, double max_norm);

}  // namespace fucina::optim
