/// @file
/// Storage: one refcounted, 64-byte aligned buffer made through an ExecContext's MemoryAccount.
/// Views share it (shared_ptr); the account sees every byte that is live.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "fucina/core/device.h"
#include "fucina/core/dtype.h"

namespace fucina {

inline constexpr size_t kDTypeCount = 8;  ///< entries of DType, for per-dtype tables
static_assert(static_cast<size_t>(DType::q8_0) + 1 == kDTypeCount, "a new DType needs a table entry");

struct MemoryStats {
  size_t live_bytes = 0;          ///< bytes of tensor storage alive now (values, gradients, saved views)
  size_t peak_bytes = 0;          ///< highest live_bytes since creation or the last resetPeak()
  size_t live_tensors = 0;        ///< Tensor handles alive and not disposed
  size_t allocations = 0;         ///< buffers handed out so far (system allocations + cache hits)
  size_t system_allocations = 0;  ///< buffers that had to be allocated from the system
  size_t cache_hits = 0;          ///< buffers served from the cache of freed buffers
  size_t cached_bytes = 0;        ///< bytes held in the cache, free for reuse
  size_t live_buffers = 0;        ///< buffers handed out and not yet released (empty ones excluded)
  /// live_bytes split by the dtype of the buffer, indexed by static_cast<size_t>(DType); they sum
  /// to live_bytes. Scratch buffers count under their element type (float: f32, double: f64,
  /// int32_t: i32, int64_t: i64, anything else: u8).
  std::array<size_t, kDTypeCount> bytes_by_dtype{};
};

/// Note [Caching allocator]: a freed buffer goes back to a free list of its size class and the
/// next request of that class takes it, so once a training step has run a few times its
/// buffers recirculate and it makes no system allocations. Classes are powers of two split in
/// four sub-steps (waste below 25%; see docs/design-notes.md). The cache holds up to
/// cacheLimit() bytes, and beyond that (unless setCacheToHighWater(false)) up to the most that was
/// ever live at once (Note [Cache to the high-water mark]). A freed buffer past both evicts cached
/// buffers of the classes used longest ago (Note [Evict the least recently used class], storage.cpp),
/// or goes back to the system when its own class fills the room. A limit of 0 caches nothing.
///
/// Note [Cache to the high-water mark]: a fixed cap alone made a step that frees more than the cap
/// (W3 at d_model 512 × 8 blocks frees 1.3 GiB a step) go back to the system for 80 buffers a step,
/// every one paid again in page faults and zeroing: 125-133 GFLOP/s where 4 blocks run at 175-181.
/// Caching up to the high-water mark of live blocks keeps such a step's buffers recirculating, and
/// holds no more than the program itself once held live. (Bounding live + cached by the mark
/// instead left 6 system allocations a step there: buffers of classes a step frees before its
/// peak and reuses after it push live + cached over the mark.)
///
/// Note [Device buffers]: a device's MemoryAccount hands out the device's buffers through the same
/// size classes and cache as host memory, so a training step on the device recirculates its
/// buffers and, in steady state, creates none. Its blocks are tokens (the webgpu backend's buffer
/// ids), never host addresses: Storage::data() refuses them, so a cpu kernel handed a device
/// tensor reports DeviceMismatch instead of reading memory that is not there.
///
/// Where an account's blocks come from: host memory (the default), or a device's buffers, whose
/// blocks are opaque non-null tokens that only that device's backend reads.
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  /// A new block of `bytes` (a size class), or null when there is no room.
  virtual void* acquire(size_t bytes) noexcept = 0;
  virtual void giveBack(void* block) noexcept = 0;
  /// Throws when blocks cannot be had at all (a device lost or gone), before any is asked for.
  virtual void requireUsable() const {}
};

/// Accounting and cache of one context's buffers. Shared by every Storage it made, so a buffer
/// that outlives its context still has somewhere to report its release: once the context is
/// gone (detach()) buffers go straight back to the system.
class MemoryAccount {
 public:
  static constexpr size_t kAlign = 64;  ///< a cache line; enough for any SIMD load
  static constexpr size_t kDefaultCacheLimit = size_t{1} << 30;

  /// The account of one device's buffers: host memory when source is null, else source's blocks.
  explicit MemoryAccount(Device device = Device::cpu, std::shared_ptr<BlockSource> source = nullptr)
      : device_(device), source_(std::move(source)) {}
  ~MemoryAccount();
  MemoryAccount(const MemoryAccount&) = delete;
  MemoryAccount& operator=(const MemoryAccount&) = delete;

  /// Throws OutOfMemory; null for zero bytes. dtype only labels the bytes (MemoryStats::bytes_by_dtype).
  void* allocate(size_t bytes, DType dtype = DType::u8);
  void release(void* ptr, size_t bytes, DType dtype = DType::u8) noexcept;
  void tensorCreated() noexcept { live_tensors_.fetch_add(1, std::memory_order_relaxed); }
  void tensorReleased() noexcept { live_tensors_.fetch_sub(1, std::memory_order_relaxed); }
  MemoryStats stats() const noexcept;
  void resetPeak() noexcept;

  /// Returns every cached buffer to the system.
  void trimCache() noexcept;
  /// Caps the cached bytes (trimming now if the cache holds more).
  void setCacheLimit(size_t bytes) noexcept;
  size_t cacheLimit() const noexcept { return cache_limit_.load(std::memory_order_relaxed); }
  /// Whether the cache may hold more than cacheLimit() up to the high-water mark (the default).
  void setCacheToHighWater(bool on) noexcept { cache_to_high_water_.store(on, std::memory_order_relaxed); }
  /// Caps the live bytes: a request that would take them past `bytes` is OutOfMemory, a budget for
  /// untrusted inputs (the fuzzers set one, so a hostile shape fails instead of exhausting memory).
  void setLiveLimit(size_t bytes) noexcept { live_limit_.store(bytes, std::memory_order_relaxed); }
  size_t liveLimit() const noexcept { return live_limit_.load(std::memory_order_relaxed); }
  /// The owning context is gone: empty the cache and stop caching.
  void detach() noexcept;

  Device device() const noexcept { return device_; }

  /// The size of the block that serves a request of `bytes` (its size class), 0 for 0 bytes.
  static size_t blockSize(size_t bytes) noexcept;

 private:
  static constexpr int kSubSteps = 4;   // classes per power of two
  static constexpr int kClasses = 64 * kSubSteps;
  static int classOf(size_t block) noexcept;

  static size_t classBlock(int c) noexcept;  // the block size of class c
  // Gives up cached blocks of the classes used longest ago, other than keep, until block fits
  // within room; false (nothing given up) when it cannot. Under cache_mutex_; may throw bad_alloc.
  bool makeRoom(size_t block, size_t room, int keep, std::vector<void*>& evicted);

  void* systemAcquire(size_t block) noexcept;
  void systemGiveBack(void* block) noexcept;

  Device device_;
  std::shared_ptr<BlockSource> source_;

  std::atomic<size_t> live_buffers_{0};
  std::atomic<size_t> live_bytes_{0}, peak_bytes_{0}, live_tensors_{0}, allocations_{0};
  std::atomic<size_t> system_allocations_{0}, cache_hits_{0}, cached_bytes_{0};
  std::atomic<size_t> cache_limit_{kDefaultCacheLimit};
  std::atomic<size_t> live_blocks_{0}, high_water_blocks_{0};  // block bytes of live buffers, and their most
  std::atomic<bool> cache_to_high_water_{true};
  std::atomic<size_t> live_limit_{SIZE_MAX};
  std::array<std::atomic<size_t>, kDTypeCount> live_by_dtype_{};
  std::mutex cache_mutex_;
  std::array<std::vector<void*>, kClasses> free_;  // per size class, under cache_mutex_
  std::array<uint64_t, kClasses> used_{};          // when each class was last asked for or freed (tick_)
  uint64_t tick_ = 0;                              // under cache_mutex_
};

class Storage {
 public:
  /// dtype is what the bytes hold, for the per-dtype accounting.
  Storage(std::shared_ptr<MemoryAccount> account, size_t bytes, DType dtype);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// The host bytes; on a device, DeviceMismatch (Note [Device buffers]).
  std::byte* data() const {
    if (device() != Device::cpu) failHostRead();
    return data_;
  }
  /// The block as its account's source handed it out: host bytes, or a device's buffer token.
  void* block() const { return data_; }
  size_t bytes() const { return bytes_; }
  DType dtype() const { return dtype_; }
  Device device() const { return account_->device(); }

 private:
  [[noreturn]] void failHostRead() const;
  std::shared_ptr<MemoryAccount> account_;
  std::byte* data_;
  size_t bytes_;
  DType dtype_;
};

/// The dtype a Scratch<T> is accounted under.
template <class T>
constexpr DType scratchDType() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  else return DType::u8;
}

/// A typed temporary array for a kernel (or saved for its VJP), drawn from the context's cache
/// like tensor storage so that per-step scratch recirculates too, and accounted as live while
/// it exists. Copies share the buffer.
template <class T>
class Scratch {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  Scratch(const std::shared_ptr<MemoryAccount>& account, size_t n)
      : storage_(std::make_shared<Storage>(account, n * sizeof(T), scratchDType<T>())), size_(n) {}
  Scratch(const std::shared_ptr<MemoryAccount>& account, size_t n, T init) : Scratch(account, n) {
    std::fill(begin(), end(), init);
  }
  T* data() const { return reinterpret_cast<T*>(storage_->data()); }
  size_t size() const { return size_; }
  T& operator[](size_t i) const { return data()[i]; }
  T* begin() const { return data(); }
  T* end() const { return data() + size_; }

 private:
  std::shared_ptr<Storage> storage_;
  size_t size_;
};

}  // namespace fucina
