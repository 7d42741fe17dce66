// The backward engine. Internal: users call Tensor::backward / backwardWithGrad.
#pragma once

#include <span>

#include "fucina/ag/tensor.h"

namespace fucina::ag {

// Runs one backward pass from several outputs at once. Seeds are validated and made before any
// scheduling state exists. Records may run on the pool (see BackwardFunction's hints).
void backwardGrad(ExecContext& ctx, std::span<const Tensor> outputs);
// Same, but every record runs on the calling thread (needed when a thread-local guard must see
// the whole pass, as in the checkpoint recompute).
void backwardGradSerial(ExecContext& ctx, std::span<const Tensor> outputs);
// Serial pass that treats states older than `boundary` (a GradState::nextGeneration() taken
// earlier) as constants: they are neither visited nor given gradients.
void backwardGradSerialWithin(ExecContext& ctx, std::span<const Tensor> outputs, uint64_t boundary);

}  // namespace fucina::ag
