#include "fucina/ag/control.h"

namespace fucina {
namespace {
thread_local int no_grad_depth = 0;
}

NoGradScope::NoGradScope() { ++no_grad_depth; }

void NoGradScope::close() {
  if (!open_) return;
  open_ = false;
  --no_grad_depth;
}

NoGradScope noGrad() { return NoGradScope(); }

bool isGradEnabled() { return no_grad_depth == 0; }

internal::ForceGradScope::ForceGradScope() : saved_depth_(no_grad_depth) { no_grad_depth = 0; }

internal::ForceGradScope::~ForceGradScope() { no_grad_depth = saved_depth_; }

}  // namespace fucina
