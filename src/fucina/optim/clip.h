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
/// clipGradNorm on any device without reading it (Note [Device reads]): the norm is returned as
/// an f32 scalar on the gradients' device, and every gradient is replaced by itself times the
/// factor computed there (1 when nothing is clipped, so the values are clipGradNorm's). On the cpu
/// the norm is summed in f64 as clipGradNorm's; on webgpu in f32.
Tensor clipGradNormTensor(ExecContext& ctx, std::span<const Tensor> params, double max_norm);

}  // namespace fucina::optim
