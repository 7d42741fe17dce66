// Storage: one refcounted, 64-byte aligned buffer made through an ExecContext's MemoryAccount.
// Views share it (shared_ptr); the account sees every byte that is live.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace fucina {

struct MemoryStats {
  size_t live_bytes = 0;    // bytes of tensor storage alive now (values, gradients, saved views)
  size_t peak_bytes = 0;    // highest live_bytes since creation or the last resetPeak()
  size_t live_tensors = 0;  // Tensor handles alive and not disposed
  size_t allocations = 0;   // buffers requested from the system so far
};

// Accounting of one context's buffers. Shared by every Storage it made, so a buffer that
// outlives its context still has somewhere to report its release.
class MemoryAccount {
 public:
  void* allocate(size_t bytes);  // throws OutOfMemory
  void release(void* ptr, size_t bytes) noexcept;
  void tensorCreated() noexcept { live_tensors_.fetch_add(1, std::memory_order_relaxed); }
  void tensorReleased() noexcept { live_tensors_.fetch_sub(1, std::memory_order_relaxed); }
  MemoryStats stats() const noexcept;
  void resetPeak() noexcept;

 private:
  std::atomic<size_t> live_bytes_{0}, peak_bytes_{0}, live_tensors_{0}, allocations_{0};
};

class Storage {
 public:
  Storage(std::shared_ptr<MemoryAccount> account, size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::byte* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<MemoryAccount> account_;
  std::byte* data_;
  size_t bytes_;
};

}  // namespace fucina
