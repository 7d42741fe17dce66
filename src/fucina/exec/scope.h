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
class TensorImpl;

class ExecScope {
 public:
  explicit ExecScope(ExecContext& ctx);
  ~ExecScope() { close(); }
  ExecScope(const ExecScope&) = delete;
  ExecScope& operator=(const ExecScope&) = delete;

  /// Lets t outlive this scope: it moves to the enclosing scope, or to the caller when none.
  Tensor keep(const Tensor& t);
  /// Releases every tensor made in this scope and not kept. Idempotent. Scopes close innermost
  /// first; closing an outer scope closes the inner ones still open.
  void close();
  bool isOpen() const { return open_; }

 private:
  friend class ExecContext;
  ExecContext& ctx_;
  std::thread::id thread_;  // the thread whose stack this scope is on
  std::vector<std::weak_ptr<TensorImpl>> owned_;
  bool open_ = true;
};

}  // namespace fucina
