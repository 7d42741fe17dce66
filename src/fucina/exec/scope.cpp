#include "fucina/exec/scope.h"

#include <algorithm>

#include "fucina/exec/context.h"

namespace fucina {

ExecScope::ExecScope(ExecContext& ctx) : ctx_(ctx), thread_(std::this_thread::get_id()) {
  std::lock_guard lock(ctx_.scopes_mutex_);
  ctx_.scopes_[thread_].push_back(this);
}

void ExecScope::keepOwned(const std::shared_ptr<Releasable>& impl) {
  std::lock_guard lock(ctx_.scopes_mutex_);
  auto it = std::find_if(owned_.begin(), owned_.end(), [&](const std::weak_ptr<Releasable>& w) {
    return !w.owner_before(impl) && !impl.owner_before(w);
  });
  if (it != owned_.end()) {
    owned_.erase(it);
    // Hand it to the enclosing scope of this scope's thread, if there is one (Note [Scopes per
    // thread]).
    auto stack = ctx_.scopes_.find(thread_);
    if (stack != ctx_.scopes_.end()) {
      auto self = std::find(stack->second.begin(), stack->second.end(), this);
      if (self != stack->second.end() && self != stack->second.begin())
        (*(self - 1))->owned_.push_back(impl);
    }
  }
}

void ExecScope::close() {
  std::vector<std::weak_ptr<Releasable>> owned;
  std::vector<ExecScope*> inner;
  {
    std::lock_guard lock(ctx_.scopes_mutex_);
    if (!open_) return;
    auto stack = ctx_.scopes_.find(thread_);
    if (stack != ctx_.scopes_.end()) {
      auto self = std::find(stack->second.begin(), stack->second.end(), this);
      if (self != stack->second.end()) {
        inner.assign(self + 1, stack->second.end());
        stack->second.erase(self, stack->second.end());
      }
      if (stack->second.empty()) ctx_.scopes_.erase(stack);
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
