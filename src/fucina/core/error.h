/// @file
/// Errors: every failure the library reports is a fucina::Error carrying an ErrorCode.
#pragma once

#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fucina {

/// Names follow the reference's errors; the JS facade exposes them as FucinaError.code.
#define FUCINA_ERROR_CODES(X)                                                                 \
  X(ShapeMismatch) X(DTypeMismatch) X(InvalidArgument) X(IndexOutOfRange) X(OutOfMemory)       \
  X(NoGradientGraph) X(MissingOutputGradient) X(MissingBackwardGradient) X(BackwardAlreadyRun) \
  X(UnsupportedGradient) X(MutableDataRequiresNoGrad) X(GradientCastUnsupported)               \
  X(GradientPackedMatmulUnsupported) X(GradientQuantizedMatmulUnsupported)                     \
  X(GradientPreparedConv2dUnsupported) X(CheckpointOutputNotDifferentiable)                    \
  X(CheckpointMissingInputGradient) X(NestedCheckpointRecompute) X(InvalidGradcheckOptions)    \
  X(NoVariableInputs) X(MissingAnalyticalGradient) X(GradientShapeMismatch) X(GradientMismatch) \
  X(TensorReleased) X(DeviceUnavailable) X(DeviceMismatch) X(DeviceLost) X(DeviceReadIsAsync)    \
  X(UnsupportedOnDevice)

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

/// Throws Error(code, "<CodeName>: message"). Kept out of line so call sites stay small.
[[noreturn]] void fail(ErrorCode code, const std::string& message);

/// Runs f, turning an allocation failure of the standard library (std::bad_alloc, or
/// std::length_error from a container asked for more than it can hold) into OutOfMemory: only
/// fucina::Error leaves the API, also where buffers are not tensors (a decoder's byte vectors).
template <class F>
auto withOutOfMemoryAsError(std::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::OutOfMemory, std::string(what) + ": out of memory");
  } catch (const std::length_error&) {
    fail(ErrorCode::OutOfMemory, std::string(what) + ": a buffer larger than the address space");
  }
}

}  // namespace fucina
