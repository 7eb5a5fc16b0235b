// HostBlockCache (Note [Host block cache]): size classes, reuse, the limit,
// the least recently returned block going first, threads; and the CPU
// backend's outputs made from it.
#include "backend/cpu/host_block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "tilejit/backend/cpu.h"
#include "tilejit/core/error.h"
#include "tilejit/runtime/allocator.h"

namespace tilejit::cpu {
namespace {

using tilejit::testing::expect_error;
using tilejit::testing::ScopedEnv;

constexpr size_t kMiB = size_t{1} << 20;

TEST(HostBlockCache, SizesRoundUpToEightClassesPerPowerOfTwo) {
  EXPECT_EQ(HostBlockCache::size_class(HostBlockCache::kMinBytes), HostBlockCache::kMinBytes);
  EXPECT_EQ(HostBlockCache::size_class(4 * kMiB), 4 * kMiB);
  EXPECT_EQ(HostBlockCache::size_class(4 * kMiB + 1), 4 * kMiB + kMiB / 2);
  EXPECT_EQ(HostBlockCache::size_class(5 * kMiB - 7), 5 * kMiB);
  EXPECT_EQ(HostBlockCache::size_class(7 * kMiB + kMiB / 2 + 1), 8 * kMiB);
  EXPECT_EQ(HostBlockCache::size_class(SIZE_MAX), 0u);
  // Whole pages, at most 1/8 more than asked.
  for (size_t bytes = HostBlockCache::kMinBytes; bytes < 64 * kMiB; bytes = bytes * 9 / 7 + 13) {
    const size_t c = HostBlockCache::size_class(bytes);
    EXPECT_EQ(c % 4096, 0u) << bytes;
    EXPECT_GE(c, bytes);
    EXPECT_LE(c - bytes, bytes / 8) << bytes;
  }
}

TEST(HostBlockCache, AReturnedBlockServesTheNextRequestOfItsClass) {
  HostBlockCache cache(64 * kMiB);
  HostBlockCache::Block* a = cache.take(4 * kMiB + 100);
  ASSERT_NE(a, nullptr);
  // 4 MiB and more: on a huge page's boundary (Note [Host block cache]).
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->ptr) % HostBlockCache::kHugePage, 0u);
  EXPECT_EQ(a->size, 4 * kMiB + kMiB / 2);
  HostBlockCache other(64 * kMiB);
  HostBlockCache::Block* small = other.take(HostBlockCache::kMinBytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->ptr) % HostBlockCache::kAlignment, 0u);
  other.give_back(small);
  std::memset(a->ptr, 1, a->size);  // every byte is the taker's
  void* const memory = a->ptr;
  cache.give_back(a);
  HostCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.returns, 1u);
  EXPECT_EQ(s.bytes_cached, 4 * kMiB + kMiB / 2);
  EXPECT_EQ(s.blocks_cached, 1u);
  EXPECT_EQ(s.limit, 64 * kMiB);
  // Same class, another size: the same memory. Another class: a new block.
  HostBlockCache::Block* b = cache.take(4 * kMiB + 200);
  EXPECT_EQ(b->ptr, memory);
  HostBlockCache::Block* c = cache.take(4 * kMiB + 100);
  EXPECT_NE(c->ptr, memory);
  HostBlockCache::Block* d = cache.take(8 * kMiB);
  s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.bytes_cached, 0u);
  cache.give_back(b);
  cache.give_back(c);
  cache.give_back(d);
  EXPECT_EQ(cache.stats().blocks_cached, 3u);
  EXPECT_EQ(cache.empty(), 2 * (4 * kMiB + kMiB / 2) + 8 * kMiB);
  s = cache.stats();
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.blocks_cached, 0u);
  EXPECT_EQ(s.frees, 3u);
}

TEST(HostBlockCache, TheLimitFreesTheLeastRecentlyReturnedFirst) {
  HostBlockCache cache(10 * kMiB);
  HostBlockCache::Block* a = cache.take(4 * kMiB);
  HostBlockCache::Block* b = cache.take(4 * kMiB);
  HostBlockCache::Block* c = cache.take(3 * kMiB);
  void* const b_memory = b->ptr;
  cache.give_back(a);
  cache.give_back(b);
  cache.give_back(c);  // 11 MiB > 10: a, the oldest, goes
  HostCacheStats s = cache.stats();
  EXPECT_EQ(s.bytes_cached, 7 * kMiB);
  EXPECT_EQ(s.blocks_cached, 2u);
  EXPECT_EQ(s.frees, 1u);
  HostBlockCache::Block* b_again = cache.take(4 * kMiB);
  EXPECT_EQ(b_again->ptr, b_memory);  // b was kept
  // A block larger than the whole limit is freed at once.
  cache.give_back(cache.take(16 * kMiB));
  s = cache.stats();
  EXPECT_EQ(s.frees, 2u);
  EXPECT_EQ(s.bytes_cached, 3 * kMiB);
  // Lowering the limit frees down to it; 0 keeps nothing.
  cache.set_limit(0);
  EXPECT_EQ(cache.limit(), 0u);
  s = cache.stats();
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.frees, 3u);  // c
  cache.give_back(b_again);
  s = cache.stats();
  EXPECT_EQ(s.blocks_cached, 0u);
  EXPECT_EQ(s.frees, 4u);
  EXPECT_EQ(s.hits, 1u);
}

TEST(HostBlockCache, ARequestNoMemoryCanHoldGetsNull) {
  HostBlockCache cache(64 * kMiB);
  EXPECT_EQ(cache.take(SIZE_MAX - 5), nullptr);  // no size class: it overflows
  EXPECT_EQ(cache.take(size_t{1} << 62), nullptr);
  const HostCacheStats s = cache.stats();
  EXPECT_EQ(s.hits + s.misses, 0u);  // neither: no block was handed out
  EXPECT_EQ(s.blocks_cached, 0u);
}

TEST(HostBlockCache, TheLimitComesFromTheEnvironment) {
  {
    ScopedEnv env("TILEJIT_HOST_CACHE_LIMIT", nullptr);
    EXPECT_EQ(HostBlockCache::limit_from_env(), HostBlockCache::kDefaultLimit);
  }
  {
    ScopedEnv env("TILEJIT_HOST_CACHE_LIMIT", "64M");
    EXPECT_EQ(HostBlockCache::limit_from_env(), 64 * kMiB);
  }
  ScopedEnv env("TILEJIT_HOST_CACHE_LIMIT", "lots");
  expect_error([] { HostBlockCache::limit_from_env(); }, ErrorKind::kValueError,
               "TILEJIT_HOST_CACHE_LIMIT: cannot parse 'lots' as a byte size; expected an "
               "integer with an optional K, M or G suffix (powers of 1024), e.g. 1048576, 512K, "
               "64M, 2G");
}

TEST(HostBlockCache, ThreadsTakeAndGiveBackConcurrently) {
  HostBlockCache cache(32 * kMiB);
  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&cache, t] {
      for (int r = 0; r < kRounds; ++r) {
        HostBlockCache::Block* b = cache.take((1 + (r + t) % 3) * kMiB);
        ASSERT_NE(b, nullptr);
        // A block is nobody else's while out: the pattern stays.
        auto* p = static_cast<unsigned char*>(b->ptr);
        std::memset(p, t, 4096);
        std::this_thread::yield();
        for (int k = 0; k < 4096; k += 512) ASSERT_EQ(p[k], t);
        cache.give_back(b);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const HostCacheStats s = cache.stats();
  EXPECT_EQ(s.hits + s.misses, uint64_t{kThreads * kRounds});
  EXPECT_EQ(s.returns, uint64_t{kThreads * kRounds});
  EXPECT_LE(s.misses, uint64_t{kThreads * 3});  // at most one block per class and thread
  EXPECT_LE(s.bytes_cached, 32 * kMiB);
}

// Outputs: runtime::empty() on the CPU takes large tensors from the global
// cache, and a tensor's death gives its block back.
TEST(HostBlockCache, LargeCpuTensorsReuseTheMemoryOfDeadOnes) {
  const int64_t rows = 1024, cols = 1000;  // 4,096,000 bytes of float32
  empty_host_cache();
  const HostCacheStats before = host_cache_stats();
  void* first = nullptr;
  {
    Tensor t = runtime::empty({rows, cols}, DataType::float32());
    first = t.data();
    EXPECT_EQ(host_cache_stats().misses, before.misses + 1);
  }
  EXPECT_EQ(host_cache_stats().returns, before.returns + 1);
  Tensor again = runtime::empty({rows, cols}, DataType::float32());
  const HostCacheStats after = host_cache_stats();
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.misses, before.misses + 1);
  // Small tensors stay with malloc.
  { Tensor small = runtime::empty({16, 16}, DataType::float32()); }
  const HostCacheStats small = host_cache_stats();
  EXPECT_EQ(small.hits + small.misses, after.hits + after.misses);
  EXPECT_EQ(small.returns, after.returns);
}

TEST(HostBlockCache, TheGlobalLimitIsSetAndTheCacheEmptied) {
  const size_t old = host_cache_limit();
  { Tensor t = runtime::empty({1 << 20}, DataType::float32()); }
  EXPECT_GE(host_cache_stats().bytes_cached, size_t{4} << 20);
  EXPECT_GE(empty_host_cache(), size_t{4} << 20);
  EXPECT_EQ(host_cache_stats().bytes_cached, 0u);
  set_host_cache_limit(0);
  EXPECT_EQ(host_cache_limit(), 0u);
  const HostCacheStats before = host_cache_stats();
  { Tensor t = runtime::empty({1 << 20}, DataType::float32()); }
  EXPECT_EQ(host_cache_stats().bytes_cached, 0u);
  EXPECT_EQ(host_cache_stats().frees, before.frees + 1);
  set_host_cache_limit(old);
}

}  // namespace
}  // namespace tilejit::cpu
