#include "fucina/core/storage.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "fucina/core/error.h"

namespace fucina {
namespace {

void* systemAllocate(size_t block) noexcept {
  return ::operator new(block, std::align_val_t(MemoryAccount::kAlign), std::nothrow);
}

void systemFree(void* p) noexcept { ::operator delete(p, std::align_val_t(MemoryAccount::kAlign)); }

// Above this a request cannot be served (its block size would overflow; 2 GiB on wasm32).
constexpr size_t kMaxBytes = std::numeric_limits<size_t>::max() / 2 + 1;

}  // namespace

size_t MemoryAccount::blockSize(size_t bytes) noexcept {
  if (bytes == 0) return 0;
  if (bytes > kMaxBytes) return bytes;  // unservable; allocate() reports it
  const size_t r = (bytes + kAlign - 1) / kAlign * kAlign;
  if (r <= kSubSteps * kAlign) return r;  // 64, 128, 192, 256: exact
  const int e = std::bit_width(r - 1) - 1;  // r in (2^e, 2^(e+1)]
  const size_t step = size_t{1} << (e - 2);
  return (r + step - 1) / step * step;      // 1.25, 1.5, 1.75 or 2 times 2^e
}

int MemoryAccount::classOf(size_t block) noexcept {
  if (block <= kSubSteps * kAlign) return static_cast<int>(block / kAlign) - 1;
  const int e = std::bit_width(block - 1) - 1;
  const size_t step = size_t{1} << (e - 2);
  return kSubSteps + (e - 8) * kSubSteps + static_cast<int>(block / step) - 5;
}

size_t MemoryAccount::classBlock(int c) noexcept {
  if (c < kSubSteps) return static_cast<size_t>(c + 1) * kAlign;
  const int j = c - kSubSteps, e = j / kSubSteps + 8;
  return static_cast<size_t>(j % kSubSteps + 5) << (e - 2);
}

MemoryAccount::~MemoryAccount() { trimCache(); }

void* MemoryAccount::systemAcquire(size_t block) noexcept {
  return source_ ? source_->acquire(block) : systemAllocate(block);
}

void MemoryAccount::systemGiveBack(void* block) noexcept {
  if (source_) source_->giveBack(block);
  else systemFree(block);
}

void* MemoryAccount::allocate(size_t bytes, DType dtype) {
  const size_t limit = liveLimit(), live_now = live_bytes_.load(std::memory_order_relaxed);
  if (bytes > 0 && bytes > limit - std::min(limit, live_now))
    fail(ErrorCode::OutOfMemory, "could not allocate " + std::to_string(bytes) + " bytes: " +
                                     std::to_string(live_now) + " are live, the limit is " + std::to_string(limit));
  if (source_ && bytes > 0) source_->requireUsable();
  allocations_.fetch_add(1, std::memory_order_relaxed);
  void* p = nullptr;
  const size_t block = blockSize(bytes);
  if (bytes > 0) {
    if (bytes > kMaxBytes)
      fail(ErrorCode::OutOfMemory, "could not allocate " + std::to_string(bytes) + " bytes");
    {
      std::lock_guard lock(cache_mutex_);
      const int c = classOf(block);
      used_[c] = ++tick_;
      std::vector<void*>& list = free_[c];
      if (!list.empty()) {
        p = list.back();
        list.pop_back();
        cached_bytes_.fetch_sub(block, std::memory_order_relaxed);
        cache_hits_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (p == nullptr) {
      p = systemAcquire(block);
      if (p == nullptr) {  // cached buffers of other classes may be what stands in the way
        trimCache();
        p = systemAcquire(block);
      }
      if (p == nullptr)
        fail(ErrorCode::OutOfMemory, "could not allocate " + std::to_string(bytes) + " bytes");
      system_allocations_.fetch_add(1, std::memory_order_relaxed);
    }
    live_buffers_.fetch_add(1, std::memory_order_relaxed);
  }
  live_by_dtype_[static_cast<size_t>(dtype)].fetch_add(bytes, std::memory_order_relaxed);
  const size_t blocks = live_blocks_.fetch_add(block, std::memory_order_relaxed) + block;
  size_t high = high_water_blocks_.load(std::memory_order_relaxed);
  while (blocks > high && !high_water_blocks_.compare_exchange_weak(high, blocks, std::memory_order_relaxed)) {
  }
  const size_t live = live_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  size_t peak = peak_bytes_.load(std::memory_order_relaxed);
  while (live > peak && !peak_bytes_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return p;
}

void MemoryAccount::release(void* ptr, size_t bytes, DType dtype) noexcept {
  live_by_dtype_[static_cast<size_t>(dtype)].fetch_sub(bytes, std::memory_order_relaxed);
  live_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  const size_t block = blockSize(bytes);
  live_blocks_.fetch_sub(block, std::memory_order_relaxed);
  if (ptr == nullptr) return;
  live_buffers_.fetch_sub(1, std::memory_order_relaxed);
  std::vector<void*> evicted;
  bool cached_it = false;
  {
    std::lock_guard lock(cache_mutex_);
    const size_t limit = cacheLimit();
    const size_t room = limit > 0 && cache_to_high_water_.load(std::memory_order_relaxed)  // Note [Cache to the high-water mark]
                            ? std::max(limit, high_water_blocks_.load(std::memory_order_relaxed))
                            : limit;
    const int c = classOf(block);
    used_[c] = ++tick_;
    if (block <= room) {
      try {
        if (makeRoom(block, room, c, evicted)) {
          free_[c].push_back(ptr);
          cached_bytes_.fetch_add(block, std::memory_order_relaxed);
          cached_it = true;
        }
      } catch (...) {  // no room to remember it: give it back instead
      }
    }
  }
  for (void* p : evicted) systemGiveBack(p);
  if (!cached_it) systemGiveBack(ptr);
}

// Note [Evict the least recently used class]: a cache full of classes that nothing asks for any
// more (a disposed model's, a finished phase's) would make every step after it give its own
// buffers back and make them again. So a buffer that finds the cache full takes the place of
// buffers of the class used longest ago; a loop's own classes are each used every step, so only
// classes older than all of them go.
bool MemoryAccount::makeRoom(size_t block, size_t room, int keep, std::vector<void*>& evicted) {
  const size_t cached = cached_bytes_.load(std::memory_order_relaxed);
  if (cached + block <= room) return true;
  const size_t own = free_[keep].size() * classBlock(keep);
  if (own + block > room) return false;  // not even with every other class gone
  // Which blocks go, oldest class first: counted before anything moves, so that a failed reserve
  // leaves the cache as it was.
  std::vector<std::pair<int, size_t>> take;  // class, blocks
  size_t left = cached, count = 0;
  std::vector<int> order;
  for (int c = 0; c < kClasses; ++c)
    if (c != keep && !free_[c].empty()) order.push_back(c);
  std::sort(order.begin(), order.end(), [&](int x, int y) { return used_[x] < used_[y]; });
  for (size_t i = 0; i < order.size() && left + block > room; ++i) {
    const int c = order[i];
    const size_t each = classBlock(c), need = (left + block - room + each - 1) / each;
    const size_t n = std::min(need, free_[c].size());
    take.emplace_back(c, n);
    left -= n * each;
    count += n;
  }
  evicted.reserve(count);
  for (const auto& [c, n] : take)
    for (size_t i = 0; i < n; ++i) {
      evicted.push_back(free_[c].back());
      free_[c].pop_back();
    }
  cached_bytes_.store(left, std::memory_order_relaxed);
  return true;
}

void MemoryAccount::trimCache() noexcept {
  std::array<std::vector<void*>, kClasses> lists;
  {
    std::lock_guard lock(cache_mutex_);
    lists.swap(free_);
    cached_bytes_.store(0, std::memory_order_relaxed);
  }
  for (const auto& list : lists)
    for (void* p : list) systemGiveBack(p);
}

void MemoryAccount::setCacheLimit(size_t bytes) noexcept {
  cache_limit_.store(bytes, std::memory_order_relaxed);
  if (cached_bytes_.load(std::memory_order_relaxed) > bytes) trimCache();
}

void MemoryAccount::detach() noexcept {
  cache_to_high_water_.store(false, std::memory_order_relaxed);
  setCacheLimit(0);
}

MemoryStats MemoryAccount::stats() const noexcept {
  MemoryStats s{live_bytes_.load(),         peak_bytes_.load(), live_tensors_.load(),
                allocations_.load(),        system_allocations_.load(),
                cache_hits_.load(),         cached_bytes_.load(), live_buffers_.load()};
  for (size_t d = 0; d < kDTypeCount; ++d) s.bytes_by_dtype[d] = live_by_dtype_[d].load();
  return s;
}

void MemoryAccount::resetPeak() noexcept { peak_bytes_.store(live_bytes_.load()); }

Storage::Storage(std::shared_ptr<MemoryAccount> account, size_t bytes, DType dtype)
    : account_(std::move(account)),
      data_(static_cast<std::byte*>(account_->allocate(bytes, dtype))),
      bytes_(bytes),
      dtype_(dtype) {}

Storage::~Storage() { account_->release(data_, bytes_, dtype_); }

void Storage::failHostRead() const {
  fail(ErrorCode::DeviceMismatch, "a " + std::string(name(device())) + " buffer of " + std::to_string(bytes_) +
                                      " bytes read as host memory: ops take tensors of one device (move them "
                                      "with to()), and a device tensor's values are read with `await t.data()`");
}

}  // namespace fucina
