// Concurrency (issue 5): many threads calling the same and different kernels
// at once, with canary kernels that write a call-unique pattern into every
// workspace, spin, and check the pattern before they return: no two calls in
// flight ever share workspace memory, the pool stays bounded, nothing
// deadlocks (a watchdog aborts a hung test), and the CPU thread pool runs
// multi-block grids launched from many threads at once. Runs under
// ThreadSanitizer in CI (scripts/test_sanitizers.sh).
//
// TILEJIT_STRESS_ITERS sets the calls per thread (default 300).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "reliability/reliability_support.h"
#include "tilejit/backend/cpu.h"

namespace tilejit::reliability {
namespace {

constexpr int kThreads = 8;

int iterations() {
  const char* env = std::getenv("TILEJIT_STRESS_ITERS");
  const int n = env ? std::atoi(env) : 0;
  return n > 0 ? n : 300;
}

// Aborts the process when the scope has not ended after `seconds`: a
// deadlock fails the test instead of hanging CI.
class Watchdog {
 public:
  explicit Watchdog(int seconds) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
        std::fprintf(stderr, "watchdog: the test did not finish in %d s (deadlock?)\n", seconds);
        std::abort();
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Sets the CPU launch threads and restores them: several workers even on a
// two-core machine, so that blocks of one launch really run concurrently.
class ScopedCpuThreads {
 public:
  explicit ScopedCpuThreads(int n) : old_(cpu::num_threads()) { cpu::set_num_threads(n); }
  ~ScopedCpuThreads() { cpu::set_num_threads(old_); }

 private:
  int old_;
};

// The spin between writing and checking: long enough that calls overlap.
constexpr const char* kSpin = "for (volatile int spin = 0; spin < 20000; spin = spin + 1) {}\n";

// Three workspaces of shapes that vary with n and m, so arenas of different
// sizes interleave in the pool.
Kernel canary_a() {
  const Expr n = symbolic("n"), m = symbolic("m");
  const auto f = prim_func("canary_a")
                     .tensor("Tag", {1}, DataType::int64())
                     .tensor("S1", {n}, DataType::uint8())
                     .tensor("S2", {m}, DataType::uint8())
                     .tensor("Ok", {1}, DataType::int32())
                     .tensor("W1", {n}, DataType::int64())
                     .tensor("W2", {m, 3}, DataType::int32())
                     .tensor("W3", {n + m}, DataType::uint8())
                     .body("cpu", std::string(R"(
const int64_t tag = Tag(0);
for (int64_t i = 0; i < n; ++i) W1(i) = tag * 31 + i;
for (int64_t i = 0; i < m; ++i)
  for (int64_t j = 0; j < 3; ++j) W2(i, j) = int32_t(tag ^ (i * 3 + j));
for (int64_t i = 0; i < n + m; ++i) W3(i) = uint8_t(tag + i);
)") + kSpin + R"(
int32_t ok = 1;
for (int64_t i = 0; i < n; ++i) ok &= W1(i) == tag * 31 + i;
for (int64_t i = 0; i < m; ++i)
  for (int64_t j = 0; j < 3; ++j) ok &= W2(i, j) == int32_t(tag ^ (i * 3 + j));
for (int64_t i = 0; i < n + m; ++i) ok &= W3(i) == uint8_t(tag + i);
Ok(0) = ok;
)")
                     .build();
  return jit(f, cpu_options({3}, {4, 5, 6}));
}

// A zero-initialised workspace (checked to be zero on entry) and a static
// one; Ok is 1 when the pattern survived and V was zero on entry.
Kernel canary_b() {
  const Expr m = symbolic("m");
  const auto f = prim_func("canary_b")
                     .tensor("Tag", {1}, DataType::int64())
                     .tensor("S", {m}, DataType::uint8())
                     .tensor("Ok", {1}, DataType::int32())
                     .tensor("V", {2 * m}, DataType::int64())
                     .tensor("U", {5}, DataType::float64())
                     .body("cpu", std::string(R"(
const int64_t tag = Tag(0);
int32_t ok = 1;
for (int64_t i = 0; i < 2 * m; ++i) ok &= V(i) == 0;
for (int64_t i = 0; i < 2 * m; ++i) V(i) = tag - i;
for (int64_t i = 0; i < 5; ++i) U(i) = double(tag) + 0.5 * double(i);
)") + kSpin + R"(
for (int64_t i = 0; i < 2 * m; ++i) ok &= V(i) == tag - i;
for (int64_t i = 0; i < 5; ++i) ok &= U(i) == double(tag) + 0.5 * double(i);
Ok(0) = ok;
)")
                     .build();
  JitOptions o = cpu_options({2}, {3, 4});
  o.workspace_init = {{"V", WorkspaceInit::kZero}};
  return jit(f, o);
}

// A multi-block grid: block b owns row b of the workspace; Ok[b] says
// whether its row kept its pattern.
Kernel canary_grid() {
  const Expr g = symbolic("g");
  const auto f = prim_func("canary_grid")
                     .tensor("Tag", {1}, DataType::int64())
                     .tensor("S", {g}, DataType::uint8())
                     .tensor("Ok", {g}, DataType::int32())
                     .tensor("W", {g, 64}, DataType::int64())
                     .grid({g})
                     .body("cpu", std::string(R"(
const int64_t tag = Tag(0);
for (int64_t j = 0; j < 64; ++j) W(bx, j) = tag * 4096 + bx * 64 + j;
)") + kSpin + R"(
int32_t ok = 1;
for (int64_t j = 0; j < 64; ++j) ok &= W(bx, j) == tag * 4096 + bx * 64 + j;
Ok(bx) = ok;
)")
                     .build();
  return jit(f, cpu_options({2}, {3}));
}

constexpr int64_t kN[] = {16, 100, 1000, 4000};
constexpr int64_t kM[] = {8, 64, 700};
constexpr int64_t kG[] = {1, 3, 17, 64};

// Every arena size a call of the three canaries can lease, rounded to the
// pool's 256-byte blocks.
std::set<size_t> arena_sizes(const Kernel& a, const Kernel& b, const Kernel& c) {
  std::set<size_t> sizes;
  Tensor tag = empty({1}, DataType::int64());
  for (int64_t n : kN) {
    for (int64_t m : kM) {
      Tensor s1 = empty({n}, DataType::uint8()), s2 = empty({m}, DataType::uint8());
      sizes.insert(a.workspace_bytes_of(tag, s1, s2));
    }
  }
  for (int64_t m : kM) {
    Tensor s = empty({m}, DataType::uint8());
    sizes.insert(b.workspace_bytes_of(tag, s));
  }
  for (int64_t g : kG) {
    Tensor s = empty({g}, DataType::uint8());
    sizes.insert(c.workspace_bytes_of(tag, s));
  }
  return sizes;
}

TEST(Concurrency, ManyThreadsManyKernelsNeverShareWorkspaces) {
  Watchdog watchdog(900);
  ScopedCpuThreads cpu_threads(4);
  const Kernel a = canary_a(), b = canary_b(), c = canary_grid();
  const std::set<size_t> sizes = arena_sizes(a, b, c);
  const size_t largest = *sizes.rbegin();
  size_t sum_of_sizes = 0;
  for (size_t s : sizes) sum_of_sizes += s;

  cpu_pool().empty_cache();
  ASSERT_EQ(cpu_pool().stats().bytes_in_use, 0u);
  cpu_pool().reset_peak();
  const int iters = iterations();
  std::atomic<int> failures{0}, calls{0};
  std::atomic<bool> stop_sweeper{false};
  // Gives cached blocks back while calls run: empty_cache must never free a
  // block that is leased.
  std::thread sweeper([&] {
    while (!stop_sweeper.load()) {
      cpu_pool().empty_cache();
      (void)cpu_pool().stats();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread its own copies: Kernels are cheap, shared, immutable.
      const Kernel ka = a, kb = b, kc = c;
      std::mt19937 rng(unsigned(t) * 7919u + 1u);
      Tensor tag = empty({1}, DataType::int64());
      for (int i = 0; i < iters; ++i) {
        const int64_t id = (int64_t(t) << 20) + i + 1;  // unique per call
        tag.data_as<int64_t>()[0] = id;
        const int64_t n = kN[rng() % 4], m = kM[rng() % 3], g = kG[rng() % 4];
        bool ok = true;
        switch ((t + i) % 3) {
          case 0: {
            Tensor s1 = empty({n}, DataType::uint8()), s2 = empty({m}, DataType::uint8());
            Tensor out = ka(tag, s1, s2);
            ok = out.data_as<int32_t>()[0] == 1;
            break;
          }
          case 1: {
            Tensor s = empty({m}, DataType::uint8());
            Tensor out = kb(tag, s);
            ok = out.data_as<int32_t>()[0] == 1;
            break;
          }
          default: {
            Tensor s = empty({g}, DataType::uint8());
            Tensor out = kc(tag, s);
            for (int64_t x = 0; x < g; ++x) ok = ok && out.data_as<int32_t>()[x] == 1;
            break;
          }
        }
        if (!ok) failures++;
        calls++;
      }
    });
  }
  for (auto& th : threads) th.join();
  stop_sweeper = true;
  sweeper.join();

  EXPECT_EQ(failures.load(), 0) << "calls whose workspaces another call wrote into";
  EXPECT_EQ(calls.load(), kThreads * iters);
  const auto st = cpu_pool().stats();
  EXPECT_EQ(st.bytes_in_use, 0u);
  // A block is made only when no free block of at least its size is left, so
  // there are never more blocks of one size than calls in flight (the
  // threads): reserved <= threads * (sum of the distinct arena sizes).
  EXPECT_LE(st.peak_bytes_reserved, kThreads * sum_of_sizes);
  // In practice best fit keeps it near one largest arena per thread.
  EXPECT_LE(st.peak_bytes_reserved, 2 * kThreads * largest);
  std::printf("[ stats    ] %d calls, %zu arena sizes (largest %zu bytes); peak reserved %llu "
              "bytes = %.2f x threads x largest; %llu blocks made, %llu hits\n",
              calls.load(), sizes.size(), largest, (unsigned long long)st.peak_bytes_reserved,
              double(st.peak_bytes_reserved) / double(kThreads * largest),
              (unsigned long long)st.device_allocs, (unsigned long long)st.hits);
}

TEST(Concurrency, ManyThreadsLaunchMultiBlockGridsAtOnce) {
  Watchdog watchdog(600);
  ScopedCpuThreads cpu_threads(4);
  const Kernel c = canary_grid();
  const int iters = std::max(1, iterations() / 3);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Tensor tag = empty({1}, DataType::int64());
      Tensor s = empty({64 + t}, DataType::uint8());  // a different grid per thread
      for (int i = 0; i < iters; ++i) {
        tag.data_as<int64_t>()[0] = (int64_t(t) << 20) + i + 1;
        Tensor out = c(tag, s);
        for (int64_t x = 0; x < 64 + t; ++x) {
          if (out.data_as<int32_t>()[x] != 1) {
            failures++;
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

TEST(Concurrency, BadAndGoodCallsInterleave) {
  // Failing calls on some threads never disturb good calls on others, and
  // leave no lease behind.
  Watchdog watchdog(600);
  const Kernel b = canary_b();
  const int iters = std::max(1, iterations() / 3);
  std::atomic<int> failures{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Tensor tag = empty({1}, DataType::int64());
      Tensor s = empty({64}, DataType::uint8());
      Tensor wrong = empty({64}, DataType::int8());
      for (int i = 0; i < iters; ++i) {
        tag.data_as<int64_t>()[0] = (int64_t(t) << 20) + i + 1;
        if ((t + i) % 2 == 0) {
          try {
            b(tag, wrong);
          } catch (const Error& e) {
            if (e.message() == "canary_b: argument #1 'S': expected uint8, got int8") errors++;
          }
        } else {
          Tensor out = b(tag, s);
          if (out.data_as<int32_t>()[0] != 1) failures++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(errors.load(), kThreads * iters / 2);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

TEST(Concurrency, ManyThreadsJitTheSameNewKernelCompileOnce) {
  Watchdog watchdog(600);
  const std::string token = unique_token();
  const Expr n = symbolic("n");
  const auto f = prim_func("jit_race")
                     .tensor("X", {n}, DataType::int32())
                     .tensor("Out", {n}, DataType::int32())
                     .grid({n})
                     .body("cpu", "Out(bx) = X(bx) + 1;  // " + token)
                     .build();
  const auto before = runtime::CompileCache::global().stats();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Kernel k = jit(f, cpu_options({1}));
      Tensor x = empty({t + 1}, DataType::int32());
      for (int i = 0; i <= t; ++i) x.data_as<int32_t>()[i] = i * t;
      Tensor out = k(x);
      for (int i = 0; i <= t; ++i) {
        if (out.data_as<int32_t>()[i] != i * t + 1) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  const auto after = runtime::CompileCache::global().stats();
  EXPECT_EQ(after.compiles - before.compiles, 1u);
  EXPECT_EQ(after.loads - before.loads, 1u);
  EXPECT_EQ(after.memory_hits - before.memory_hits, uint64_t(kThreads - 1));
}

}  // namespace
}  // namespace tilejit::reliability
