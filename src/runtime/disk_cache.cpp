// DiskCache: see disk_cache.h for the entry format and its guarantees.
#include "tilejit/runtime/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tilejit/core/error.h"

namespace tilejit::runtime {
namespace {

// "TJITBIN" and the format version; a new layout gets a new last byte, so
// entries of another version read as corrupt and are replaced.
constexpr char kMagic[8] = {'T', 'J', 'I', 'T', 'B', 'I', 'N', '1'};
constexpr size_t kHeaderBytes = 24;  // magic, payload size, payload checksum

// ---- hashing -------------------------------------------------------------
//
// Two 64-bit lanes, each absorbing every 8-byte little-endian word of the
// input through its own bijective mixer, then cross-mixed with the length.
// Not cryptographic: it names cache entries and detects torn or corrupted
// files, which needs good avalanche and stability, not collision resistance
// against an adversary. Byte order is fixed, so names agree across machines.

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// A bijective 64-bit avalanche step (xor-shift / multiply, the shape of the
// splitmix64 output function).
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

uint64_t load_le64(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

void store_le64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

struct Hash128 {
  uint64_t lo, hi;
};

Hash128 hash128(std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t n = data.size();
  uint64_t a = 0x6a09e667f3bcc908ULL;  // arbitrary distinct odd seeds
  uint64_t b = 0xbb67ae8584caa73bULL;
  for (size_t i = 0; i < n; i += 8) {
    // The tail word is zero-padded; the length mixed in below tells "ab"
    // from "ab\0".
    uint64_t w = load_le64(p + i, n - i < 8 ? n - i : 8);
    a = rotl(a ^ mix64(w + 0x3c6ef372fe94f82bULL), 29) * 0x9e3779b97f4a7c15ULL;
    b = (rotl(b, 31) + mix64(w ^ 0xa54ff53a5f1d36f1ULL)) * 0xd6e8feb86659fd93ULL;
  }
  a = mix64(a ^ n ^ rotl(b, 17));
  b = mix64(b + a + (uint64_t{n} << 1));
  return {a, b};
}

// ---- file I/O --------------------------------------------------------------

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Reads the whole of `fd` (whose size fstat gave) into `out`; false on an I/O
// error. A file that shrinks or grows while read comes back at its read size
// and fails the header check.
bool read_all(int fd, size_t expected, std::string* out) {
  out->resize(expected);
  size_t got = 0;
  while (got < expected) {
    ssize_t r = ::read(fd, out->data() + got, expected - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (r == 0) break;
    got += size_t(r);
  }
  out->resize(got);
  return true;
}

bool valid_key(const std::string& key) {
  if (key.empty() || key[0] == '.') return false;
  for (char c : key) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Owns a file descriptor.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Makes `dir` and the missing directories above it, each with mode 0700;
// 0 or an errno. Existing directories are left as they are (the trust
// check, not this, decides whether one is used).
int make_private_dirs(const std::string& dir) {
  for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string prefix = dir.substr(0, at);
    if (!prefix.empty() && prefix.back() != '/' && ::mkdir(prefix.c_str(), 0700) != 0 &&
        errno != EEXIST) {
      return errno;
    }
    if (at == std::string::npos) return 0;
  }
}

// The cache directory, opened for the *at() calls; -1 with errno set when it
// cannot be opened. A symbolic link to a directory is followed: the check is
// of what was opened.
int open_dir(const std::string& dir) {
  return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::string hash_hex(std::string_view data) {
  Hash128 h = hash128(data);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[i] = kDigits[(h.lo >> (60 - 4 * i)) & 0xf];
    out[16 + i] = kDigits[(h.hi >> (60 - 4 * i)) & 0xf];
  }
  return out;
}

uint64_t hash64(std::string_view data) { return hash128(data).lo; }

DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)) {}

std::string DiskCache::distrust_reason(unsigned owner_uid, unsigned mode) {
  char buf[160];
  if (owner_uid != unsigned(::geteuid())) {
    std::snprintf(buf, sizeof buf, "it is owned by uid %u, not by this user (uid %u)", owner_uid,
                  unsigned(::geteuid()));
    return buf;
  }
  if ((mode & (S_IWGRP | S_IWOTH)) != 0) {
    std::snprintf(buf, sizeof buf, "it is writable by group or others (mode %04o)", mode & 07777);
    return buf;
  }
  return "";
}

void DiskCache::refuse(const std::string& what, const std::string& reason) {
  bool warn;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.untrusted;
    warn = !warned_untrusted_;
    warned_untrusted_ = true;
  }
  // Once per cache, as for an unwritable directory; stderr, never stdout.
  if (warn) std::fprintf(stderr, "tilejit: not using the disk cache %s: %s\n", what.c_str(), reason.c_str());
}

std::string DiskCache::default_dir() {
  std::string dir = env_or_empty("TILEJIT_CACHE_DIR");
  if (!dir.empty()) return dir;
  dir = env_or_empty("XDG_CACHE_HOME");
  if (!dir.empty()) return dir + "/tilejit";
  dir = env_or_empty("HOME");
  if (!dir.empty()) return dir + "/.cache/tilejit";
  return {};
}

std::optional<std::string> DiskCache::load(const std::string& key) {
  if (!enabled()) return std::nullopt;
  TILEJIT_CHECK(valid_key(key), kInternalError) << "disk cache: invalid key '" << key << "'";
  const std::string name = key + ".bin";
  const std::string path = dir_ + "/" + name;
  auto miss = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.misses;
    return std::nullopt;
  };

  // Note [Trusting the cache]. A directory that does not exist (yet) is a
  // miss.
  Fd dir{open_dir(dir_)};
  struct stat st {};
  if (dir.fd < 0 || ::fstat(dir.fd, &st) != 0) return miss();
  if (std::string why = distrust_reason(st.st_uid, st.st_mode); !why.empty()) {
    refuse("at " + dir_, why);
    return std::nullopt;
  }
  // O_NONBLOCK: a FIFO in place of an entry must not block the open.
  Fd fd{::openat(dir.fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)};
  if (fd.fd < 0) {
    if (errno == ELOOP) {
      refuse("entry " + path, "it is a symbolic link");
      return std::nullopt;
    }
    // A file we cannot open is not evidence of corruption (it may be a
    // permission problem or a transient I/O error): a miss, left in place.
    return miss();
  }
  if (::fstat(fd.fd, &st) != 0) return miss();
  if (!S_ISREG(st.st_mode)) {
    refuse("entry " + path, "it is not a regular file");
    return std::nullopt;
  }
  if (std::string why = distrust_reason(st.st_uid, st.st_mode); !why.empty()) {
    refuse("entry " + path, why);
    return std::nullopt;
  }
  std::string file;
  if (!read_all(fd.fd, size_t(st.st_size), &file)) return miss();

  const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());
  bool ok = file.size() >= kHeaderBytes && std::memcmp(file.data(), kMagic, 8) == 0 &&
            load_le64(bytes + 8, 8) == file.size() - kHeaderBytes;
  if (ok) {
    std::string_view payload(file.data() + kHeaderBytes, file.size() - kHeaderBytes);
    ok = load_le64(bytes + 16, 8) == hash64(payload);
  }
  if (!ok) {
    // Remove it only if the name still refers to the file we read: another
    // process may have renamed a good entry over it meanwhile.
    struct stat now {};
    if (::fstatat(dir.fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        now.st_ino == st.st_ino && now.st_dev == st.st_dev) {
      ::unlinkat(dir.fd, name.c_str(), 0);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.corrupt;
    return std::nullopt;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.hits;
  }
  file.erase(0, kHeaderBytes);
  return file;
}

bool DiskCache::store(const std::string& key, std::string_view payload) {
  if (!enabled()) return false;
  TILEJIT_CHECK(valid_key(key), kInternalError) << "disk cache: invalid key '" << key << "'";

  auto fail = [&](int err) {
    bool warn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.store_failures;
      warn = !warned_;
      warned_ = true;
    }
    // Once per cache: a read-only or full disk would otherwise repeat this
    // for every kernel. stderr, never stdout (STYLE.md).
    if (warn) {
      std::fprintf(stderr,
                   "tilejit: warning: cannot write the kernel cache in %s: %s; compiling without "
                   "a disk cache\n",
                   dir_.c_str(), std::strerror(err));
    }
    return false;
  };

  if (int err = make_private_dirs(dir_); err != 0) return fail(err);
  Fd dir{open_dir(dir_)};
  struct stat st {};
  if (dir.fd < 0 || ::fstat(dir.fd, &st) != 0) return fail(errno);
  if (std::string why = distrust_reason(st.st_uid, st.st_mode); !why.empty()) {
    refuse("at " + dir_, why);
    return false;
  }

  unsigned char header[kHeaderBytes];
  std::memcpy(header, kMagic, 8);
  store_le64(header + 8, payload.size());
  store_le64(header + 16, hash64(payload));

  // The temporary is hidden (leading dot) and unique per writer, so
  // concurrent writers of one key never share a file (O_EXCL); renameat()
  // then replaces the entry atomically (a symbolic link in its place
  // included, never its target) and the last writer wins with a whole entry.
  static std::atomic<uint64_t> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = "." + key + ".tmp." + std::to_string(::getpid()) + "." +
          std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
    fd = ::openat(dir.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return fail(errno);
  // Readable as any cache file; never writable by anyone else.
  ::fchmod(fd, 0644);
  bool ok = write_all(fd, reinterpret_cast<const char*>(header), kHeaderBytes) &&
            write_all(fd, payload.data(), payload.size()) && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  // No fsync of the directory: after a crash the entry may be missing, which
  // is a miss; it can never be torn, which the checksum would catch anyway.
  if (ok && ::renameat(dir.fd, tmp.c_str(), dir.fd, (key + ".bin").c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlinkat(dir.fd, tmp.c_str(), 0);
    return fail(err);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.stores;
  return true;
}

void DiskCache::discard(const std::string& key) {
  if (!enabled()) return;
  TILEJIT_CHECK(valid_key(key), kInternalError) << "disk cache: invalid key '" << key << "'";
  ::unlink((dir_ + "/" + key + ".bin").c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.corrupt;
}

DiskCacheStats DiskCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tilejit::runtime
