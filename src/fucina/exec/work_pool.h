// WorkPool: the only place fucina makes threads. The calling thread always takes part, so a
// pool of size N has N-1 worker threads, and waiting never idles a thread that could help.
// A thread with nothing to do spins briefly before it sleeps (Note [Spin before sleeping]).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fucina {

class WorkPool {
 public:
  explicit WorkPool(int threads);  // total threads including the caller; >= 1
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over [0, n) in chunks of at least `grain`, on the pool and the caller.
  // Returns when every chunk is done; the first exception thrown by a chunk is rethrown.
  void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  // Queues a task. Tasks must not throw; the caller arranges to wait for them (helpUntil).
  // `owner` tags the task for helpUntil's filter (null: nobody's in particular).
  void submit(std::function<void()> task, const void* owner = nullptr);
  // Runs queued tasks on this thread until done() holds, sleeping when there is nothing to run.
  // A waiting thread helps instead of blocking, so pool tasks may themselves wait safely. With an
  // `owner`, it runs only the tasks submitted with that owner (Note [Only your own chunks]).
  void helpUntil(const std::function<bool()>& done, const void* owner = nullptr);
  // Call after changing state a helpUntil predicate reads, so that waiters look again.
  void notifyAll();

 private:
  void workerLoop(int index);
  bool tryRunOne(std::unique_lock<std::mutex>& lock, const void* owner);
  // Waits with `lock` released for epoch_ to move, for a bounded time; true if it moved.
  bool spinForChange(std::unique_lock<std::mutex>& lock);
  void sleep(std::unique_lock<std::mutex>& lock);
  // Under mutex_: something a waiter may be waiting for happened; wakes sleepers if any.
  void announce();

  std::mutex mutex_;
  std::condition_variable wake_;
  struct Task {
    std::function<void()> run;
    const void* owner;
  };
  std::deque<Task> queue_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
  int sleepers_ = 0;                 // threads blocked on wake_ (guarded by mutex_)
  std::atomic<uint64_t> epoch_{0};   // bumped under mutex_ by every announce: what spinners watch
};

}  // namespace fucina
