/// @file
/// ExecScope: tensors made on this thread while a scope is open belong to it and are
/// released when it closes, unless kept. Each thread has its own stack of scopes (Note [Scopes per
/// thread], exec/context.h). Releasing a handle drops its value and gradient state; graph records that
/// still need them keep them alive through their own references, so closing is always safe.
#pragma once

#include <memory>
#include <thread>
#include <vector>

namespace fucina {

class ExecContext;
class Tensor;

/// What a scope owns: a handle's state, released when the scope closes (ag's TensorImpl). The
/// scope holds it weakly, so a handle dropped before the scope closes is simply gone.
class Releasable {
 public:
  virtual void release() = 0;

 protected:
  ~Releasable() = default;
};

class ExecScope {
 public:
  explicit ExecScope(ExecContext& ctx);
  ~ExecScope() { close(); }
  ExecScope(const ExecScope&) = delete;
  ExecScope& operator=(const ExecScope&) = delete;

  /// Lets t outlive this scope: it moves to the enclosing scope, or to the caller when none.
  /// (Defined with Tensor, in ag/tensor.cpp, over keepOwned.)
  Tensor keep(const Tensor& t);
  /// keep's work on a handle's state.
  void keepOwned(const std::shared_ptr<Releasable>& owned);
  /// Releases every tensor made in this scope and not kept. Idempotent. Scopes close innermost
  /// first; closing an outer scope closes the inner ones still open.
  void close();
  bool isOpen() const { return open_; }

 private:
  friend class ExecContext;
  ExecContext& ctx_;
  std::thread::id thread_;  // the thread whose stack this scope is on
  std::vector<std::weak_ptr<Releasable>> owned_;
  bool open_ = true;
};

}  // namespace fucina
