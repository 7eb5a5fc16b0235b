// Faults (issue 5), end to end through jit() and Kernel calls: allocation
// failures (pool and outputs), a body that throws, a missing, failing or
// misbehaving host compiler, truncated and corrupt disk-cache entries, an
// unwritable cache directory, and two processes compiling one kernel at
// once. The pool's own retry logic is unit-tested with a fake backend in
// tests/cpp/runtime/test_workspace_pool.cpp; here the same failures go
// through the real call path.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "reliability/reliability_support.h"
#include "runtime/fake_backend.h"

namespace tilejit::reliability {
namespace {

namespace fs = std::filesystem;

// ---- allocation failures --------------------------------------------------------

// A FakeBackend registered as target "faulty": its allocator can be told to
// fail, its module launches nothing.
tilejit::testing::FakeBackend& faulty() {
  static tilejit::testing::FakeBackend* backend = [] {
    auto b = std::make_unique<tilejit::testing::FakeBackend>("faulty");
    auto* raw = b.get();
    runtime::register_backend(std::move(b));
    return raw;
  }();
  return *backend;
}

TEST(Faults, AllocatorFailureThroughAKernelRetriesOnceThenRaises) {
  tilejit::testing::FakeBackend& be = faulty();
  runtime::WorkspacePool& pool = runtime::WorkspacePool::get(be, Device::cpu());
  const Expr n = symbolic("n");
  JitOptions o;
  o.out_idx = {1};
  o.workspace_idx = {2};
  o.target = "faulty";
  o.disk_cache = false;
  const Kernel k = jit(prim_func("alloc_fault")
                           .tensor("X", {n}, DataType::float32())
                           .tensor("Out", {n}, DataType::float32())
                           .tensor("W", {n}, DataType::float32())
                           .build(),
                       o);
  Tensor x16 = empty({16}, DataType::float32()), x1k = empty({1024}, DataType::float32()),
         x2k = empty({2048}, DataType::float32());
  k(x16);  // leaves one cached 256-byte block
  auto before = pool.stats();

  // One failure: the cached block is freed, the retry succeeds.
  be.fake_allocator().fail_next(1);
  Tensor out = k(x1k);
  EXPECT_EQ(out.shape_str(), "[1024]");
  auto s = pool.stats();
  EXPECT_EQ(s.oom_retries - before.oom_retries, 1u);
  EXPECT_EQ(s.device_frees - before.device_frees, 1u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_reserved, 4096u);

  // Two failures: the call raises, naming the size, what is held and the
  // setting; nothing leaks and the next call works.
  be.fake_allocator().fail_next(2);
  EXPECT_EQ(error_message([&] { k(x2k); }, ErrorKind::kOutOfMemoryError),
            "workspace pool on cpu: the faulty allocator failed to allocate 8192 bytes; 0 bytes "
            "reserved (0 in use), no limit (set TILEJIT_WORKSPACE_LIMIT or "
            "WorkspacePool::set_limit)");
  s = pool.stats();
  EXPECT_EQ(s.oom_retries - before.oom_retries, 2u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_reserved, 0u);
  EXPECT_EQ(be.fake_allocator().live_blocks(), s.blocks);
  EXPECT_EQ(be.fake_allocator().bad_frees(), 0);
  EXPECT_EQ(Tensor(k(x2k)).shape_str(), "[2048]");
  s = pool.stats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_reserved, 8192u);
  EXPECT_EQ(be.fake_allocator().live_blocks(), 1u);
}

// Outputs: a TensorAllocator that fails after `succeed` tensors, counting
// the live ones it made.
std::atomic<int> g_live_outputs{0};

class FailingTensorAllocator : public runtime::TensorAllocator {
 public:
  explicit FailingTensorAllocator(int succeed) : succeed_(succeed) {}
  Tensor empty(std::span<const int64_t> shape, DataType dtype, Device device,
               runtime::Stream) override {
    if (made_++ >= succeed_) {
      TILEJIT_THROW(kOutOfMemoryError) << "test allocator: out of memory";
    }
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    void* p = std::aligned_alloc(256, size_t(n * dtype.bytes() + 255) / 256 * 256);
    g_live_outputs++;
    return Tensor::from_blob(p, shape, dtype, device, [](void* c) noexcept {
      std::free(c);
      g_live_outputs--;
    }, p);
  }

 private:
  int succeed_;
  int made_ = 0;
};

TEST(Faults, OutputAllocationFailureLeaksNothing) {
  const Expr n = symbolic("n");
  const Kernel k = jit(prim_func("two_outs")
                           .tensor("X", {n}, DataType::float32())
                           .tensor("A", {n}, DataType::float32())
                           .tensor("B", {n}, DataType::float32())
                           .tensor("W", {n}, DataType::float32())
                           .grid({n})
                           .body("cpu", "W(bx) = X(bx) + 1; A(bx) = W(bx); B(bx) = 2 * W(bx);")
                           .build(),
                       cpu_options({1, 2}, {3}));
  Tensor x = iota({8});
  const Arg args[] = {Arg(x)};
  const auto before = cpu_pool().stats();
  {
    FailingTensorAllocator second_fails(1);
    CallOptions o;
    o.allocator = &second_fails;
    EXPECT_EQ(error_message([&] { k.call(args, o); }, ErrorKind::kOutOfMemoryError),
              "two_outs: output #1 'B': test allocator: out of memory");
  }
  EXPECT_EQ(g_live_outputs.load(), 0) << "the first output was not freed";
  EXPECT_EQ(cpu_pool().stats().leases, before.leases);  // outputs come before the lease
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
  FailingTensorAllocator never_fails(1000);
  CallOptions o;
  o.allocator = &never_fails;
  Outputs out = k.call(args, o);
  EXPECT_EQ(g_live_outputs.load(), 2);
  EXPECT_EQ(out[1].data_as<float>()[7], 16.f);
  out = Outputs();
  EXPECT_EQ(g_live_outputs.load(), 0);
}

TEST(Faults, BodyThatThrowsReleasesItsLease) {
  const Expr n = symbolic("n");
  const Kernel k = jit(prim_func("thrower")
                           .tensor("X", {n}, DataType::int32())
                           .tensor("Out", {n}, DataType::int32())
                           .tensor("W", {n}, DataType::int32())
                           .grid({n})
                           .body("cpu", "if (X(bx) < 0) throw int(X(bx));\n"
                                        "W(bx) = X(bx); Out(bx) = W(bx) * 3;")
                           .build(),
                       cpu_options({1}, {2}));
  Tensor x = empty({64}, DataType::int32());
  for (int i = 0; i < 64; ++i) x.data_as<int32_t>()[i] = i == 40 ? -7 : i;
  EXPECT_EQ(error_message([&] { k(x); }, ErrorKind::kRuntimeError),
            "thrower: block (40, 0, 0) threw a non-standard exception of type int");
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
  x.data_as<int32_t>()[40] = 40;
  Tensor out = k(x);
  EXPECT_EQ(out.data_as<int32_t>()[40], 120);
}

// ---- the host compiler ----------------------------------------------------------

// A kernel that no cache holds: Out = 2 * X. One block, so that a forked
// child never starts launch threads (ThreadSanitizer refuses threads started
// after a multi-threaded fork).
ir::PrimFunc fresh_kernel(const std::string& name) {
  const Expr n = symbolic("n");
  return prim_func(name)
      .tensor("X", {n}, DataType::int32())
      .tensor("Out", {n}, DataType::int32())
      .body("cpu", "for (int64_t i = 0; i < n; ++i) Out(i) = X(i) * 2;  // " + unique_token())
      .build();
}

void expect_fresh_kernel_works(const ir::PrimFunc& f) {
  Tensor x = empty({5}, DataType::int32());
  for (int i = 0; i < 5; ++i) x.data_as<int32_t>()[i] = i;
  Tensor out = jit(f, cpu_options({1}))(x);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out.data_as<int32_t>()[i], 2 * i);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
}

// An executable shell script at `path`.
void write_script(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path);
    out << "#!/bin/sh\n" << text;
  }
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
}

// The message with each compile's temporary directory replaced by "/T".
std::string without_tmp(const std::string& msg) {
  return std::regex_replace(msg, std::regex("/[^ ]*/tilejit-cpu-[A-Za-z0-9]{6}"), "/T");
}

class CompilerFaults : public ::testing::Test {
 protected:
  TempDir tmp_;
  // An isolated cache: a bad "binary" a fake compiler produced must not
  // reach the shared one.
  ScopedCacheDir cache_{tmp_ / "cache"};

  // The CompileError message of jit() of the fresh kernel `name` with -O1
  // and TILEJIT_CXX set to a script at tmp_/`file` (cc_) that runs
  // `script`, temporary paths shown as /T; afterwards the kernel still
  // builds with the real compiler.
  std::string fake_compiler_error(const std::string& file, const std::string& script,
                                  const std::string& name) {
    cc_ = tmp_ / file;
    write_script(cc_, script);
    const auto f = fresh_kernel(name);
    std::string message;
    {
      ScopedEnv cxx("TILEJIT_CXX", cc_.c_str());
      JitOptions o = cpu_options({1});
      o.compile.flags = {"-O1"};
      message = without_tmp(error_message([&] { jit(f, o); }, ErrorKind::kCompileError));
    }
    expect_fresh_kernel_works(f);
    return message;
  }
  std::string cc_;
};

TEST_F(CompilerFaults, MissingCompiler) {
  const auto f = fresh_kernel("no_cc");
  {
    ScopedEnv cxx("TILEJIT_CXX", "/nonexistent/c++");
    EXPECT_EQ(error_message([&] { jit(f, cpu_options({1})); }, ErrorKind::kCompileError),
              "no_cc: cannot run the C++ compiler '/nonexistent/c++': No such file or directory "
              "(set TILEJIT_CXX)");
  }
  expect_fresh_kernel_works(f);
}

TEST_F(CompilerFaults, FailingCompilerGivesItsLog) {
  const std::string message = fake_compiler_error(
      "failing-cc", "echo 'fakecc: internal compiler error: out of cheese' >&2\n"
      "echo 'second line of the log'\nexit 3\n", "bad_cc");
  EXPECT_EQ(message, "bad_cc: the CPU compiler failed (exit code 3)\ncommand: " + cc_ +
                         " -O1 -std=c++17 -fPIC -shared -I/T/include -x c++ /T/bad_cc.cpp -o /T/bad_cc.so\n"
                         "(its files are removed; set TILEJIT_KEEP_FAILED=1 to keep them and run "
                         "it again)\n"
                         "fakecc: internal compiler error: out of cheese\nsecond line of the log");
}

TEST_F(CompilerFaults, CompilerKilledBySignal) {
  const std::string message = fake_compiler_error(
      "killed-cc", "echo 'about to die'\nkill -9 $$\n", "killed_cc");
  EXPECT_EQ(message, "killed_cc: the CPU compiler failed (killed by signal 9)\ncommand: " + cc_ +
                         " -O1 -std=c++17 -fPIC -shared -I/T/include -x c++ /T/killed_cc.cpp -o /T/killed_cc.so\n"
                         "(its files are removed; set TILEJIT_KEEP_FAILED=1 to keep them and run "
                         "it again)\n"
                         "about to die");
}

TEST_F(CompilerFaults, CompilerThatWritesNothing) {
  const std::string message = fake_compiler_error(
      "lazy-cc", "echo 'did nothing'\nexit 0\n", "lazy_cc");
  EXPECT_EQ(message, "lazy_cc: the CPU compiler exited with 0 but wrote no shared object\ncommand: " +
                         cc_ + " -O1 -std=c++17 -fPIC -shared -I/T/include -x c++ /T/lazy_cc.cpp -o /T/lazy_cc.so\n"
                         "did nothing\n");
}

TEST_F(CompilerFaults, CompilerThatWritesGarbageIsNeverLoaded) {
  const std::string cc = tmp_ / "garbage-cc";
  write_script(cc, "out=\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
                   "[ -n \"$out\" ] || exit 1\nprintf 'not an elf' > \"$out\"\n");
  const auto f = fresh_kernel("garbage_cc");
  {
    ScopedEnv cxx("TILEJIT_CXX", cc.c_str());
    EXPECT_EQ(error_message([&] { jit(f, cpu_options({1})); }, ErrorKind::kRuntimeError),
              "cpu backend: cannot load the kernel binary: the binary is not an ELF file (10 "
              "bytes)");
  }
  expect_fresh_kernel_works(f);
}

// ---- the disk cache ----------------------------------------------------------------

std::vector<fs::path> entries(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

std::vector<fs::path> bin_entries(const std::string& dir) {
  std::vector<fs::path> out;
  for (const fs::path& p : entries(dir)) {
    if (p.extension() == ".bin") out.push_back(p);
  }
  return out;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST(CacheFaults, TruncatedAndCorruptEntriesAreRecompiled) {
  TempDir tmp;
  ScopedCacheDir scoped(tmp.path());
  auto& cache = runtime::CompileCache::global();
  const auto f = fresh_kernel("corrupt_me");
  expect_fresh_kernel_works(f);
  ASSERT_EQ(bin_entries(tmp.path()).size(), 1u);
  const fs::path entry = bin_entries(tmp.path())[0];
  const std::string good = read_bytes(entry);
  ASSERT_GT(good.size(), 1000u);

  struct Damage {
    const char* what;
    std::string bytes;
  };
  std::string flipped_payload = good, flipped_header = good;
  flipped_payload[good.size() / 2] ^= 0x20;
  flipped_header[3] ^= 0x01;
  const Damage damages[] = {
      {"truncated to half", good.substr(0, good.size() / 2)},
      {"truncated to the header", good.substr(0, 24)},
      {"empty", ""},
      {"a payload byte flipped", flipped_payload},
      {"a header byte flipped", flipped_header},
      {"a byte appended", good + "x"},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    cache.clear_memory();
    write_bytes(entry, d.bytes);
    const auto before = cache.stats();
    const auto disk_before = cache.disk().stats();
    expect_fresh_kernel_works(f);
    const auto after = cache.stats();
    const auto disk_after = cache.disk().stats();
    EXPECT_EQ(after.compiles - before.compiles, 1u);
    EXPECT_EQ(after.disk_hits - before.disk_hits, 0u);
    EXPECT_EQ(disk_after.corrupt - disk_before.corrupt, 1u);
    EXPECT_EQ(disk_after.stores - disk_before.stores, 1u);
    // The entry was replaced by a whole one: the next fresh jit reads it.
    EXPECT_EQ(entries(tmp.path()).size(), 1u);
    cache.clear_memory();
    expect_fresh_kernel_works(f);
    EXPECT_EQ(cache.stats().disk_hits - after.disk_hits, 1u);
    EXPECT_EQ(cache.stats().compiles, after.compiles);
  }
}

TEST(CacheFaults, ValidEntryHoldingATruncatedObjectIsNeverLoaded) {
  // The checksum matches, the bytes are half a shared object (as if the
  // compiler had been cut short): the loader refuses it and it is rebuilt.
  TempDir tmp;
  ScopedCacheDir scoped(tmp.path());
  auto& cache = runtime::CompileCache::global();
  const auto f = fresh_kernel("half_object");
  expect_fresh_kernel_works(f);
  const fs::path entry = bin_entries(tmp.path())[0];
  const std::string key = entry.stem().string();
  runtime::DiskCache disk(tmp.path());
  const std::string object = *disk.load(key);
  ASSERT_TRUE(disk.store(key, object.substr(0, object.size() / 2)));
  cache.clear_memory();
  const auto before = cache.stats();
  expect_fresh_kernel_works(f);
  EXPECT_EQ(cache.stats().compiles - before.compiles, 1u);
  EXPECT_EQ(cache.stats().disk_hits - before.disk_hits, 0u);
  // The rebuilt object replaced the entry: the next fresh jit loads it.
  cache.clear_memory();
  const auto rebuilt = cache.stats();
  expect_fresh_kernel_works(f);
  EXPECT_EQ(cache.stats().disk_hits - rebuilt.disk_hits, 1u);
  EXPECT_EQ(cache.stats().compiles, rebuilt.compiles);
}

TEST(CacheFaults, UnwritableCacheDirectoryWarnsOnceAndRunsUncached) {
  TempDir tmp;
  // A directory under a regular file can never be created (even by root,
  // for whom permission bits do not count).
  write_bytes(tmp / "file", "x");
  const std::string dir = tmp / "file/cache";
  ScopedCacheDir scoped(dir);
  auto& cache = runtime::CompileCache::global();
  const auto before = cache.stats();
  ::testing::internal::CaptureStderr();
  expect_fresh_kernel_works(fresh_kernel("no_cache_1"));
  expect_fresh_kernel_works(fresh_kernel("no_cache_2"));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tilejit: warning: cannot write the kernel cache in " + dir +
                     ": Not a directory; compiling without a disk cache\n");
  EXPECT_EQ(cache.disk().stats().store_failures, 2u);
  EXPECT_EQ(cache.stats().compiles - before.compiles, 2u);
  EXPECT_FALSE(fs::exists(dir));
}

TEST(CacheFaults, TwoProcessesCompilingOneKernelBothSucceedAndLeaveOneEntry) {
  TempDir tmp;
  const std::string dir = tmp / "cache";
  const auto f = fresh_kernel("two_procs");
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child: no gtest assertions; the exit status says how it went.
      int status = 1;
      try {
        ::close(go[1]);
        char byte;
        if (::read(go[0], &byte, 1) != 1) ::_exit(3);  // start together
        runtime::CompileCache::global().set_disk_dir(dir);
        const uint64_t compiles = runtime::CompileCache::global().stats().compiles;
        Tensor x = empty({5}, DataType::int32());
        for (int i = 0; i < 5; ++i) x.data_as<int32_t>()[i] = i;
        Tensor out = jit(f, cpu_options({1}))(x);
        status = 0;
        for (int i = 0; i < 5; ++i) status |= out.data_as<int32_t>()[i] != 2 * i;
        if (runtime::CompileCache::global().stats().compiles != compiles + 1) status = 4;
      } catch (...) {
        status = 2;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ASSERT_EQ(::write(go[1], "gg", 2), 2);
  ::close(go[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  // One whole entry, no temporary left behind, and it loads.
  const auto files = entries(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].extension(), ".bin");
  ScopedCacheDir scoped(dir);
  const auto before = runtime::CompileCache::global().stats();
  expect_fresh_kernel_works(f);
  EXPECT_EQ(runtime::CompileCache::global().stats().disk_hits - before.disk_hits, 1u);
  EXPECT_EQ(runtime::CompileCache::global().stats().compiles, before.compiles);
}

}  // namespace
}  // namespace tilejit::reliability
