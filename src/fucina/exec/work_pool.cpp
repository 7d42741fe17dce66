#include "fucina/exec/work_pool.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "fucina/exec/trace.h"

namespace fucina {

// Note [Spin before sleeping]: a training step is a chain of short parallel regions (a few per
// op, tens of microseconds each). A worker that sleeps on the condition variable between them is
// woken through a futex, which on a virtual machine costs an inter-processor interrupt: on the
// 2-vCPU machines here those wake-ups ate the whole gain of a second thread on the W1 MLP
// (perf: 10% of samples in the guest's irq-enable path, 2 threads no faster than 1). So a thread
// with nothing to run first spins for up to kSpin watching epoch_, and only then sleeps; submit
// and announce skip the futex when nobody sleeps. Correctness does not depend on the spin: every
// change a waiter can wait for bumps epoch_ and notifies sleepers under mutex_, and a thread
// checks its condition under mutex_ before it sleeps.
namespace {
#ifdef __EMSCRIPTEN__
constexpr auto kSpin = std::chrono::microseconds(2000);  // ops, and gaps, are ~4x longer in wasm
#else
constexpr auto kSpin = std::chrono::microseconds(200);
#endif

// The pool a worker thread belongs to, and its index in it (1..size-1); other threads are 0.
thread_local const WorkPool* t_pool = nullptr;
thread_local int t_index = 0;

#if defined(__x86_64__) || defined(__i386__)
constexpr bool kCanPause = true;
inline void cpuRelax() { __builtin_ia32_pause(); }
#else
constexpr bool kCanPause = false;  // no pause instruction (wasm)
inline void cpuRelax() {}
#endif

// Note [Spin for the pool's lock]: mutex_ is held for well under a microsecond at a time, but a
// thread that found it taken slept in the futex, and its wake-up cost ~3 µs on these VMs: a
// parallelFor's caller took ~3 µs longer to see the worker's chunk end than the chunk's own
// imbalance explains (traced on W1: every kind of region), because the worker blocked on the
// lock the caller held to check for completion. So the pool tries its lock a bounded number of
// times before blocking, as it spins before sleeping when waiting for work.
// Only where cpuRelax pauses: in wasm a tight try_lock loop kept the lock's line bouncing away
// from its holder (W1 in threaded-simd, 2 threads: 5.5 → 6.0 ms), and musl's mutex, which
// Emscripten uses, already spins briefly before it waits.
constexpr int kLockSpins = kCanPause ? 256 : 0;  // a few µs: held sections are far shorter

void acquire(std::unique_lock<std::mutex>& lock) {
  for (int i = 0; i < kLockSpins; ++i) {
    if (lock.try_lock()) return;
    cpuRelax();
  }
  lock.lock();
}

// A lock on the pool's mutex, taken by acquire().
std::unique_lock<std::mutex> lockOf(std::mutex& m) {
  std::unique_lock<std::mutex> lock(m, std::defer_lock);
  acquire(lock);
  return lock;
}
}  // namespace

WorkPool::WorkPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { workerLoop(i); });
}

WorkPool::~WorkPool() {
  {
    const auto lock = lockOf(mutex_);
    stopping_ = true;
    announce();
  }
  for (auto& w : workers_) w.join();
}

void WorkPool::announce() {
  epoch_.fetch_add(1);
  // Every sleeper: one waiting only for its own chunks may not be able to use what changed.
  if (sleepers_ > 0) wake_.notify_all();
}

bool WorkPool::spinForChange(std::unique_lock<std::mutex>& lock) {
  const uint64_t seen = epoch_.load();
  lock.unlock();
  const auto until = std::chrono::steady_clock::now() + kSpin;
  bool changed = false;
  for (uint32_t i = 1;; ++i) {
    if (epoch_.load() != seen) {
      changed = true;
      break;
    }
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
    cpuRelax();
  }
  acquire(lock);
  return changed;
}

void WorkPool::sleep(std::unique_lock<std::mutex>& lock) {
  ++sleepers_;
  wake_.wait(lock);
  --sleepers_;
}

void WorkPool::workerLoop(int index) {
  t_pool = this;
  t_index = index;
  auto lock = lockOf(mutex_);
  while (true) {
    if (tryRunOne(lock, nullptr)) continue;
    if (stopping_) return;
    if (spinForChange(lock) || !queue_.empty() || stopping_) continue;
    sleep(lock);
  }
}

bool WorkPool::tryRunOne(std::unique_lock<std::mutex>& lock, const void* owner) {
  auto it = queue_.begin();
  if (owner)
    while (it != queue_.end() && it->owner != owner) ++it;
  if (it == queue_.end()) return false;
  std::function<void()> task = std::move(it->run);
  queue_.erase(it);
  lock.unlock();
  task();  // tasks catch their own exceptions (see parallelFor and the backward engine)
  acquire(lock);
  return true;
}

void WorkPool::submit(std::function<void()> task, const void* owner) {
  const auto lock = lockOf(mutex_);
  queue_.push_back({std::move(task), owner});
  announce();
}

void WorkPool::helpUntil(const std::function<bool()>& done, const void* owner) {
  auto lock = lockOf(mutex_);
  while (!done()) {
    if (tryRunOne(lock, owner)) continue;
    // announce() runs under mutex_, and done() is checked under it before sleeping: no lost
    // wake-up. A filtered waiter re-checks after each change (it cannot tell whose task arrived).
    if (spinForChange(lock) || done() || (!owner && !queue_.empty())) continue;
    sleep(lock);
  }
}

void WorkPool::notifyAll() {
  const auto lock = lockOf(mutex_);
  announce();
}

// Note [Only your own chunks]: while a parallelFor waits for its chunks it runs only its own
// queued chunks, never another task from the queue. So a caller may hold a lock across a
// parallelFor (GradState::accumulate adds a gradient under its mutex): a foreign task run in
// the wait could otherwise try to take the same lock on the same thread (a backward task
// accumulating into the same gradient). The caller still never idles while one of its own
// chunks waits in the queue, so the wait always ends.
void WorkPool::parallelFor(int64_t n, int64_t grain,
                           const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = std::min<int64_t>(size(), n / grain);  // each chunk >= grain
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  struct Shared {
    int64_t remaining;  // guarded by the pool's mutex_, so the caller's wait sees it safely
    std::exception_ptr error;
  } shared{chunks, nullptr};
  auto runChunk = [this, &shared, &fn, n, chunks](int64_t c) {
    std::exception_ptr error;
    FUCINA_TRACE_EVENT(trace::Kind::kChunk, c);
    try {
      fn(n * c / chunks, n * (c + 1) / chunks);
    } catch (...) {
      error = std::current_exception();
    }
    FUCINA_TRACE_EVENT(trace::Kind::kChunkEnd, c);
    // Last touch of the caller's frame happens under the mutex the caller waits with.
    const auto lock = lockOf(mutex_);
    if (error && !shared.error) shared.error = error;
    if (--shared.remaining == 0) announce();
  };
  // Note [Chunk c on thread c]: the caller runs the chunk of its own index in the pool (a caller
  // from outside the pool is thread 0), so that with static chunks a row range is worked on by
  // the same thread from op to op even when a backward record runs on a worker: each thread then
  // reads rows it wrote itself, from its own core's cache. Other chunks go to whoever is free.
  const int64_t mine = t_pool == this ? std::min<int64_t>(t_index, chunks - 1) : 0;
  for (int64_t c = 0; c < chunks; ++c)
    if (c != mine) submit([runChunk, c] { runChunk(c); }, &shared);
  runChunk(mine);
  helpUntil([&] { return shared.remaining == 0; }, &shared);
  if (shared.error) std::rethrow_exception(shared.error);
}

}  // namespace fucina
