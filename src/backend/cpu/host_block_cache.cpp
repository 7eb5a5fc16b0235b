// HostBlockCache: see host_block_cache.h (Note [Host block cache]).
#include "backend/cpu/host_block_cache.h"

#include <sys/mman.h>

#include <cstdlib>
#include <limits>
#include <new>

#include "tilejit/runtime/workspace_pool.h"

namespace tilejit::cpu {

HostBlockCache::~HostBlockCache() { empty(); }

HostBlockCache& HostBlockCache::global() {
  // Never destroyed: an output may die during exit, after the statics.
  static HostBlockCache* cache = new HostBlockCache(limit_from_env());
  return *cache;
}

size_t HostBlockCache::limit_from_env() {
  constexpr const char* kSetting = "TILEJIT_HOST_CACHE_LIMIT";
  const char* env = std::getenv(kSetting);
  return env ? runtime::parse_byte_size(env, kSetting) : kDefaultLimit;
}

size_t HostBlockCache::size_class(size_t bytes) noexcept {
  // 8 classes per power of two: steps of 2^(k-3) between 2^k and 2^(k+1).
  // kMinBytes is 2^17, so a step is at least 16 KiB: whole pages.
  const int k = std::numeric_limits<size_t>::digits - 1 - __builtin_clzl(bytes | 1);
  const size_t step = size_t{1} << (k >= 3 ? k - 3 : 0);
  if (bytes > std::numeric_limits<size_t>::max() - (step - 1)) return 0;
  return (bytes + step - 1) / step * step;
}

void* HostBlockCache::allocate(size_t size) noexcept {
  // Note [Host block cache]: huge pages for a large block, as numpy asks for
  // its arrays' (the advice is only that: a kernel that has none still
  // hands out the memory).
  const bool huge = size >= kHugeFrom;
  void* ptr = nullptr;
  if (posix_memalign(&ptr, huge ? kHugePage : kAlignment, size) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  if (huge) ::madvise(ptr, size, MADV_HUGEPAGE);
#endif
  return ptr;
}

HostBlockCache::Block* HostBlockCache::take(size_t bytes) noexcept {
  const size_t size = size_class(bytes < kMinBytes ? kMinBytes : bytes);
  if (size == 0) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buckets_.find(size);
    if (it != buckets_.end() && !it->second.empty()) {
      Block* b = it->second.back();  // the most recently returned
      it->second.pop_back();
      unlink_locked(b);
      stats_.bytes_cached -= b->size;
      --stats_.blocks_cached;
      ++stats_.hits;
      return b;
    }
  }
  auto* block = new (std::nothrow) Block;
  if (block == nullptr) return nullptr;
  block->size = size;
  block->ptr = allocate(size);
  if (block->ptr == nullptr && empty() > 0) block->ptr = allocate(size);
  if (block->ptr == nullptr) {
    delete block;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.misses;
  return block;
}

void HostBlockCache::give_back(Block* block) noexcept {
  if (block == nullptr) return;
  Block* victims = nullptr;
  bool kept = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (block->size <= limit_) {
      victims = evict_locked(block->size);
      try {
        buckets_[block->size].push_back(block);
        kept = true;
      } catch (...) {  // no memory for the bucket: the block goes instead
      }
    }
    if (kept) {
      block->older = newest_;
      block->newer = nullptr;
      (newest_ ? newest_->newer : oldest_) = block;
      newest_ = block;
      stats_.bytes_cached += block->size;
      ++stats_.blocks_cached;
      ++stats_.returns;
    } else {
      ++stats_.frees;
    }
  }
  if (!kept) {
    block->older = victims;
    victims = block;
  }
  release(victims);
}

void HostBlockCache::unlink_locked(Block* b) noexcept {
  (b->older ? b->older->newer : oldest_) = b->newer;
  (b->newer ? b->newer->older : newest_) = b->older;
  b->older = b->newer = nullptr;
}

HostBlockCache::Block* HostBlockCache::evict_locked(size_t bytes) noexcept {
  Block* chain = nullptr;
  while (oldest_ != nullptr && stats_.bytes_cached + bytes > limit_) {
    Block* b = oldest_;
    std::vector<Block*>& bucket = buckets_[b->size];
    bucket.erase(bucket.begin());  // the bucket's oldest (the invariants)
    unlink_locked(b);
    stats_.bytes_cached -= b->size;
    --stats_.blocks_cached;
    ++stats_.frees;
    b->older = chain;
    chain = b;
  }
  return chain;
}

void HostBlockCache::release(Block* chain) noexcept {
  while (chain != nullptr) {
    Block* next = chain->older;
    std::free(chain->ptr);
    delete chain;
    chain = next;
  }
}

size_t HostBlockCache::empty() noexcept {
  Block* chain = nullptr;
  size_t freed = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    freed = stats_.bytes_cached;
    const size_t limit = limit_;
    limit_ = 0;
    chain = evict_locked(0);
    limit_ = limit;
  }
  release(chain);
  return freed;
}

void HostBlockCache::set_limit(size_t bytes) noexcept {
  Block* chain = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = bytes;
    chain = evict_locked(0);
  }
  release(chain);
}

size_t HostBlockCache::limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_;
}

HostCacheStats HostBlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  HostCacheStats s = stats_;
  s.limit = limit_;
  return s;
}

}  // namespace tilejit::cpu
