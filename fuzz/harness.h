// What the harnesses share: a failed check aborts (a crash to libFuzzer) naming the harness, and
// the context files are decoded into carries a live-byte budget, as for any untrusted input.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include <fucina/fucina.h>

namespace fuzz {

inline void require(bool ok, const char* harness, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "%s: %s\n", harness, what);
  std::abort();
}

/// The process's one single-threaded context, made on first use with that budget.
inline fucina::ExecContext& budgetedContext(size_t live_limit) {
  static auto* ctx = [live_limit] {
    auto* c = new fucina::ExecContext(fucina::ExecOptions{.threads = 1});
    c->account()->setLiveLimit(live_limit);
    return c;
  }();
  return *ctx;
}

}  // namespace fuzz
