#include "tilejit/runtime/workspace_pool.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "runtime/fake_backend.h"
#include "tilejit/core/error.h"

namespace tilejit::runtime {
namespace {

using testing::expect_error;
using testing::FakeBackend;

constexpr size_t kMiB = size_t{1} << 20;
const Stream kStreamA = reinterpret_cast<Stream>(0x1000);
const Stream kStreamB = reinterpret_cast<Stream>(0x2000);

class WorkspacePoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = std::make_unique<WorkspacePool>(backend_, Device::cpu());
    pool_->set_limit(0);  // whatever TILEJIT_WORKSPACE_LIMIT the runner has
  }
  void TearDown() override {
    // Every block the pool made is freed exactly once, every event taken is
    // destroyed exactly once.
    pool_.reset();
    EXPECT_EQ(backend_.fake_allocator().live_blocks(), 0u);
    EXPECT_EQ(backend_.fake_allocator().bad_frees(), 0);
    EXPECT_EQ(backend_.live_events(), 0u);
    EXPECT_EQ(backend_.bad_event_destroys.load(), 0);
  }
  WorkspacePool& pool() { return *pool_; }
  // The AllocContext a call on `stream` computes: it asks the backend
  // whether the stream is capturing, once.
  AllocContext on(Stream stream) {
    return AllocContext{pool().device(), stream, backend_.is_capturing(pool().device(), stream)};
  }

  FakeBackend backend_;
  std::unique_ptr<WorkspacePool> pool_;
};

TEST_F(WorkspacePoolTest, SteadyStateReusesOneBlock) {
  for (int i = 0; i < 1000; ++i) {
    auto lease = pool().acquire(4096, on(nullptr));
    ASSERT_TRUE(lease);
    pool().release(lease, nullptr);
    EXPECT_FALSE(lease);  // release() clears the caller's lease
  }
  PoolStats s = pool().stats();
  EXPECT_EQ(s.leases, 1000u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 999u);
  EXPECT_EQ(s.device_allocs, 1u);
  EXPECT_EQ(s.device_frees, 0u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.bytes_reserved, 4096u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.peak_bytes_reserved, 4096u);
  EXPECT_EQ(backend_.fake_allocator().calls(), 1);
}

// Note [Graph-owned arenas]: a lease taken during capture gets its own block,
// which stays in use after release until the graph is destroyed.
TEST_F(WorkspacePoolTest, CapturedLeasesBelongToTheGraph) {
  auto warm = pool().acquire(4096, on(kStreamA));
  pool().release(warm, kStreamA);  // a cached block a capture must not take
  backend_.capturing_stream = kStreamA;
  auto first = pool().acquire(4096, on(kStreamA));
  const void* first_ptr = first.ptr;
  pool().release(first, kStreamA);
  auto second = pool().acquire(4096, on(kStreamA));
  EXPECT_NE(second.ptr, first_ptr);  // never shares with another captured launch
  pool().release(second, kStreamA);
  PoolStats s = pool().stats();
  EXPECT_EQ(s.graph_blocks, 2u);
  EXPECT_EQ(s.blocks, 3u);
  EXPECT_EQ(s.bytes_in_use, 8192u);  // held by the graph
  EXPECT_EQ(pool().empty_cache(), 4096u);  // only the uncaptured block is freed
  backend_.destroy_graph();
  s = pool().stats();
  EXPECT_EQ(s.graph_blocks, 0u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  auto after = pool().acquire(4096, on(kStreamB));  // graph blocks are free again
  EXPECT_EQ(pool().stats().hits, 1u);
  pool().release(after, kStreamB);
}

// A block leased during capture and held past the graph (an output tensor
// made during capture) goes back when its holder lets go.
TEST_F(WorkspacePoolTest, CapturedLeaseOutlivingItsGraph) {
  backend_.capturing_stream = kStreamA;
  auto held = pool().acquire(4096, on(kStreamA));
  backend_.destroy_graph();  // the graph goes first
  EXPECT_EQ(pool().stats().graph_blocks, 1u);
  EXPECT_EQ(pool().stats().bytes_in_use, 4096u);
  pool().release(held, kStreamA);  // capture over: the holder was the last owner
  EXPECT_EQ(pool().stats().graph_blocks, 0u);
  EXPECT_EQ(pool().stats().bytes_in_use, 0u);
  auto again = pool().acquire(4096, on(kStreamB));
  EXPECT_EQ(pool().stats().hits, 1u);
  pool().release(again, kStreamB);
}

// The pool trusts the capture answer in the AllocContext: it does not ask
// Backend::is_capturing again.
TEST_F(WorkspacePoolTest, AcquireTakesAKnownCaptureAnswer) {
  auto warm = pool().acquire(4096, on(kStreamA));
  void* warm_ptr = warm.ptr;
  pool().release(warm, kStreamA);
  backend_.capturing_stream = kStreamA;
  auto captured = pool().acquire(4096, AllocContext{pool().device(), kStreamA, /*capturing=*/true});
  EXPECT_NE(captured.ptr, warm_ptr);  // a block of its own, as under capture
  EXPECT_EQ(pool().stats().graph_blocks, 1u);
  pool().release(captured, kStreamA);
  backend_.destroy_graph();
  auto plain = pool().acquire(4096, AllocContext{pool().device(), kStreamA, /*capturing=*/false});
  EXPECT_EQ(plain.ptr, warm_ptr);  // the cached block: no capture said
  EXPECT_EQ(pool().stats().graph_blocks, 0u);
  pool().release(plain, kStreamA);
}

// release_block() gives a lease back on the stream it was acquired on, from
// nothing but Lease::block (an output tensor's deleter context).
TEST_F(WorkspacePoolTest, ReleaseBlockUsesTheLeaseStream) {
  backend_.use_events = true;  // events start incomplete
  auto a = pool().acquire(4096, on(kStreamA));
  void* a_ptr = a.ptr;
  WorkspacePool::release_block(a.block);
  EXPECT_EQ(pool().stats().bytes_in_use, 0u);
  EXPECT_EQ(backend_.live_events(), 1u);  // recorded on kStreamA, an explicit stream
  auto b = pool().acquire(4096, on(kStreamB));
  EXPECT_NE(b.ptr, a_ptr);  // kStreamA's event is pending
  auto a2 = pool().acquire(4096, on(kStreamA));
  EXPECT_EQ(a2.ptr, a_ptr);  // the releasing stream takes it at once
  pool().release(a2, kStreamA);
  pool().release(b, kStreamB);
  backend_.complete_all_events();
  pool().empty_cache();
}

TEST_F(WorkspacePoolTest, RoundsBlocksTo256Bytes) {
  auto a = pool().acquire(1, on(nullptr));
  auto b = pool().acquire(257, on(nullptr));
  auto c = pool().acquire(512, on(nullptr));
  EXPECT_EQ(a.bytes, 256u);
  EXPECT_EQ(b.bytes, 512u);
  EXPECT_EQ(c.bytes, 512u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.ptr) % 256, 0u);
  EXPECT_EQ(pool().stats().bytes_in_use, 256u + 512u + 512u);
  pool().release(a, nullptr);
  pool().release(b, nullptr);
  pool().release(c, nullptr);
  EXPECT_EQ(pool().stats().bytes_in_use, 0u);
  EXPECT_EQ(pool().stats().bytes_reserved, 1280u);
}

TEST_F(WorkspacePoolTest, BestFitAmongEligibleBlocks) {
  auto small = pool().acquire(4096, on(nullptr));
  auto mid = pool().acquire(8192, on(nullptr));
  auto big = pool().acquire(16384, on(nullptr));
  void* mid_ptr = mid.ptr;
  void* big_ptr = big.ptr;
  pool().release(big, nullptr);
  pool().release(small, nullptr);
  pool().release(mid, nullptr);

  // 5000 -> 5120: 4096 is too small, 8192 fits best.
  auto x = pool().acquire(5000, on(nullptr));
  EXPECT_EQ(x.ptr, mid_ptr);
  EXPECT_EQ(x.bytes, 8192u);
  // The next best is the 16 KiB block (within 5120 + 1 MiB).
  auto y = pool().acquire(5000, on(nullptr));
  EXPECT_EQ(y.ptr, big_ptr);
  EXPECT_EQ(pool().stats().hits, 2u);
  pool().release(x, nullptr);
  pool().release(y, nullptr);
}

TEST_F(WorkspacePoolTest, TooLargeBlockIsNotTaken) {
  auto big = pool().acquire(4 * kMiB, on(nullptr));
  pool().release(big, nullptr);
  // [1 MiB, max(2 MiB, 2 MiB)]: a 4 MiB block would waste too much.
  auto a = pool().acquire(kMiB, on(nullptr));
  EXPECT_EQ(a.bytes, kMiB);
  EXPECT_EQ(pool().stats().misses, 2u);
  // Up to twice the request's size is fine.
  auto b = pool().acquire(3 * kMiB, on(nullptr));
  EXPECT_EQ(b.bytes, 4 * kMiB);
  EXPECT_EQ(pool().stats().hits, 1u);
  auto c = pool().acquire(256, on(nullptr));
  EXPECT_EQ(c.bytes, 256u);  // 1 MiB block is leased; nothing cached fits
  pool().release(a, nullptr);
  auto d = pool().acquire(512, on(nullptr));
  EXPECT_EQ(d.bytes, kMiB);  // a small request may take a block up to 1 MiB larger
  pool().release(b, nullptr);
  pool().release(c, nullptr);
  pool().release(d, nullptr);
}

TEST_F(WorkspacePoolTest, TagStartsAtZeroAndStaysWithTheBlock) {
  auto a = pool().acquire(1024, on(nullptr));
  ASSERT_NE(a.tag, nullptr);
  EXPECT_EQ(*a.tag, 0u);
  *a.tag = 42;
  pool().release(a, nullptr);
  auto b = pool().acquire(1024, on(nullptr));
  EXPECT_EQ(*b.tag, 42u);
  auto c = pool().acquire(1024, on(nullptr));
  EXPECT_EQ(*c.tag, 0u);
  pool().release(b, nullptr);
  pool().release(c, nullptr);
}

TEST_F(WorkspacePoolTest, PeakAndEmptyCache) {
  auto a = pool().acquire(kMiB, on(nullptr));
  auto b = pool().acquire(2 * kMiB, on(nullptr));
  EXPECT_EQ(pool().stats().peak_bytes_reserved, 3 * kMiB);
  pool().release(a, nullptr);
  EXPECT_EQ(pool().empty_cache(), kMiB);
  PoolStats s = pool().stats();
  EXPECT_EQ(s.bytes_reserved, 2 * kMiB);
  EXPECT_EQ(s.bytes_in_use, 2 * kMiB);
  EXPECT_EQ(s.peak_bytes_reserved, 3 * kMiB);
  EXPECT_EQ(s.device_frees, 1u);
  EXPECT_EQ(s.blocks, 1u);
  pool().reset_peak();
  EXPECT_EQ(pool().stats().peak_bytes_reserved, 2 * kMiB);
  pool().release(b, nullptr);
  EXPECT_EQ(pool().empty_cache(), 2 * kMiB);
  EXPECT_EQ(pool().stats().bytes_reserved, 0u);
  EXPECT_EQ(pool().stats().blocks, 0u);
  EXPECT_EQ(backend_.fake_allocator().live_blocks(), 0u);
}

TEST_F(WorkspacePoolTest, AcquireZeroIsAnInternalError) {
  expect_error([&] { pool().acquire(0, on(nullptr)); }, ErrorKind::kInternalError,
               "workspace pool on cpu: acquire of 0 bytes (callers skip the pool for empty "
               "workspaces)");
}

TEST_F(WorkspacePoolTest, LimitExceededIsOutOfMemory) {
  backend_.use_events = true;  // events start incomplete
  pool().set_limit(4 * kMiB);
  EXPECT_EQ(pool().limit(), 4 * kMiB);
  auto held = pool().acquire(2 * kMiB, on(kStreamA));
  auto pending = pool().acquire(2 * kMiB, on(kStreamA));
  pool().release(pending, kStreamA);  // cached, but its event is pending
  expect_error([&] { pool().acquire(kMiB, on(kStreamB)); }, ErrorKind::kOutOfMemoryError,
               "workspace pool on cpu: cannot allocate 1048576 bytes: 4194304 bytes reserved "
               "(2097152 in use), limit 4194304 bytes (set TILEJIT_WORKSPACE_LIMIT or "
               "WorkspacePool::set_limit)");
  PoolStats s = pool().stats();
  EXPECT_EQ(s.oom_retries, 1u);
  EXPECT_EQ(s.device_allocs, 2u);
  EXPECT_EQ(s.device_frees, 0u);  // the pending block was not freed
  EXPECT_EQ(s.leases, 2u);
  EXPECT_EQ(s.bytes_reserved, 4 * kMiB);
  EXPECT_EQ(backend_.fake_allocator().live_blocks(), 2u);

  // Once its event completes the cached block goes to make room.
  backend_.complete_all_events();
  // 512 KiB: the 2 MiB block is more than max(2 * 512 KiB, 512 KiB + 1 MiB).
  auto fresh = pool().acquire(kMiB / 2, on(kStreamB));
  s = pool().stats();
  EXPECT_EQ(s.oom_retries, 2u);
  EXPECT_EQ(s.device_frees, 1u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.bytes_reserved, 2 * kMiB + kMiB / 2);
  EXPECT_EQ(s.peak_bytes_reserved, 4 * kMiB);
  EXPECT_EQ(backend_.live_events(), 0u);
  pool().release(held, kStreamA);
  pool().release(fresh, kStreamB);
}

TEST_F(WorkspacePoolTest, LimitMessageNamesTheRoundedSize) {
  pool().set_limit(1024);
  expect_error([&] { pool().acquire(1500, on(nullptr)); }, ErrorKind::kOutOfMemoryError,
               "workspace pool on cpu: cannot allocate 1536 bytes (1500 asked, rounded up to a "
               "multiple of 256): 0 bytes reserved (0 in use), limit 1024 bytes (set "
               "TILEJIT_WORKSPACE_LIMIT or WorkspacePool::set_limit)");
}

TEST_F(WorkspacePoolTest, AllocatorFailureFreesTheCacheAndRetries) {
  auto small = pool().acquire(8192, on(nullptr));
  pool().release(small, nullptr);  // cached, reusable at once
  backend_.fake_allocator().fail_next(1);
  auto big = pool().acquire(kMiB, on(nullptr));  // 8 KiB cannot serve 1 MiB
  ASSERT_TRUE(big);
  PoolStats s = pool().stats();
  EXPECT_EQ(s.oom_retries, 1u);
  EXPECT_EQ(s.device_allocs, 2u);
  EXPECT_EQ(s.device_frees, 1u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.bytes_reserved, kMiB);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(backend_.fake_allocator().failures(), 1);
  EXPECT_EQ(backend_.fake_allocator().live_blocks(), 1u);
  pool().release(big, nullptr);
}

TEST_F(WorkspacePoolTest, AllocatorFailingTwiceLeaksNothing) {
  auto held = pool().acquire(8192, on(nullptr));
  backend_.fake_allocator().fail_next(2);
  expect_error([&] { pool().acquire(kMiB, on(nullptr)); }, ErrorKind::kOutOfMemoryError,
               "workspace pool on cpu: the fake allocator failed to allocate 1048576 bytes; 8192 "
               "bytes reserved (8192 in use), no limit (set TILEJIT_WORKSPACE_LIMIT or "
               "WorkspacePool::set_limit)");
  PoolStats s = pool().stats();
  EXPECT_EQ(s.oom_retries, 1u);
  EXPECT_EQ(s.leases, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.device_allocs, 1u);
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.bytes_reserved, 8192u);
  EXPECT_EQ(s.bytes_in_use, 8192u);
  EXPECT_EQ(backend_.fake_allocator().live_blocks(), 1u);
  EXPECT_EQ(backend_.fake_allocator().failures(), 2);
  // The pool still works afterwards.
  auto again = pool().acquire(kMiB, on(nullptr));
  EXPECT_TRUE(again);
  pool().release(again, nullptr);
  pool().release(held, nullptr);
}

TEST_F(WorkspacePoolTest, StreamOrderedReuse) {
  backend_.use_events = true;  // events start incomplete
  auto a = pool().acquire(4096, on(kStreamA));
  void* a_ptr = a.ptr;
  pool().release(a, kStreamA);
  // An explicit stream's event is recorded at release (its owner may
  // destroy the stream after the call).
  EXPECT_EQ(backend_.live_events(), 1u);

  // Another stream must not take a block whose release event is pending.
  auto b = pool().acquire(4096, on(kStreamB));
  EXPECT_NE(b.ptr, a_ptr);
  EXPECT_EQ(pool().stats().misses, 2u);
  void* b_ptr = b.ptr;
  pool().release(b, kStreamB);

  // The releasing stream takes it at once; the stale event is destroyed.
  auto a2 = pool().acquire(4096, on(kStreamA));
  EXPECT_EQ(a2.ptr, a_ptr);
  EXPECT_EQ(pool().stats().hits, 1u);
  EXPECT_EQ(backend_.live_events(), 1u);  // only b's
  pool().release(a2, kStreamA);

  // Each stream prefers its own block among equal fits.
  auto b2 = pool().acquire(4096, on(kStreamB));
  EXPECT_EQ(b2.ptr, b_ptr);
  pool().release(b2, kStreamB);

  // Once the events complete, any stream may take any block.
  backend_.complete_all_events();
  auto c1 = pool().acquire(4096, on(nullptr));
  auto c2 = pool().acquire(4096, on(nullptr));
  EXPECT_EQ(pool().stats().hits, 4u);
  EXPECT_EQ(pool().stats().device_allocs, 2u);
  EXPECT_EQ(backend_.live_events(), 0u);
  pool().release(c1, nullptr);
  pool().release(c2, nullptr);
}

TEST_F(WorkspacePoolTest, LegacyStreamRecordsItsEventOnlyWhenAnotherStreamAsks) {
  backend_.use_events = true;
  auto a = pool().acquire(4096, on(nullptr));
  void* a_ptr = a.ptr;
  pool().release(a, nullptr);
  EXPECT_EQ(backend_.live_events(), 0u);  // reuse on one stream: no driver call
  auto same = pool().acquire(4096, on(nullptr));
  EXPECT_EQ(same.ptr, a_ptr);
  pool().release(same, nullptr);
  EXPECT_EQ(backend_.live_events(), 0u);
  auto other = pool().acquire(4096, on(kStreamB));  // records on the legacy stream now
  EXPECT_NE(other.ptr, a_ptr);
  EXPECT_EQ(backend_.live_events(), 1u);  // that one; `other` is still leased
  pool().release(other, kStreamB);
  backend_.complete_all_events();
  backend_.complete_on_record = true;
  auto again = pool().acquire(4096, on(kStreamB));  // its own block first
  auto moved = pool().acquire(4096, on(kStreamB));  // then the legacy stream's, now idle
  EXPECT_EQ(moved.ptr, a_ptr);
  pool().release(again, kStreamB);
  pool().release(moved, kStreamB);
  backend_.complete_all_events();
}

TEST_F(WorkspacePoolTest, EmptyCacheKeepsBlocksStillInUseOnTheirStream) {
  backend_.use_events = true;
  auto a = pool().acquire(4096, on(kStreamA));
  pool().release(a, kStreamA);
  EXPECT_EQ(pool().empty_cache(), 0u);
  EXPECT_EQ(pool().stats().blocks, 1u);
  backend_.complete_all_events();
  EXPECT_EQ(pool().empty_cache(), 4096u);
  EXPECT_EQ(pool().stats().blocks, 0u);
  EXPECT_EQ(backend_.live_events(), 0u);
}

TEST_F(WorkspacePoolTest, FailedEventRecordPinsTheBlockToItsStream) {
  backend_.use_events = true;
  backend_.fail_record = true;
  auto a = pool().acquire(4096, on(kStreamA));
  void* a_ptr = a.ptr;
  pool().release(a, kStreamA);  // noexcept: the failure is absorbed
  auto b = pool().acquire(4096, on(kStreamB));
  EXPECT_NE(b.ptr, a_ptr);
  EXPECT_EQ(pool().empty_cache(), 0u);
  auto a2 = pool().acquire(4096, on(kStreamA));
  EXPECT_EQ(a2.ptr, a_ptr);
  backend_.fail_record = false;
  pool().release(a2, kStreamA);
  pool().release(b, kStreamB);
}

TEST_F(WorkspacePoolTest, ReleasingACopyTwiceIsIgnored) {
  backend_.use_events = true;
  auto a = pool().acquire(4096, on(nullptr));
  auto copy = a;
  pool().release(a, nullptr);
  pool().release(copy, nullptr);  // must not put the block in the free list twice
  EXPECT_EQ(pool().stats().bytes_in_use, 0u);
  auto x = pool().acquire(4096, on(nullptr));
  auto y = pool().acquire(4096, on(nullptr));
  EXPECT_NE(x.ptr, y.ptr);
  EXPECT_EQ(pool().stats().bytes_in_use, 8192u);
  pool().release(x, nullptr);
  pool().release(y, nullptr);
}

TEST_F(WorkspacePoolTest, LeaseGuardReleasesOnUnwind) {
  try {
    LeaseGuard guard(&pool(), pool().acquire(4096, on(nullptr)), nullptr);
    EXPECT_EQ(pool().stats().bytes_in_use, 4096u);
    throw std::runtime_error("unwind");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(pool().stats().bytes_in_use, 0u);
}

TEST_F(WorkspacePoolTest, ConcurrentLeasesNeverOverlap) {
  backend_.use_events = true;
  backend_.complete_on_record = true;  // cross-stream reuse goes through event queries
  constexpr int kThreads = 8;
  constexpr int kIters = 2000;
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads share the default stream, half have their own.
      Stream stream = t % 2 ? reinterpret_cast<Stream>(uintptr_t(0x100 * (t + 1))) : nullptr;
      for (int i = 0; i < kIters; ++i) {
        size_t bytes = 256 * size_t(1 + (i * 7 + t) % 16);
        auto lease = pool().acquire(bytes, on(stream));
        auto* words = static_cast<uint64_t*>(lease.ptr);
        const size_t n = lease.bytes / sizeof(uint64_t);
        const uint64_t pattern = (uint64_t(t) << 32) | uint64_t(i);
        for (size_t k = 0; k < n; ++k) words[k] = pattern ^ k;
        std::this_thread::yield();
        for (size_t k = 0; k < n; ++k) {
          if (words[k] != (pattern ^ k)) {
            ++corrupted;
            break;
          }
        }
        pool().release(lease, stream);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupted.load(), 0);
  PoolStats s = pool().stats();
  EXPECT_EQ(s.leases, uint64_t(kThreads) * kIters);
  EXPECT_EQ(s.hits + s.misses, s.leases);
  EXPECT_EQ(s.misses, s.device_allocs);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.blocks, backend_.fake_allocator().live_blocks());
  EXPECT_EQ(s.bytes_reserved, backend_.fake_allocator().live_bytes());
  EXPECT_LE(s.peak_bytes_reserved, uint64_t(kThreads) * 2 * 16 * 256 * 2);
}

TEST(WorkspacePoolGet, OnePoolPerBackendAndDevice) {
  // Pools from get() live until exit and keep a reference to the backend.
  static FakeBackend* backend = new FakeBackend("fake_pool_get");
  WorkspacePool& a = WorkspacePool::get(*backend, Device::cpu());
  WorkspacePool& b = WorkspacePool::get(*backend, Device::cpu());
  WorkspacePool& c = WorkspacePool::get(*backend, Device{DeviceType::kCPU, 1});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  EXPECT_EQ(c.device(), (Device{DeviceType::kCPU, 1}));
}

TEST(WorkspacePoolLimit, ReadFromTheEnvironment) {
  FakeBackend backend;
  ::setenv("TILEJIT_WORKSPACE_LIMIT", "64M", 1);
  {
    WorkspacePool pool(backend, Device::cpu());
    EXPECT_EQ(pool.limit(), 64 * kMiB);
    pool.set_limit(0);
    EXPECT_EQ(pool.limit(), 0u);
  }
  ::setenv("TILEJIT_WORKSPACE_LIMIT", "lots", 1);
  expect_error([&] { WorkspacePool pool(backend, Device::cpu()); }, ErrorKind::kValueError,
               "TILEJIT_WORKSPACE_LIMIT: cannot parse 'lots' as a byte size; expected an "
               "integer with an optional K, M or G suffix (powers of 1024), e.g. 1048576, "
               "512K, 64M, 2G");
  ::unsetenv("TILEJIT_WORKSPACE_LIMIT");
  WorkspacePool pool(backend, Device::cpu());
  EXPECT_EQ(pool.limit(), 0u);
}

TEST(ParseByteSize, Accepts) {
  EXPECT_EQ(parse_byte_size("0", "X"), 0u);
  EXPECT_EQ(parse_byte_size("1048576", "X"), 1048576u);
  EXPECT_EQ(parse_byte_size("512K", "X"), 512u * 1024);
  EXPECT_EQ(parse_byte_size("512k", "X"), 512u * 1024);
  EXPECT_EQ(parse_byte_size("64M", "X"), 64 * kMiB);
  EXPECT_EQ(parse_byte_size("2G", "X"), 2048 * kMiB);
  EXPECT_EQ(parse_byte_size("18446744073709551615", "X"), ~size_t{0});
}

TEST(ParseByteSize, Rejects) {
  for (const char* bad : {"", "abc", "12Q", "-1", "1.5G", "K", "64MB", " 64M", "64M ",
                          "18446744073709551616", "17179869184G"}) {
    expect_error([&] { parse_byte_size(bad, "TILEJIT_WORKSPACE_LIMIT"); },
                 ErrorKind::kValueError,
                 std::string("TILEJIT_WORKSPACE_LIMIT: cannot parse '") + bad +
                     "' as a byte size; expected an integer with an optional K, M or G suffix "
                     "(powers of 1024), e.g. 1048576, 512K, 64M, 2G");
  }
  expect_error([&] { parse_byte_size(nullptr, "S"); }, ErrorKind::kValueError,
               "S: cannot parse '' as a byte size; expected an integer with an optional K, M or "
               "G suffix (powers of 1024), e.g. 1048576, 512K, 64M, 2G");
}

}  // namespace
}  // namespace tilejit::runtime
