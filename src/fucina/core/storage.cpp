#include "fucina/core/storage.h"

#include <cstdlib>
#include <new>
#include <string>

#include "fucina/core/error.h"

namespace fucina {

void* MemoryAccount::allocate(size_t bytes) {
  constexpr size_t kAlign = 64;
  const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = rounded == 0 ? nullptr : ::operator new(rounded, std::align_val_t(kAlign), std::nothrow);
  if (rounded != 0 && p == nullptr)
    fail(ErrorCode::OutOfMemory, "could not allocate " + std::to_string(bytes) + " bytes");
  allocations_.fetch_add(1, std::memory_order_relaxed);
  const size_t live = live_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  size_t peak = peak_bytes_.load(std::memory_order_relaxed);
  while (live > peak && !peak_bytes_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return p;
}

void MemoryAccount::release(void* ptr, size_t bytes) noexcept {
  if (ptr != nullptr) ::operator delete(ptr, std::align_val_t(64));
  live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

MemoryStats MemoryAccount::stats() const noexcept {
  return {live_bytes_.load(), peak_bytes_.load(), live_tensors_.load(), allocations_.load()};
}

void MemoryAccount::resetPeak() noexcept { peak_bytes_.store(live_bytes_.load()); }

Storage::Storage(std::shared_ptr<MemoryAccount> account, size_t bytes)
    : account_(std::move(account)),
      data_(static_cast<std::byte*>(account_->allocate(bytes))),
      bytes_(bytes) {}

Storage::~Storage() { account_->release(data_, bytes_); }

}  // namespace fucina
