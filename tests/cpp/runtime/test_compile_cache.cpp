#include "tilejit/runtime/compile_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <fstream>
#include <thread>
#include <vector>

#include "runtime/fake_backend.h"

namespace tilejit::runtime {
namespace {

using testing::FakeBackend;
using testing::FakeModule;
using testing::TempDir;

CompileCacheStats operator-(const CompileCacheStats& a, const CompileCacheStats& b) {
  return {a.memory_hits - b.memory_hits, a.disk_hits - b.disk_hits, a.compiles - b.compiles,
          a.loads - b.loads};
}

// The cache is a process-wide singleton (its constructor is private), so each
// test points it at a fresh directory, empties its memory, and reads the
// counters as differences from where the test began.
class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache().set_disk_dir(tmp_.path());
    cache().clear_memory();
    before_ = cache().stats();
  }
  void TearDown() override {
    cache().clear_memory();
    cache().set_disk_dir("");
  }
  static CompileCache& cache() { return CompileCache::global(); }
  CompileCacheStats delta() const { return cache().stats() - before_; }
  std::shared_ptr<Module> get(const std::string& source, Device device = Device::cpu(),
                              bool use_disk = true) {
    return cache().get(backend_, source, abi_, "kern", options_, device, use_disk);
  }
  std::string key(const std::string& source) {
    return CompileCache::key(backend_, source, abi_, options_, Device::cpu());
  }
  std::string entry_path(const std::string& source) { return tmp_.path() + "/" + key(source) + ".bin"; }

  TempDir tmp_;
  FakeBackend backend_;
  CompileOptions options_;
  // One pointer, one symbol, one launch (any well-formed KernelAbi will do).
  KernelAbi abi_ = [] {
    KernelAbi abi;
    abi.add(AbiArgKind::kPointer, "A", 0, 8, 8);
    abi.add(AbiArgKind::kSymbol, "n", 0, 8, 8);
    abi.launches.push_back(AbiLaunch{"kern", {1, 2, 3}, 4, {128, 1, 1}});
    return abi;
  }();
  CompileCacheStats before_;
};

TEST_F(CompileCacheTest, MemoryHit) {
  auto a = get("void kern() {}");
  auto b = get("void kern() {}");
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(static_cast<FakeModule&>(*a).binary, "BIN:void kern() {}");
  CompileCacheStats d = delta();
  EXPECT_EQ(d.compiles, 1u);
  EXPECT_EQ(d.memory_hits, 1u);
  EXPECT_EQ(d.disk_hits, 0u);
  EXPECT_EQ(d.loads, 1u);
  EXPECT_EQ(backend_.compile_calls.load(), 1);
  EXPECT_EQ(cache().disk().stats().stores, 1u);
}

TEST_F(CompileCacheTest, DiskHitAfterMemoryIsCleared) {
  get("src A");
  cache().clear_memory();
  auto m = get("src A");
  EXPECT_EQ(static_cast<FakeModule&>(*m).binary, "BIN:src A");
  CompileCacheStats d = delta();
  EXPECT_EQ(d.compiles, 1u);
  EXPECT_EQ(d.disk_hits, 1u);
  EXPECT_EQ(d.loads, 2u);
  EXPECT_EQ(backend_.compile_calls.load(), 1);
  EXPECT_EQ(backend_.load_calls.load(), 2);
}

TEST_F(CompileCacheTest, DiskHitFromAnotherCacheOnTheSameDirectory) {
  // What a second process sees: the entry written through one DiskCache is
  // found through a fresh one.
  get("src B");
  cache().set_disk_dir(tmp_.path());
  cache().clear_memory();
  get("src B");
  EXPECT_EQ(delta().disk_hits, 1u);
  EXPECT_EQ(delta().compiles, 1u);
  EXPECT_EQ(cache().disk().stats().hits, 1u);
}

TEST_F(CompileCacheTest, WithoutDiskEveryFreshGetCompiles) {
  get("src C", Device::cpu(), /*use_disk=*/false);
  EXPECT_FALSE(std::filesystem::exists(entry_path("src C")));
  cache().clear_memory();
  get("src C", Device::cpu(), /*use_disk=*/false);
  EXPECT_EQ(delta().compiles, 2u);

  cache().set_disk_dir("");  // disabled cache
  cache().clear_memory();
  get("src C");
  EXPECT_EQ(delta().compiles, 3u);
  EXPECT_EQ(delta().disk_hits, 0u);
}

TEST_F(CompileCacheTest, UntrustedDirectoryIsNotUsedAndKernelsStillBuild) {
  // Note [Trusting the cache]: a directory others can write is neither read
  // nor written; every fresh get compiles, and works.
  ASSERT_EQ(::chmod(tmp_.path().c_str(), 0777), 0);
  ::testing::internal::CaptureStderr();
  auto m = get("src U");
  cache().clear_memory();
  m = get("src U");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(static_cast<FakeModule&>(*m).binary, "BIN:src U");
  EXPECT_EQ(delta().compiles, 2u);
  EXPECT_EQ(delta().disk_hits, 0u);
  EXPECT_FALSE(std::filesystem::exists(entry_path("src U")));
  EXPECT_EQ(err, "tilejit: not using the disk cache at " + tmp_.path() +
                     ": it is writable by group or others (mode 0777)\n");
  EXPECT_EQ(cache().disk().stats().untrusted, 4u);  // two loads, two stores
}

TEST_F(CompileCacheTest, ModulesArePerDevice) {
  auto a = get("src D", Device::cuda(0));
  auto b = get("src D", Device::cuda(1));
  EXPECT_NE(a.get(), b.get());
  // One binary serves both devices: the second is loaded from disk.
  EXPECT_EQ(delta().compiles, 1u);
  EXPECT_EQ(delta().disk_hits, 1u);
  EXPECT_EQ(delta().memory_hits, 0u);
}

TEST_F(CompileCacheTest, BinaryThatDoesNotLoadIsRecompiledAndReplaced) {
  // A whole, checksummed entry whose bytes the backend rejects.
  ASSERT_TRUE(cache().disk().store(key("src E"), abi_.serialize() + "not a binary"));
  auto m = get("src E");
  EXPECT_EQ(static_cast<FakeModule&>(*m).binary, "BIN:src E");
  CompileCacheStats d = delta();
  EXPECT_EQ(d.compiles, 1u);
  EXPECT_EQ(d.disk_hits, 0u);
  EXPECT_EQ(d.loads, 1u);
  EXPECT_EQ(backend_.load_calls.load(), 2);  // the rejected one, then the new one
  // The entry now holds the good binary.
  cache().clear_memory();
  get("src E");
  EXPECT_EQ(delta().disk_hits, 1u);
  EXPECT_EQ(delta().compiles, 1u);
}

TEST_F(CompileCacheTest, TruncatedEntryIsRecompiled) {
  get("src F");
  const std::string path = entry_path("src F");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 2);
  cache().clear_memory();
  get("src F");
  CompileCacheStats d = delta();
  EXPECT_EQ(d.compiles, 2u);
  EXPECT_EQ(d.disk_hits, 0u);
  EXPECT_EQ(cache().disk().stats().corrupt, 1u);
  EXPECT_EQ(cache().disk().stats().stores, 2u);
}

TEST_F(CompileCacheTest, ConcurrentGetsCompileOnce) {
  backend_.compile_delay_ms = 50;  // keep the builder busy while the others arrive
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<Module>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] { got[t] = get("src G"); });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(got[t].get(), got[0].get());
  EXPECT_EQ(backend_.compile_calls.load(), 1);
  CompileCacheStats d = delta();
  EXPECT_EQ(d.compiles, 1u);
  EXPECT_EQ(d.loads, 1u);
  EXPECT_EQ(d.memory_hits, uint64_t(kThreads - 1));
}

TEST_F(CompileCacheTest, DifferentKeysCompileConcurrently) {
  backend_.compile_delay_ms = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { get("src H" + std::to_string(t)); });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(delta().compiles, 4u);
}

TEST_F(CompileCacheTest, CompileErrorPropagatesAndALaterCallRetries) {
  try {
    get("#error nope");
    ADD_FAILURE() << "expected CompileError";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCompileError);
    EXPECT_EQ(e.message(), "fakecc: kern: #error in source");
  }
  EXPECT_THROW(get("#error nope"), Error);
  EXPECT_EQ(backend_.compile_calls.load(), 2);
  EXPECT_EQ(delta().compiles, 0u);
}

TEST_F(CompileCacheTest, KeyCoversTargetToolchainAndSource) {
  FakeBackend other("fake2");
  CompileOptions flagged;
  flagged.extra_flags = {"-DX"};
  KernelAbi moved = abi_;
  moved.launches[0].grid[0] = 7;  // the same source for a plan with other result indices
  const std::string k = CompileCache::key(backend_, "s", abi_, options_, Device::cpu());
  EXPECT_EQ(k.size(), 32u);
  EXPECT_EQ(k, CompileCache::key(backend_, "s", abi_, options_, Device::cpu()));
  EXPECT_NE(k, CompileCache::key(backend_, "t", abi_, options_, Device::cpu()));
  EXPECT_NE(k, CompileCache::key(other, "s", abi_, options_, Device::cpu()));
  EXPECT_NE(k, CompileCache::key(backend_, "s", abi_, flagged, Device::cpu()));
  EXPECT_NE(k, CompileCache::key(backend_, "s", moved, options_, Device::cpu()));
  // Separators keep the fields apart.
  EXPECT_EQ(k, hash_hex(std::string("fake\0fakecc-1\0", 14) + abi_.serialize() +
                        std::string("\0s", 2)));
}

// Note [ABI beside the binary].
TEST_F(CompileCacheTest, EntryHoldsTheAbiBesideTheBinary) {
  get("src J");
  cache().clear_memory();
  auto m = get("src J");
  EXPECT_EQ(delta().disk_hits, 1u);
  EXPECT_EQ(static_cast<FakeModule&>(*m).abi, abi_);  // the stored one, read back
  const std::optional<std::string> entry = cache().disk().load(key("src J"));
  ASSERT_TRUE(entry.has_value());
  size_t consumed = 0;
  EXPECT_EQ(KernelAbi::deserialize(*entry, &consumed), abi_);
  EXPECT_EQ(entry->substr(consumed), "BIN:src J");
}

TEST_F(CompileCacheTest, CorruptAbiIsRemovedAndRecompiled) {
  // A whole, checksummed entry whose KernelAbi fails its own checksum.
  std::string stored = abi_.serialize();
  stored[stored.size() - 3] ^= 0x40;
  ASSERT_TRUE(cache().disk().store(key("src K"), stored + "BIN:src K"));
  auto m = get("src K");
  EXPECT_EQ(static_cast<FakeModule&>(*m).abi, abi_);
  EXPECT_EQ(delta().disk_hits, 0u);
  EXPECT_EQ(delta().compiles, 1u);
  EXPECT_EQ(backend_.load_calls.load(), 1);  // the bad entry never reached load()
  EXPECT_EQ(cache().disk().stats().corrupt, 1u);
  // Replaced by a good one.
  cache().clear_memory();
  get("src K");
  EXPECT_EQ(delta().disk_hits, 1u);
  EXPECT_EQ(delta().compiles, 1u);
}

TEST_F(CompileCacheTest, MismatchingAbiIsRemovedAndRecompiled) {
  // A sound KernelAbi, but not this kernel's (an older layout, say).
  KernelAbi other = abi_;
  other.args[0].kind = AbiArgKind::kSymbol;
  ASSERT_TRUE(cache().disk().store(key("src L"), other.serialize() + "BIN:src L"));
  // A payload without any KernelAbi (an entry of an older tilejit).
  ASSERT_TRUE(cache().disk().store(key("src M"), "BIN:src M"));
  get("src L");
  get("src M");
  EXPECT_EQ(delta().disk_hits, 0u);
  EXPECT_EQ(delta().compiles, 2u);
  EXPECT_EQ(cache().disk().stats().corrupt, 2u);
  EXPECT_EQ(KernelAbi::deserialize(*cache().disk().load(key("src L"))), abi_);
}

TEST_F(CompileCacheTest, ClearMemoryLeavesHeldModulesAlive) {
  auto m = get("src I");
  cache().clear_memory();
  EXPECT_EQ(m.use_count(), 1);
  m->launch(LaunchParams{});
  EXPECT_EQ(static_cast<FakeModule&>(*m).launches.load(), 1);
}

}  // namespace
}  // namespace tilejit::runtime
