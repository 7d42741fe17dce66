#include "fucina/exec/work_pool.h"

#include <algorithm>
#include <exception>

namespace fucina {

WorkPool::WorkPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

WorkPool::~WorkPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void WorkPool::workerLoop() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (tryRunOne(lock)) continue;
    if (stopping_) return;
    wake_.wait(lock);
  }
}

bool WorkPool::tryRunOne(std::unique_lock<std::mutex>& lock) {
  if (queue_.empty()) return false;
  std::function<void()> task = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  task();  // tasks catch their own exceptions (see parallelFor and the backward engine)
  lock.lock();
  return true;
}

void WorkPool::submit(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void WorkPool::helpUntil(const std::function<bool()>& done) {
  std::unique_lock lock(mutex_);
  while (!done()) {
    if (!tryRunOne(lock)) wake_.wait(lock);  // notifyAll takes the mutex: no lost wake-up
  }
}

void WorkPool::notifyAll() {
  { std::lock_guard lock(mutex_); }
  wake_.notify_all();
}

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
    try {
      fn(n * c / chunks, n * (c + 1) / chunks);
    } catch (...) {
      error = std::current_exception();
    }
    // Last touch of the caller's frame happens under the mutex the caller waits with.
    std::lock_guard lock(mutex_);
    if (error && !shared.error) shared.error = error;
    if (--shared.remaining == 0) wake_.notify_all();
  };
  for (int64_t c = 1; c < chunks; ++c) submit([runChunk, c] { runChunk(c); });
  runChunk(0);
  helpUntil([&] { return shared.remaining == 0; });
  if (shared.error) std::rethrow_exception(shared.error);
}

}  // namespace fucina
