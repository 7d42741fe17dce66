/// @file
/// ExecContext: the allocator (with memory accounting), the work pool and the stack of exec scopes
/// that every op is given explicitly as its first argument.
#pragma once

#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fucina/core/device.h"
#include "fucina/core/storage.h"
#include "fucina/exec/work_pool.h"

namespace fucina {

class Releasable;
class ExecScope;

struct ExecOptions {
  int threads = 0;  ///< 0 = hardware concurrency; 1 = no worker threads
  size_t cache_limit = MemoryAccount::kDefaultCacheLimit;  ///< bytes of freed buffers kept for reuse; 0: none
  /// Beyond cache_limit, also keep freed buffers up to the most that was ever live at once
  /// (Note [Cache to the high-water mark], core/storage.h).
  bool cache_to_high_water = true;
  /// The kernels ops compute with (Note [Backends], backend/kernels.h): cpu, or the scalar
  /// reference that the cpu kernels are tested against (one thread: `threads` is then ignored).
  Backend backend = Backend::cpu;
  /// The buffers of Backend::webgpu's device (backend/webgpu/device.h makes such contexts).
  std::shared_ptr<BlockSource> device_blocks = nullptr;
};

class ExecContext {
 public:
  explicit ExecContext(ExecOptions options = {});
  ~ExecContext();
  ExecContext(const ExecContext&) = delete;
  ExecContext& operator=(const ExecContext&) = delete;

  MemoryStats memory() const { return account_->stats(); }
  void resetPeak() { account_->resetPeak(); }
  /// Gives the buffers cached for reuse back to the system (Note [Caching allocator]).
  void trimCache() { account_->trimCache(); }
  void setCacheLimit(size_t bytes) { account_->setCacheLimit(bytes); }
  void setCacheToHighWater(bool on) { account_->setCacheToHighWater(on); }
  int threads() const { return pool_ ? pool_->size() : 1; }
  Backend backend() const { return backend_; }
  /// Where the tensors this context makes live.
  Device device() const { return account_->device(); }
  /// The context that computes on `device`: this one, or the one attached for it (a device
  /// context's own `on(cpu)` is the context it was attached to). DeviceUnavailable when none is.
  ExecContext& on(Device device);
  /// Attaches the context of another device (its backend's device), replacing any before it.
  void attach(std::unique_ptr<ExecContext> device_context);
  /// The attached context of `device`, or null.
  ExecContext* attached(Device device) const;

  // --- engine internals (public so that ops, kernels and bindings can reach them) ---
  const std::shared_ptr<MemoryAccount>& account() const { return account_; }
  /// The pool, or null when running on one thread.
  WorkPool* workPool() const { return pool_.get(); }
  /// Runs fn over [0, n) on the pool when n >= 2*grain and there is a pool, else inline.
  void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) const;
  /// Called for every Tensor made: the innermost ExecScope open on this thread (if any) takes
  /// ownership.
  void adopt(const std::shared_ptr<Releasable>& tensor);

 private:
  friend class ExecScope;
  using ScopeStack = std::vector<ExecScope*>;  // innermost last
  Backend backend_;
  std::shared_ptr<MemoryAccount> account_;
  std::unique_ptr<ExecContext> device_context_;  // the webgpu context attached to a cpu one
  ExecContext* host_context_ = nullptr;           // a device context's: the one it is attached to
  std::unique_ptr<WorkPool> pool_;
  std::mutex scopes_mutex_;
  // Note [Scopes per thread]: each thread's scopes stack on their own, so threads sharing one
  // context can each scope their own work: a tensor is adopted by its own thread's innermost
  // scope, and closing a scope releases only what that thread made inside it.
  std::unordered_map<std::thread::id, ScopeStack> scopes_;
};

}  // namespace fucina
