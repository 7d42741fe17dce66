/// @file
/// noGrad scopes: a thread-local depth; gradients are recorded only at depth zero.
#pragma once

#include <cstdint>

namespace fucina {

class NoGradScope {
 public:
  NoGradScope();
  ~NoGradScope() { close(); }
  NoGradScope(NoGradScope&& other) noexcept : open_(other.open_) { other.open_ = false; }
  NoGradScope& operator=(NoGradScope&&) = delete;
  NoGradScope(const NoGradScope&) = delete;
  void close();  ///< idempotent: an early close makes the destructor's close a no-op

 private:
  bool open_ = true;
};

NoGradScope noGrad();
bool isGradEnabled();

namespace internal {
// Turns recording back on for this thread until destroyed, whatever noGrad scopes are open
// (the checkpoint recompute rebuilds its subgraph even when backward runs under noGrad).
class ForceGradScope {
 public:
  ForceGradScope();
  ~ForceGradScope();
  ForceGradScope(const ForceGradScope&) = delete;
  ForceGradScope& operator=(const ForceGradScope&) = delete;

 private:
  int saved_depth_;
};

// Note [Checkpoint tail] (ag/checkpoint.h): true inside checkpointTail during a checkpoint's
// recompute, where an op that can leaves its value pending (Tensor::makePending).
bool deferringValues();
// For tests: how many results were left pending, and how many of those a read computed.
struct PendingValueCounts {
  uint64_t deferred = 0, computed = 0;
};
PendingValueCounts pendingValueCounts();
void countPendingValueDeferred();
void countPendingValueComputed();
}  // namespace internal

}  // namespace fucina
