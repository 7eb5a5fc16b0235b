// The CPU backend's public knobs. The backend itself registers as target
// "cpu" from a static initializer and is reached through
// runtime::get_backend("cpu"); nothing here is needed to use it.
//
// A CPU launch runs the blocks of the grid on a persistent pool of worker
// threads plus the calling thread. A block runs on one thread; which thread
// runs which block is unspecified, and blocks of one launch may run in any
// order and concurrently.
//
// A CPU output of 128 KiB or more is made in a block of the host block
// cache, and its block goes back there when the tensor dies, so that calls
// that make outputs of like sizes reuse memory whose pages are already
// there (Note [Host block cache] in src/backend/cpu/host_block_cache.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tilejit::cpu {

/// Sets how many threads run the blocks of a launch, counting the calling
/// thread: 1 runs every launch inline on the caller, n > 1 keeps n - 1
/// workers. Takes effect for launches that start after it returns; launches
/// already running finish on the old workers. Throws ValueError for n < 1 and
/// when called from inside a launch (a kernel body).
void set_num_threads(int n);

/// The current thread count: the last set_num_threads(), else the
/// TILEJIT_NUM_THREADS environment variable (read once), else
/// std::thread::hardware_concurrency(). Throws ValueError when
/// TILEJIT_NUM_THREADS is set but is not a positive integer.
int num_threads();

/// The host block cache's counters; monotonic except the gauges.
struct HostCacheStats {
  uint64_t hits = 0;           // outputs made in a cached block
  uint64_t misses = 0;         // ... in a new block
  uint64_t returns = 0;        // blocks of dead outputs kept
  uint64_t frees = 0;          // blocks freed: past the limit, or emptied
  uint64_t bytes_cached = 0;   // gauge: bytes in kept blocks
  uint64_t blocks_cached = 0;  // gauge: kept blocks
  uint64_t limit = 0;          // the cap on bytes_cached
};

/// The counters. Throws ValueError, as every call that makes a CPU output
/// does, while TILEJIT_HOST_CACHE_LIMIT is set and is not a byte size
/// ("512M"; parse_byte_size in tilejit/runtime/workspace_pool.h).
HostCacheStats host_cache_stats();
/// Caps the bytes the cache keeps (0: it keeps nothing, and every output is
/// freed when it dies), freeing the least recently kept blocks down to it.
/// Initially TILEJIT_HOST_CACHE_LIMIT, else 1 GiB.
void set_host_cache_limit(size_t bytes);
size_t host_cache_limit();
/// Frees every kept block; returns the bytes freed.
size_t empty_host_cache();

}  // namespace tilejit::cpu
