#include "fucina/exec/scope.h"

#include <algorithm>

#include "fucina/ag/tensor.h"
#include "fucina/exec/context.h"

namespace fucina {

ExecScope::ExecScope(ExecContext& ctx) : ctx_(ctx) {
  std::lock_guard lock(ctx_.scopes_mutex_);
  ctx_.scopes_.push_back(this);
}

Tensor ExecScope::keep(const Tensor& t) {
  if (!t.defined()) return t;
  std::lock_guard lock(ctx_.scopes_mutex_);
  const auto& impl = t.impl();
  auto it = std::find_if(owned_.begin(), owned_.end(), [&](const std::weak_ptr<TensorImpl>& w) {
    return !w.owner_before(impl) && !impl.owner_before(w);
  });
  if (it != owned_.end()) {
    owned_.erase(it);
    // Hand it to the enclosing scope, if there is one below this scope on the stack.
    auto self = std::find(ctx_.scopes_.begin(), ctx_.scopes_.end(), this);
    if (self != ctx_.scopes_.end() && self != ctx_.scopes_.begin()) (*(self - 1))->owned_.push_back(impl);
  }
  return t;
}

void ExecScope::close() {
  std::vector<std::weak_ptr<TensorImpl>> owned;
  std::vector<ExecScope*> inner;
  {
    std::lock_guard lock(ctx_.scopes_mutex_);
    if (!open_) return;
    auto self = std::find(ctx_.scopes_.begin(), ctx_.scopes_.end(), this);
    if (self != ctx_.scopes_.end()) {
      inner.assign(self + 1, ctx_.scopes_.end());
      ctx_.scopes_.erase(self, ctx_.scopes_.end());
    }
    open_ = false;
    owned.swap(owned_);
  }
  for (auto it = inner.rbegin(); it != inner.rend(); ++it) {
    // Already unlinked from the context; release what they own.
    (*it)->open_ = false;
    for (auto& w : (*it)->owned_)
      if (auto impl = w.lock()) impl->release();
    (*it)->owned_.clear();
  }
  for (auto& w : owned)
    if (auto impl = w.lock()) impl->release();
}

}  // namespace fucina
