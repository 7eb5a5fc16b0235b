#include "tilejit/runtime/disk_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "runtime/fake_backend.h"

namespace tilejit::runtime {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A payload with every byte value, NULs included.
std::string binary_payload(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((i * 131 + 7) & 0xff);
  return s;
}

TEST(Hash, StableAndSensitive) {
  // Pinned: these name entries on disk, so a change here invalidates every
  // user's cache and must be deliberate (bump the magic with it).
  EXPECT_EQ(hash_hex(""), "3b281676fa269f67c84419f38c201600");
  EXPECT_EQ(hash_hex("tilejit"), "635c9cc26eef4578d5673da1fecd84fd");
  EXPECT_EQ(hash_hex("abc").size(), 32u);
  EXPECT_EQ(hash64("tilejit"), std::stoull(hash_hex("tilejit").substr(0, 16), nullptr, 16));

  // Trailing NULs, every length up to a few words, and single-bit changes
  // all give distinct names.
  std::set<std::string> seen;
  std::string s;
  for (int n = 0; n < 40; ++n) {
    EXPECT_TRUE(seen.insert(hash_hex(s)).second) << "length " << n;
    s.push_back('\0');
  }
  std::string base = binary_payload(100);
  for (size_t byte = 0; byte < base.size(); byte += 7) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string t = base;
      t[byte] = char(t[byte] ^ (1 << bit));
      EXPECT_TRUE(seen.insert(hash_hex(t)).second) << byte << ":" << bit;
    }
  }
}

TEST(DiskCache, RoundTripAndMiss) {
  TempDir tmp;
  DiskCache cache(tmp / "nested/dir");  // created on first store
  EXPECT_TRUE(cache.enabled());
  EXPECT_EQ(cache.load("k0"), std::nullopt);
  std::string payload = binary_payload(10000);
  EXPECT_TRUE(cache.store("k0", payload));
  EXPECT_EQ(cache.load("k0"), payload);
  EXPECT_TRUE(cache.store("empty", ""));
  EXPECT_EQ(cache.load("empty"), std::string());
  DiskCacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.stores, 2u);
  EXPECT_EQ(s.corrupt, 0u);
  EXPECT_EQ(s.store_failures, 0u);
  // One entry per key, no temporaries left behind.
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(tmp / "nested/dir")) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"empty.bin", "k0.bin"}));
  // A second cache on the same directory (another process) sees the entry.
  DiskCache other(tmp / "nested/dir");
  EXPECT_EQ(other.load("k0"), payload);
}

TEST(DiskCache, EntryLayout) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.store("k", "xyz"));
  std::string file = read_file(tmp / "k.bin");
  ASSERT_EQ(file.size(), 24u + 3);
  EXPECT_EQ(file.substr(0, 8), "TJITBIN1");
  EXPECT_EQ(file.substr(8, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  uint64_t sum = hash64("xyz");
  std::string le(8, '\0');
  for (int i = 0; i < 8; ++i) le[i] = char(sum >> (8 * i));
  EXPECT_EQ(file.substr(16, 8), le);
  EXPECT_EQ(file.substr(24), "xyz");
}

TEST(DiskCache, DisabledWithAnEmptyDir) {
  DiskCache cache("");
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.store("k", "x"));
  EXPECT_EQ(cache.load("k"), std::nullopt);
  EXPECT_EQ(cache.stats().store_failures, 0u);
}

// Damages k.bin with `damage`, then expects a rejected, removed entry.
template <typename Damage>
void expect_rejected(Damage&& damage) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.store("k", binary_payload(1000)));
  std::string path = tmp / "k.bin";
  std::string file = read_file(path);
  damage(file);
  write_file(path, file);
  EXPECT_EQ(cache.load("k"), std::nullopt);
  EXPECT_EQ(cache.stats().corrupt, 1u);
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_FALSE(fs::exists(path));
  // The next load is a plain miss; a new store works.
  EXPECT_EQ(cache.load("k"), std::nullopt);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_TRUE(cache.store("k", "again"));
  EXPECT_EQ(cache.load("k"), "again");
}

TEST(DiskCache, TruncatedEntryIsRejected) {
  expect_rejected([](std::string& f) { f.resize(f.size() - 1); });
  expect_rejected([](std::string& f) { f.resize(10); });  // inside the header
  expect_rejected([](std::string& f) { f.clear(); });
}

TEST(DiskCache, FlippedPayloadByteIsRejected) {
  expect_rejected([](std::string& f) { f[500] = char(f[500] ^ 0x10); });
}

TEST(DiskCache, WrongMagicIsRejected) {
  expect_rejected([](std::string& f) { f[7] = '0'; });  // another format version
}

TEST(DiskCache, WrongSizeOrChecksumFieldIsRejected) {
  expect_rejected([](std::string& f) { f[8] = char(f[8] + 1); });
  expect_rejected([](std::string& f) { f[16] = char(f[16] ^ 1); });
  expect_rejected([](std::string& f) { f += "trailing"; });
}

TEST(DiskCache, UnwritableDirectoryWarnsOnce) {
  TempDir tmp;
  // A directory under a regular file can never be made, even by root (for
  // whom chmod 0555 would not stop a write).
  write_file(tmp / "file", "x");
  const std::string dir = tmp / "file/sub";
  DiskCache cache(dir);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.store("k", "payload"));
  EXPECT_FALSE(cache.store("k2", "payload"));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "tilejit: warning: cannot write the kernel cache in " + dir +
                     ": Not a directory; compiling without a disk cache\n");
  DiskCacheStats s = cache.stats();
  EXPECT_EQ(s.store_failures, 2u);
  EXPECT_EQ(s.stores, 0u);
  EXPECT_EQ(cache.load("k"), std::nullopt);  // a miss, not an error
}

// ---- Note [Trusting the cache] ----------------------------------------------

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Runs `f` and returns what it wrote to stderr.
template <typename F>
std::string stderr_of(F&& f) {
  ::testing::internal::CaptureStderr();
  f();
  return ::testing::internal::GetCapturedStderr();
}

TEST(DiskCacheTrust, CreatesItsDirectoriesPrivate) {
  TempDir tmp;
  const mode_t old_umask = ::umask(022);
  DiskCache cache(tmp / "made/by/store");
  EXPECT_TRUE(cache.store("k", "x"));
  ::umask(old_umask);
  // Every directory store() made, not only the last one; the temporary
  // directory above them is left as it was.
  EXPECT_EQ(mode_of(tmp / "made"), 0700u);
  EXPECT_EQ(mode_of(tmp / "made/by"), 0700u);
  EXPECT_EQ(mode_of(tmp / "made/by/store"), 0700u);
  EXPECT_EQ(mode_of(tmp / "made/by/store/k.bin"), 0644u);
  EXPECT_EQ(cache.load("k"), "x");
  EXPECT_EQ(cache.stats().untrusted, 0u);
}

TEST(DiskCacheTrust, ReasonsForNotTrusting) {
  const unsigned me = ::geteuid();
  EXPECT_EQ(DiskCache::distrust_reason(me, S_IFDIR | 0700), "");
  EXPECT_EQ(DiskCache::distrust_reason(me, S_IFDIR | 0755), "");
  EXPECT_EQ(DiskCache::distrust_reason(me, S_IFREG | 0644), "");
  EXPECT_EQ(DiskCache::distrust_reason(me, S_IFDIR | 0775),
            "it is writable by group or others (mode 0775)");
  EXPECT_EQ(DiskCache::distrust_reason(me, S_IFDIR | 01777),
            "it is writable by group or others (mode 1777)");
  // Another owner: the tests run as root and cannot chown a directory to
  // someone else and still have it mean anything, so the reason is checked
  // here, and the directory tests use a group-writable one as the stand-in.
  EXPECT_EQ(DiskCache::distrust_reason(me + 1, S_IFDIR | 0700),
            "it is owned by uid " + std::to_string(me + 1) + ", not by this user (uid " +
                std::to_string(me) + ")");
}

// A cache whose directory has `mode` (set after a good entry was stored) is
// not used: the entry is not loaded, nothing is stored, one warning.
void expect_directory_refused(unsigned mode, const std::string& mode_text) {
  TempDir tmp;
  const std::string dir = tmp / "cache";
  {
    DiskCache writer(dir);
    ASSERT_TRUE(writer.store("k", "payload"));
  }
  ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
  DiskCache cache(dir);
  const std::string err = stderr_of([&] {
    EXPECT_EQ(cache.load("k"), std::nullopt);
    EXPECT_FALSE(cache.store("k2", "payload"));
    EXPECT_EQ(cache.load("k"), std::nullopt);
  });
  EXPECT_EQ(err, "tilejit: not using the disk cache at " + dir +
                     ": it is writable by group or others (mode " + mode_text + ")\n");
  DiskCacheStats s = cache.stats();
  EXPECT_EQ(s.untrusted, 3u);
  EXPECT_EQ(s.hits, 0u);
  EXPECT_EQ(s.stores, 0u);
  EXPECT_EQ(s.store_failures, 0u);
  EXPECT_FALSE(fs::exists(dir + "/k2.bin"));
  // Made private again, it is used again.
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  EXPECT_EQ(cache.load("k"), "payload");
}

TEST(DiskCacheTrust, GroupWritableDirectoryIsNotUsed) {
  // The stand-in for a directory of another user (see ReasonsForNotTrusting).
  expect_directory_refused(0775, "0775");
}

TEST(DiskCacheTrust, WorldWritableDirectoryIsNotUsed) {
  expect_directory_refused(0777, "0777");
  expect_directory_refused(01777, "1777");  // sticky, as /tmp: others still add entries
}

TEST(DiskCacheTrust, SymbolicLinkInPlaceOfAnEntryIsNotFollowed) {
  TempDir tmp;
  // A whole, valid entry elsewhere, and a link to it under the key's name.
  DiskCache elsewhere(tmp / "elsewhere");
  ASSERT_TRUE(elsewhere.store("k", "planted"));
  DiskCache cache(tmp / "cache");
  ASSERT_TRUE(cache.store("other", "x"));  // makes the directory
  const std::string entry = tmp / "cache/k.bin";
  fs::create_symlink(tmp / "elsewhere/k.bin", entry);
  const std::string err = stderr_of([&] {
    EXPECT_EQ(cache.load("k"), std::nullopt);
    EXPECT_EQ(cache.load("k"), std::nullopt);  // warned once
  });
  EXPECT_EQ(err, "tilejit: not using the disk cache entry " + entry + ": it is a symbolic link\n");
  EXPECT_EQ(cache.stats().untrusted, 2u);
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_EQ(cache.stats().corrupt, 0u);
  EXPECT_TRUE(fs::is_symlink(entry));  // not removed: it is not an entry of ours
  // The recompiled binary replaces the link, not the file it points to.
  EXPECT_TRUE(cache.store("k", "recompiled"));
  EXPECT_FALSE(fs::is_symlink(entry));
  EXPECT_EQ(cache.load("k"), "recompiled");
  EXPECT_EQ(elsewhere.load("k"), "planted");
}

TEST(DiskCacheTrust, EntryWritableByOthersOrNotAFileIsNotUsed) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  ASSERT_TRUE(cache.store("k", "payload"));
  const std::string entry = tmp / "k.bin";
  ASSERT_EQ(::chmod(entry.c_str(), 0666), 0);
  std::string err = stderr_of([&] { EXPECT_EQ(cache.load("k"), std::nullopt); });
  EXPECT_EQ(err, "tilejit: not using the disk cache entry " + entry +
                     ": it is writable by group or others (mode 0666)\n");
  EXPECT_EQ(cache.stats().untrusted, 1u);
  // A FIFO in its place neither blocks the load nor is read.
  fs::remove(entry);
  ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0);
  DiskCache fresh(tmp.path());
  err = stderr_of([&] { EXPECT_EQ(fresh.load("k"), std::nullopt); });
  EXPECT_EQ(err, "tilejit: not using the disk cache entry " + entry + ": it is not a regular file\n");
  EXPECT_TRUE(fresh.store("k", "again"));
  EXPECT_EQ(fresh.load("k"), "again");
}

TEST(DiskCache, DefaultDirFollowsTheEnvironment) {
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v) {
      ::setenv(name, v->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  };
  auto cache_dir = saved("TILEJIT_CACHE_DIR"), xdg = saved("XDG_CACHE_HOME"),
       home = saved("HOME");

  ::setenv("TILEJIT_CACHE_DIR", "/a/tj", 1);
  ::setenv("XDG_CACHE_HOME", "/b/xdg", 1);
  ::setenv("HOME", "/c/home", 1);
  EXPECT_EQ(DiskCache::default_dir(), "/a/tj");
  ::unsetenv("TILEJIT_CACHE_DIR");
  EXPECT_EQ(DiskCache::default_dir(), "/b/xdg/tilejit");
  ::setenv("XDG_CACHE_HOME", "", 1);
  EXPECT_EQ(DiskCache::default_dir(), "/c/home/.cache/tilejit");
  ::unsetenv("HOME");
  EXPECT_EQ(DiskCache::default_dir(), "");

  restore("TILEJIT_CACHE_DIR", cache_dir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

TEST(DiskCache, ConcurrentThreadsStoringOneKeyLeaveOneEntry) {
  TempDir tmp;
  DiskCache cache(tmp.path());
  const std::string payload = binary_payload(64 * 1024);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        EXPECT_TRUE(cache.store("same", payload));
        // A reader racing the writers sees a whole entry or none.
        auto got = cache.load("same");
        if (got) {
          EXPECT_EQ(got->size(), payload.size());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(cache.stats().corrupt, 0u);
  EXPECT_EQ(cache.stats().stores, 200u);
  EXPECT_EQ(cache.load("same"), payload);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(DiskCache, ConcurrentProcessesStoringOneKeyLeaveOneEntry) {
  TempDir tmp;
  const std::string payload = binary_payload(256 * 1024);
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child: no gtest assertions (they would report in the wrong
      // process); the exit status says how it went.
      DiskCache cache(tmp.path());
      int bad = 0;
      for (int i = 0; i < 50; ++i) {
        if (!cache.store("shared", payload)) ++bad;
        auto got = cache.load("shared");
        if (got && *got != payload) ++bad;
      }
      if (cache.stats().corrupt != 0) ++bad;
      ::_exit(bad == 0 ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  DiskCache cache(tmp.path());
  EXPECT_EQ(cache.load("shared"), payload);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

}  // namespace
}  // namespace tilejit::runtime
