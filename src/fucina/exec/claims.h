// Owner-first claims: a static cut of [0, n) that a thread done early may take the tail of.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include "fucina/exec/context.h"
#include "fucina/exec/trace.h"

namespace fucina {

// Note [Owner-first claims]: [0, n) is cut into one range per owner exactly as parallelFor cuts
// it (owner c gets [n·c/owners, n·(c+1)/owners)), but handed out `step` indices at a time: an
// owner takes from the front of its own range and, once that is empty, from the back of another
// owner's. Each owner thus works through the rows it would have had under the fixed cut (what an
// op writes stays in the cache of the thread that reads it next: design notes, "Threads: static
// chunks"), and only the last steps of a slower owner move to a faster one. Claims are lock-free
// (one compare-and-swap on the owner's own cache line), and every index is handed out exactly
// once whatever the interleaving, including one thread running every owner in turn.
class OwnerFirstClaims {
 public:
  static constexpr int kMaxOwners = 16;

  // Requires 1 <= owners <= kMaxOwners, 0 <= n < 2^31, step >= 1.
  OwnerFirstClaims(int64_t n, int owners, int64_t step) : owners_(owners), step_(step) {
    for (int c = 0; c < owners; ++c)
      ranges_[c].bounds.store(pack(n * c / owners, n * (c + 1) / owners), std::memory_order_relaxed);
  }

  // The next [*begin, *end) for `owner`, or false once every index has been handed out.
  bool next(int owner, int64_t* begin, int64_t* end) {
    if (take(owner, /*front=*/true, begin, end)) return true;
    for (int i = 1; i < owners_; ++i)
      if (take((owner + i) % owners_, /*front=*/false, begin, end)) return true;
    return false;
  }

 private:
  static uint64_t pack(int64_t front, int64_t back) {
    return static_cast<uint64_t>(front) | static_cast<uint64_t>(back) << 32;
  }

  bool take(int owner, bool front, int64_t* begin, int64_t* end) {
    std::atomic<uint64_t>& bounds = ranges_[owner].bounds;
    uint64_t seen = bounds.load(std::memory_order_relaxed);
    while (true) {
      const int64_t f = static_cast<int64_t>(seen & 0xffffffffu), b = static_cast<int64_t>(seen >> 32);
      if (f >= b) return false;
      const int64_t lo = front ? f : std::max(f, b - step_), hi = front ? std::min(b, f + step_) : b;
      if (bounds.compare_exchange_weak(seen, front ? pack(hi, b) : pack(f, lo), std::memory_order_relaxed)) {
        *begin = lo;
        *end = hi;
        return true;
      }
    }
  }

  struct alignas(64) Range {
    std::atomic<uint64_t> bounds{0};  // front in the low 32 bits, back in the high 32
  };
  std::array<Range, kMaxOwners> ranges_;
  int owners_;
  int64_t step_;
};

// fn(begin, end) over [0, n) on ctx's threads, at most `max_owners` of them, with owner-first
// claims of a sixteenth of an owner's range at a time (the finest a tail can move), or of one
// index when ranges are shorter. A ctx with one thread, or one owner, makes one call. fn must give
// the same result for any cut of [0, n), as for parallelFor.
template <class Fn>
void claimedFor(ExecContext& ctx, int64_t n, int64_t max_owners, const Fn& fn) {
  constexpr int64_t kClaimsPerOwner = 16;
  const int64_t owners = std::min<int64_t>({max_owners, ctx.threads(), n, OwnerFirstClaims::kMaxOwners});
  if (owners <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  OwnerFirstClaims claims(n, static_cast<int>(owners), std::max<int64_t>(1, n / (owners * kClaimsPerOwner)));
  ctx.parallelFor(owners, 1, [&](int64_t first, int64_t last) {
    for (int64_t owner = first; owner < last; ++owner)
      for (int64_t b, e; claims.next(static_cast<int>(owner), &b, &e);) {
        FUCINA_TRACE_EVENT(trace::Kind::kClaim, b, e);
        fn(b, e);
        FUCINA_TRACE_EVENT(trace::Kind::kClaimEnd);
      }
  });
}

}  // namespace fucina
