// WorkspacePool: one per (backend, device); hands out one contiguous arena
// per call, stream-ordered, and keeps released arenas for the next call.
//
// Note [Stream-ordered reuse]
// A block released on stream S carries S. The next lease on S may take it at
// once: S executes in order, so the next kernel on S cannot start before the
// last user of the block has finished. A lease on another stream takes it
// only once S is done with it: the first time another stream looks at the
// block, an event is recorded on S (it completes no earlier than the block's
// last use, by stream order), and the block is taken once that event has
// completed (queried lazily, as PyTorch's caching allocator does). On the
// legacy default stream (nullptr) the event is recorded only at that moment,
// which keeps the common case -- reuse on one stream -- free of driver calls;
// an explicit stream may be destroyed by its owner after the call, so its
// event is recorded at release, while the handle is still valid, and an idle
// block is freed without reference to its last stream. The CPU backend is
// synchronous: its events are nullptr and a released block is free for
// everyone at once.
//
// Note [Graph-owned arenas]
// A lease taken while its stream is capturing a CUDA graph is baked into the
// graph: every replay reuses that address. So such a lease always gets a new
// block of its own, with two owners: the lease's holder and the graph (made
// an owner at acquire(), while the stream still captures). The block joins
// the free list when both have let go -- the holder by release(), whenever
// that comes, the graph when the backend reports it destroyed -- so replays
// are correct whatever runs between them, and an output tensor made during
// capture may outlive the capture. The driver reports the destruction on its
// own thread, which must not block: the block is handed back through a
// lock-free list, drained under the mutex.
//
// Invariants:
//  - a block is either leased (in no free list) or free (in exactly one);
//  - bytes_reserved is the sum of the sizes of all blocks, leased or free;
//  - a block is never handed out twice before it is released.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "tilejit/core/device.h"
#include "tilejit/runtime/allocator.h"

namespace tilejit::runtime {

class Backend;

/// Counters, all monotonic except the byte gauges.
struct PoolStats {
  uint64_t leases = 0;          // acquire() calls that returned a block
  uint64_t hits = 0;            // ... satisfied by a cached block
  uint64_t misses = 0;          // ... that allocated a new block
  uint64_t device_allocs = 0;   // successful Allocator::allocate calls
  uint64_t device_frees = 0;    // Allocator::deallocate calls
  uint64_t oom_retries = 0;     // allocations retried after freeing the cache
  uint64_t bytes_reserved = 0;  // gauge: bytes held in blocks, leased or free
  uint64_t bytes_in_use = 0;    // gauge: bytes in leased blocks
  uint64_t peak_bytes_reserved = 0;
  uint64_t blocks = 0;          // gauge: blocks held
  uint64_t graph_blocks = 0;    // gauge: blocks owned by captured graphs (and their holders)
};

class WorkspacePool {
 public:
  /// A leased block. Owned by the caller until release(); move-only.
  struct Lease {
    void* ptr = nullptr;
    size_t bytes = 0;  // the block's size, >= the size asked for
    /// Tag of the last layout that ran in this block (Note [zero_once] in
    /// kernel.cpp): 0 for a new block, or one whose last user zeroed nothing
    /// for anyone. The holder may rewrite it.
    uint64_t* tag = nullptr;
    void* block = nullptr;  // the pool's record
    explicit operator bool() const noexcept { return block != nullptr; }
  };

  WorkspacePool(Backend& backend, Device device);
  ~WorkspacePool();
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;

  /// The pool of `backend` for `device`, made on first use; lives until exit.
  /// Pools are told apart by their Backend, whose reference each holds.
  static WorkspacePool& get(Backend& backend, Device device);

  /// A block of at least `bytes` (> 0) usable on `ctx.stream` (`ctx` is on
  /// this pool's device and says whether its stream is capturing: the pool
  /// does not ask again). On allocation failure or when the limit would be
  /// exceeded, frees the cached free blocks, retries once, then throws
  /// OutOfMemoryError saying what was asked, what is reserved and in use,
  /// and the limit setting.
  Lease acquire(size_t bytes, const AllocContext& ctx);
  /// Gives a block back, ordered after the work already queued on `stream`.
  void release(Lease& lease, Stream stream) noexcept;
  /// Gives back the lease whose Lease::block is `block`, on the stream it
  /// was acquired on: for a holder that keeps one pointer and nothing else
  /// (an output tensor's deleter context).
  static void release_block(void* block) noexcept;

  /// Frees every cached block that is not leased (and whose last stream is
  /// done with it); returns the bytes freed.
  size_t empty_cache();

  /// Caps bytes_reserved (0: no cap). Initially TILEJIT_WORKSPACE_LIMIT
  /// (bytes, with an optional K/M/G suffix) or no cap.
  void set_limit(size_t bytes);
  size_t limit() const;

  PoolStats stats() const;
  void reset_peak();
  Device device() const noexcept { return device_; }

 private:
  struct Block;
  Block* take_free_block_locked(size_t bytes, Stream stream);
  static void graph_destroyed(void* context) noexcept;
  void drain_graph_returns_locked();
  bool idle_locked(Block* block);
  size_t free_cached_locked();

  Backend& backend_;
  Device device_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Block>> blocks_;  // every block held
  std::vector<Block*> free_;                    // free blocks
  size_t limit_ = 0;
  PoolStats stats_;
  // Blocks whose graph was destroyed, pushed without the mutex from the
  // driver's callback thread (which must not block) and taken back into
  // free_ by the next acquire() or stats().
  std::atomic<Block*> graph_returned_{nullptr};
};

/// Releases a lease when it goes out of scope (on every path, exceptions
/// included).
class LeaseGuard {
 public:
  LeaseGuard(WorkspacePool* pool, WorkspacePool::Lease lease, Stream stream) noexcept
      : pool_(pool), lease_(lease), stream_(stream) {}
  ~LeaseGuard() {
    if (pool_ && lease_) pool_->release(lease_, stream_);
  }
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;
  const WorkspacePool::Lease& lease() const noexcept { return lease_; }

 private:
  WorkspacePool* pool_;
  WorkspacePool::Lease lease_;
  Stream stream_;
};

/// Parses "1048576", "512K", "64M", "2G" (powers of 1024). Throws
/// ValueError naming `setting` on anything else.
size_t parse_byte_size(const char* text, const char* setting);

}  // namespace tilejit::runtime
