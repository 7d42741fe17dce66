// BackwardFunction: the type-erased VJP record a GradState holds for an op result.
// Internal: user-defined differentiable ops go through customVjp, which implements it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "fucina/core/raw_tensor.h"

namespace fucina {

class ExecContext;
class GradState;

// Note [Placed gradients] (docs/design-notes.md): an op whose one operand's gradient is zero outside
// a slice of that operand (select, narrow) names the slice; its backward writes only the slice's
// gradient, shaped as the slice, and the engine adds it into that slice of the operand's gradient.
struct GradientSlice {
  Tag axis;
  int64_t start = 0, count = 0;
};

class BackwardFunction {
 public:
  virtual ~BackwardFunction() = default;
  // One slot per forward operand; null where the operand was a constant.
  virtual std::span<const std::shared_ptr<GradState>> operands() const = 0;
  // Writes an owned gradient into out[i] for every true needs_grad[i], shaped like operand i (or
  // like its slice, where placement() names one). The engine consumes them. gy is the accumulated
  // gradient of this record's output.
  virtual void backward(ExecContext& ctx, const internal::RawTensor& gy,
                        std::span<const bool> needs_grad,
                        std::span<std::optional<internal::RawTensor>> out) = 0;
  virtual std::string_view name() const = 0;  // the op's name, for error messages
  // The slice its one operand's gradient lies in (Note [Placed gradients]), or null: whole.
  virtual const GradientSlice* placement() const { return nullptr; }
  // Scheduling hints of the parallel backward: records at or above kBackwardAsyncWorkThreshold,
  // or that prefer async, may run on a pool thread when other nodes are ready at the same time.
  virtual bool preferAsyncBackward() const { return false; }
  virtual size_t estimatedWork() const { return 0; }
};

inline constexpr size_t kBackwardAsyncWorkThreshold = size_t{256} * 1024 * 1024;

}  // namespace fucina
