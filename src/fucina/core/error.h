// Errors: every failure the library reports is a fucina::Error carrying an ErrorCode.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace fucina {

// Names follow the reference (§5); the JS facade exposes them as FucinaError.code.
#define FUCINA_ERROR_CODES(X)                                                                 \
  X(ShapeMismatch) X(DTypeMismatch) X(InvalidArgument) X(IndexOutOfRange) X(OutOfMemory)       \
  X(NoGradientGraph) X(MissingOutputGradient) X(MissingBackwardGradient) X(BackwardAlreadyRun) \
  X(UnsupportedGradient) X(MutableDataRequiresNoGrad) X(GradientCastUnsupported)               \
  X(GradientPackedMatmulUnsupported) X(GradientQuantizedMatmulUnsupported)                     \
  X(GradientPreparedConv2dUnsupported) X(CheckpointOutputNotDifferentiable)                    \
  X(CheckpointMissingInputGradient) X(NestedCheckpointRecompute) X(InvalidGradcheckOptions)    \
  X(NoVariableInputs) X(MissingAnalyticalGradient) X(GradientShapeMismatch) X(GradientMismatch) \
  X(TensorReleased)

enum class ErrorCode {
#define FUCINA_ENUM_ITEM(n) n,
  FUCINA_ERROR_CODES(FUCINA_ENUM_ITEM)
#undef FUCINA_ENUM_ITEM
};

std::string_view name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Throws Error(code, "<CodeName>: message"). Kept out of line so call sites stay small.
[[noreturn]] void fail(ErrorCode code, const std::string& message);

}  // namespace fucina
