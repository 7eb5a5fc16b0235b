// HostBlockCache: the large host blocks that CPU outputs were made in, kept
// when their tensors die so that the next output of a like size takes one
// whose pages are already there.
//
// Note [Host block cache]
// A fresh large block costs more than a kernel that fills it: glibc maps it
// with mmap (a request past its threshold), every page faults on first touch
// and is zeroed by the OS, and free() unmaps it again, so a call that makes
// a 64 MiB output pays 16384 page faults, several times what numpy's reused
// heap costs, and often more than the kernel (a 5 ms kernel took 40 ms a
// call when timed through its outputs). So a freed block of at least
// kMinBytes is not freed but kept, under its size class: sizes are rounded
// up to 8 classes per power of two, so a block serves any request in its
// class, at most 1/8 more than asked for. A request takes the most recently
// returned block of its class. The cached bytes are capped (the limit:
// TILEJIT_HOST_CACHE_LIMIT, default 1G; 0 keeps nothing); a block that
// would exceed it first frees the least recently returned ones, and one
// larger than the whole limit is freed at once. Smaller outputs never come
// here: malloc reuses those itself. A new block of kHugeFrom bytes or more
// is aligned to 2 MiB and advised to use transparent huge pages
// (madvise(MADV_HUGEPAGE)), as numpy does for its large arrays: a kernel
// that streams through it then misses the TLB 512 times less often (a
// 32 MiB output read back through 4 KiB pages cost 20-30% more than
// through numpy's).
//
// Invariants:
//  - a block is either out (owned by its taker) or cached: in exactly one
//    bucket (that of its size) and in the recency list;
//  - stats.bytes_cached is the sum of the cached blocks' sizes and never
//    exceeds the limit;
//  - within a bucket blocks are in the order they were returned, as in the
//    recency list, so a bucket's oldest is its front.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "tilejit/backend/cpu.h"

namespace tilejit::cpu {

class HostBlockCache {
 public:
  /// Requests below this many bytes are not cached (malloc keeps them).
  static constexpr size_t kMinBytes = size_t{128} << 10;
  /// The alignment of every block (runtime::Allocator's promise).
  static constexpr size_t kAlignment = 256;
  /// The limit when TILEJIT_HOST_CACHE_LIMIT is not set.
  static constexpr size_t kDefaultLimit = size_t{1} << 30;
  /// Blocks from this size on are aligned to kHugePage and advised to use
  /// transparent huge pages (Note [Host block cache]).
  static constexpr size_t kHugeFrom = size_t{4} << 20;
  static constexpr size_t kHugePage = size_t{2} << 20;

  struct Block {
    void* ptr = nullptr;
    size_t size = 0;  // the size class, >= what was asked for
    Block* older = nullptr;  // the recency list, while cached
    Block* newer = nullptr;
  };

  explicit HostBlockCache(size_t limit) : limit_(limit) {}
  /// Frees the cached blocks; blocks still out are the takers' to give back
  /// (the global cache is never destroyed, so outputs may outlive anything).
  ~HostBlockCache();
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  /// The cache CPU outputs come from, made on first use with the limit
  /// limit_from_env() gives (its ValueError, then and at every later use,
  /// until the setting parses); never destroyed.
  static HostBlockCache& global();
  /// TILEJIT_HOST_CACHE_LIMIT (bytes, with an optional K/M/G suffix), or
  /// kDefaultLimit when it is not set. Throws ValueError naming the setting
  /// when it does not parse.
  static size_t limit_from_env();

  /// The size class of a request of `bytes` >= kMinBytes (Note [Host block
  /// cache]): a multiple of the page size; 0 when it would overflow.
  static size_t size_class(size_t bytes) noexcept;

  /// A block of at least `bytes` (>= kMinBytes): a cached one of its class,
  /// else a new one. nullptr when the host is out of memory, after freeing
  /// the cached blocks and trying once more.
  Block* take(size_t bytes) noexcept;
  /// Returns a block from take(): cached, or freed (Note [Host block cache]).
  void give_back(Block* block) noexcept;

  /// Frees every cached block; returns the bytes freed.
  size_t empty() noexcept;
  /// Sets the limit and frees the oldest blocks down to it.
  void set_limit(size_t bytes) noexcept;
  size_t limit() const;
  HostCacheStats stats() const;

 private:
  static void* allocate(size_t size) noexcept;
  void unlink_locked(Block* b) noexcept;
  // Detaches the oldest blocks until `bytes` more fit under the limit;
  // returns them chained through `older`, for freeing outside the lock.
  Block* evict_locked(size_t bytes) noexcept;
  static void release(Block* chain) noexcept;

  mutable std::mutex mutex_;
  size_t limit_;
  std::map<size_t, std::vector<Block*>> buckets_;  // by size class
  Block* oldest_ = nullptr;
  Block* newest_ = nullptr;
  HostCacheStats stats_;
};

}  // namespace tilejit::cpu
