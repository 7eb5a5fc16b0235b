// WorkspacePool: see workspace_pool.h and DESIGN.md, "The workspace pool".
#include "tilejit/runtime/workspace_pool.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "tilejit/core/error.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::runtime {
namespace {

constexpr size_t kBlockAlign = 256;
// A free block serves a request of `bytes` only when it is at most
// max(2 * bytes, bytes + kSlack): small requests may take a block somewhat
// larger than twice their size (they are cheap to waste), large requests never
// pin a block more than twice their size.
constexpr size_t kSlack = size_t{1} << 20;
constexpr const char* kLimitSetting = "TILEJIT_WORKSPACE_LIMIT";

// The size of the block for a request: whole multiples of the alignment, so
// that blocks of nearly equal requests are interchangeable.
size_t block_size_for(size_t bytes) {
  TILEJIT_CHECK(bytes <= std::numeric_limits<size_t>::max() - kBlockAlign, kOutOfMemoryError)
      << "workspace pool: cannot allocate " << bytes << " bytes (the size overflows)";
  return (bytes + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
}

size_t max_fit_for(size_t size) {
  size_t doubled = size > std::numeric_limits<size_t>::max() / 2
                       ? std::numeric_limits<size_t>::max()
                       : 2 * size;
  size_t slack = size > std::numeric_limits<size_t>::max() - kSlack
                     ? std::numeric_limits<size_t>::max()
                     : size + kSlack;
  return std::max(doubled, slack);
}

// Cold: builds the message only on failure (STYLE.md). Says what was asked,
// what the pool holds after giving back its cache, and the setting that caps it.
[[noreturn, gnu::cold, gnu::noinline]] void throw_out_of_memory(
    Device device, const std::string& target, size_t bytes, size_t size, bool over_limit,
    const PoolStats& stats, size_t limit) {
  std::ostringstream msg;
  msg << "workspace pool on " << device.str() << ": ";
  if (over_limit) {
    msg << "cannot allocate " << size << " bytes";
  } else {
    msg << "the " << target << " allocator failed to allocate " << size << " bytes";
  }
  if (size != bytes) {
    msg << " (" << bytes << " asked, rounded up to a multiple of " << kBlockAlign << ")";
  }
  msg << (over_limit ? ": " : "; ") << stats.bytes_reserved << " bytes reserved ("
      << stats.bytes_in_use << " in use), ";
  if (limit) {
    msg << "limit " << limit << " bytes";
  } else {
    msg << "no limit";
  }
  msg << " (set " << kLimitSetting << " or WorkspacePool::set_limit)";
  TILEJIT_THROW(kOutOfMemoryError) << msg.str();
}

}  // namespace

struct WorkspacePool::Block {
  void* ptr = nullptr;
  size_t size = 0;
  uint64_t tag = 0;        // Lease::tag points here
  bool leased = false;
  Stream stream = nullptr;  // the stream of the last release
  Stream lease_stream = nullptr;  // the stream of the current lease
  // Note [Stream-ordered reuse]: `pending` until another stream asks for the
  // block; then `event` is recorded on `stream` (nullptr: nothing pending).
  bool pending = false;
  Event event = nullptr;
  // record_event() failed: nothing tells when the last user is
  // done, so only `stream` (which orders it) may reuse the block, and
  // empty_cache() keeps it.
  bool stream_only = false;
  // Baked into a captured graph (Note [Graph-owned arenas]): released only
  // when the graph is destroyed.
  bool graph_owned = false;
  // While graph_owned: owners left, the lease's holder and the graph; the
  // last one to let go hands the block back.
  std::atomic<int> graph_refs{0};
  WorkspacePool* pool = nullptr;
  Block* next_returned = nullptr;  // link in graph_returned_
};

WorkspacePool::WorkspacePool(Backend& backend, Device device) : backend_(backend), device_(device) {
  if (const char* env = std::getenv(kLimitSetting)) limit_ = parse_byte_size(env, kLimitSetting);
}

WorkspacePool::~WorkspacePool() {
  // Leased blocks too: a lease does not outlive its pool. Pending events are
  // not waited for; the pools that kernels use (get()) are never destroyed.
  Allocator& allocator = backend_.allocator();
  for (auto& block : blocks_) {
    if (block->event) backend_.destroy_event(block->event);
    allocator.deallocate(block->ptr, block->size, device_, block->stream);
  }
}

WorkspacePool& WorkspacePool::get(Backend& backend, Device device) {
  using Key = std::tuple<const Backend*, int32_t, int32_t>;
  // Made on first use and never destroyed, pools included: a Kernel held by
  // some other static object may release a lease during exit, after a
  // function-local map would already be gone. The pools are still reachable
  // from here, so leak checkers do not report them.
  static std::mutex* mutex = new std::mutex;
  static auto* pools = new std::map<Key, WorkspacePool*>;
  Key key{&backend, static_cast<int32_t>(device.type), device.id};
  std::lock_guard<std::mutex> lock(*mutex);
  auto it = pools->find(key);
  if (it != pools->end()) return *it->second;
  auto* pool = new WorkspacePool(backend, device);
  pools->emplace(std::move(key), pool);
  return *pool;
}

WorkspacePool::Block* WorkspacePool::take_free_block_locked(size_t size, Stream stream) {
  const size_t max_fit = max_fit_for(size);
  size_t best_index = free_.size();
  // Newest first: in the steady state of a loop of calls the block released
  // last, at the back, has exactly this size and stream and ends the search.
  for (size_t i = free_.size(); i-- > 0;) {
    Block* b = free_[i];
    if (b->size < size || b->size > max_fit) continue;
    if (best_index != free_.size()) {
      const Block* best = free_[best_index];
      // Only a smaller block, or an equal one on the caller's stream, is better.
      if (b->size > best->size) continue;
      if (b->size == best->size && (best->stream == stream || b->stream != stream)) continue;
    }
    // Note [Stream-ordered reuse]: the releasing stream may reuse at once;
    // any other stream waits until the releasing stream is done with it.
    if (b->stream != stream && !idle_locked(b)) continue;
    best_index = i;
    if (b->size == size && b->stream == stream) break;  // nothing can beat it
  }
  if (best_index == free_.size()) return nullptr;
  Block* block = free_[best_index];
  free_[best_index] = free_.back();
  free_.pop_back();
  // The next release records a fresh event; this one is no longer needed.
  if (block->event) {
    backend_.destroy_event(block->event);
    block->event = nullptr;
  }
  block->stream_only = false;
  block->pending = false;
  return block;
}

bool WorkspacePool::idle_locked(Block* b) {
  if (b->stream_only) return false;
  if (b->pending) {
    // Recorded now, not at release: an event recorded later on the same
    // stream completes no earlier than the block's last use (stream order),
    // and the common case -- reuse on the releasing stream -- then pays no
    // driver call at all.
    b->pending = false;
    try {
      b->event = backend_.record_event(device_, b->stream);
    } catch (...) {
      b->stream_only = true;  // nothing can tell when its stream is done
      return false;
    }
  }
  if (b->event) {
    if (!backend_.event_completed(b->event)) return false;
    backend_.destroy_event(b->event);
    b->event = nullptr;
  }
  return true;
}

size_t WorkspacePool::free_cached_locked() {
  Allocator& allocator = backend_.allocator();
  size_t freed = 0;
  for (size_t i = 0; i < free_.size();) {
    Block* b = free_[i];
    if (!idle_locked(b)) {
      ++i;
      continue;
    }
    // Idle: nothing is queued on the block, so it is freed unordered (its
    // last stream may be gone by now).
    allocator.deallocate(b->ptr, b->size, device_, nullptr);
    ++stats_.device_frees;
    --stats_.blocks;
    stats_.bytes_reserved -= b->size;
    freed += b->size;
    free_[i] = free_.back();
    free_.pop_back();
    auto it = std::find_if(blocks_.begin(), blocks_.end(),
                           [b](const std::unique_ptr<Block>& p) { return p.get() == b; });
    *it = std::move(blocks_.back());
    blocks_.pop_back();
  }
  return freed;
}

WorkspacePool::Lease WorkspacePool::acquire(size_t bytes, const AllocContext& ctx) {
  const Stream stream = ctx.stream;
  const bool capturing = ctx.capturing;
  TILEJIT_CHECK(bytes > 0, kInternalError)
      << "workspace pool on " << device_.str()
      << ": acquire of 0 bytes (callers skip the pool for empty workspaces)";
  const size_t size = block_size_for(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  drain_graph_returns_locked();
  Block* block = capturing ? nullptr : take_free_block_locked(size, stream);
  if (block) {
    ++stats_.hits;
  } else {
    // Everything that can throw for bookkeeping happens before the device
    // allocation, so that an exception never strands device memory; with the
    // free list reserved to hold every block, release() cannot throw either.
    auto fresh = std::make_unique<Block>();
    blocks_.reserve(blocks_.size() + 1);
    free_.reserve(blocks_.size() + 1);

    Allocator& allocator = backend_.allocator();
    void* ptr = nullptr;
    bool over_limit = false;
    for (int attempt = 0;; ++attempt) {
      over_limit = limit_ != 0 &&
                   (stats_.bytes_reserved > limit_ || size > limit_ - stats_.bytes_reserved);
      if (!over_limit) ptr = allocator.allocate(size, device_, stream);
      if (ptr || attempt == 1) break;
      // Blocks cached for other sizes are what the pool can give back.
      free_cached_locked();
      ++stats_.oom_retries;
    }
    if (!ptr) {
      throw_out_of_memory(device_, backend_.target(), bytes, size, over_limit, stats_, limit_);
    }
    ++stats_.device_allocs;
    ++stats_.misses;
    ++stats_.blocks;
    stats_.bytes_reserved += size;
    stats_.peak_bytes_reserved = std::max(stats_.peak_bytes_reserved, stats_.bytes_reserved);
    fresh->ptr = ptr;
    fresh->size = size;
    fresh->stream = stream;
    fresh->pool = this;
    block = fresh.get();
    blocks_.push_back(std::move(fresh));  // cannot throw: reserved above
  }
  block->leased = true;
  block->lease_stream = stream;
  ++stats_.leases;
  stats_.bytes_in_use += block->size;
  if (capturing) {
    // Note [Graph-owned arenas]: the graph becomes an owner now, while the
    // stream is still capturing, so the holder may let go at any time later.
    block->graph_refs.store(2, std::memory_order_relaxed);
    try {
      block->graph_owned =
          backend_.on_graph_destroyed(device_, stream, &WorkspacePool::graph_destroyed, block);
    } catch (...) {
      block->leased = false;
      stats_.bytes_in_use -= block->size;
      free_.push_back(block);  // never used: free at once
      throw;
    }
    if (block->graph_owned) ++stats_.graph_blocks;  // else the capture ended meanwhile
  }
  return Lease{block->ptr, block->size, &block->tag, block};
}

void WorkspacePool::release(Lease& lease, Stream stream) noexcept {
  if (!lease) return;
  auto* block = static_cast<Block*>(lease.block);
  lease = Lease{};
  if (block->graph_owned) {
    graph_destroyed(block);  // the holder lets go; the graph may still own it
    return;
  }
  // Note [Stream-ordered reuse]: an explicit stream may be destroyed by its
  // owner once the call returns, so its event is recorded now, while the
  // handle is valid; the legacy default stream (nullptr) lives as long as
  // the context, so its event waits until another stream asks.
  Event event = nullptr;
  bool stream_only = false;
  if (stream != nullptr) {
    try {
      event = backend_.record_event(device_, stream);
    } catch (...) {
      stream_only = true;
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (TILEJIT_UNLIKELY(!block->leased)) {
    // A copy of a lease released twice: putting the block in the free list
    // again would let two later leases share it. release() cannot throw, so
    // the second release is dropped.
    lock.unlock();
    if (event) backend_.destroy_event(event);
    return;
  }
  block->leased = false;
  block->stream = stream;
  block->pending = stream == nullptr;
  block->event = event;
  block->stream_only = stream_only;
  stats_.bytes_in_use -= block->size;
  free_.push_back(block);  // capacity >= blocks_.size(): see acquire()
}

void WorkspacePool::release_block(void* block) noexcept {
  auto* b = static_cast<Block*>(block);
  Lease lease{b->ptr, b->size, &b->tag, b};
  b->pool->release(lease, b->lease_stream);
}

void WorkspacePool::graph_destroyed(void* context) noexcept {
  auto* block = static_cast<Block*>(context);
  if (block->graph_refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::atomic<Block*>& head = block->pool->graph_returned_;
  block->next_returned = head.load(std::memory_order_relaxed);
  while (!head.compare_exchange_weak(block->next_returned, block, std::memory_order_release,
                                     std::memory_order_relaxed)) {
  }
}

void WorkspacePool::drain_graph_returns_locked() {
  // A load first: the exchange is a locked instruction, and the list is
  // almost always empty.
  if (graph_returned_.load(std::memory_order_relaxed) == nullptr) return;
  Block* block = graph_returned_.exchange(nullptr, std::memory_order_acquire);
  while (block) {
    Block* next = block->next_returned;
    block->graph_owned = false;
    block->leased = false;
    block->stream = nullptr;
    block->pending = false;  // the graph is gone: no replay can be pending
    block->event = nullptr;
    --stats_.graph_blocks;
    stats_.bytes_in_use -= block->size;
    free_.push_back(block);  // capacity >= blocks_.size(): see acquire()
    block = next;
  }
}

size_t WorkspacePool::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  drain_graph_returns_locked();
  return free_cached_locked();
}

void WorkspacePool::set_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = bytes;
}

size_t WorkspacePool::limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_;
}

PoolStats WorkspacePool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const_cast<WorkspacePool*>(this)->drain_graph_returns_locked();
  return stats_;
}

void WorkspacePool::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_reserved = stats_.bytes_reserved;
}

size_t parse_byte_size(const char* text, const char* setting) {
  std::string_view s = text ? text : "";
  auto fail = [&]() {
    TILEJIT_THROW(kValueError) << setting << ": cannot parse '" << s
                               << "' as a byte size; expected an integer with an optional K, M "
                                  "or G suffix (powers of 1024), e.g. 1048576, 512K, 64M, 2G";
  };
  size_t digits = 0;
  size_t value = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') {
    size_t d = size_t(s[digits] - '0');
    if (value > (std::numeric_limits<size_t>::max() - d) / 10) fail();
    value = value * 10 + d;
    ++digits;
  }
  if (digits == 0 || s.size() - digits > 1) fail();
  int shift = 0;
  if (digits < s.size()) {
    switch (s[digits]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: fail();
    }
  }
  if (value > (std::numeric_limits<size_t>::max() >> shift)) fail();
  return value << shift;
}

}  // namespace tilejit::runtime
