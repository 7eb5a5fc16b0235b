// DiskCache: compiled binaries on disk, keyed by a hash of everything that
// decides them.
//
// An entry is one file <dir>/<key>.bin: a header (magic, format version,
// payload size, payload checksum) followed by the payload. It is written to a
// temporary file in the same directory, flushed, and renamed over the final
// name, so a reader sees either no entry or a whole one. A reader verifies
// the header and the checksum; an entry that fails is removed and counted,
// never returned: a truncated or corrupt binary is recompiled, never loaded.
// Two processes storing the same key both succeed and leave one entry.
//
// Note [Trusting the cache]
// A CPU entry is a shared object that is loaded into the process, so the
// cache trusts only what its own user can have written; a checksum does not
// stop someone who can write the directory. The directory (and every one
// that store() creates on the way) is made with mode 0700. A directory, or
// an entry, is used only when it is owned by the effective user and not
// writable by group or others; entries are opened without following
// symbolic links and checked on the opened descriptor (fstat), and every
// file operation is relative to the directory's descriptor, so no name can
// be swapped between the check and the use. Anything else is not used: a
// warning on stderr (once per cache) names the path and the reason, it is
// counted in stats().untrusted, and the kernel compiles without it.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace tilejit::runtime {

struct DiskCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;        // no entry
  uint64_t corrupt = 0;       // entries rejected (and removed) on load
  uint64_t stores = 0;
  uint64_t store_failures = 0;  // unwritable directory, full disk, ...
  uint64_t untrusted = 0;  // loads and stores refused: Note [Trusting the cache]
};

class DiskCache {
 public:
  /// `dir` is created (mode 0700) on first store. An empty `dir` disables
  /// the cache.
  explicit DiskCache(std::string dir);

  /// TILEJIT_CACHE_DIR, else $XDG_CACHE_HOME/tilejit, else ~/.cache/tilejit.
  static std::string default_dir();

  /// The payload stored under `key`, or nullopt: no entry, or one that is
  /// corrupt or not trusted (Note [Trusting the cache]).
  std::optional<std::string> load(const std::string& key);
  /// Stores atomically; returns false (and warns once on stderr) when the
  /// directory cannot be written or is not trusted. Never throws for I/O
  /// failures.
  bool store(const std::string& key, std::string_view payload);
  /// Removes the entry under `key` and counts it corrupt: for a payload that
  /// passed the checksum but that its reader rejects (Note [ABI beside the
  /// binary] in compile_cache.h). A missing entry is no error.
  void discard(const std::string& key);

  /// Why a file or directory with this owner and mode is not trusted
  /// ("it is writable by group or others (mode 0775)"), or "" when it is.
  static std::string distrust_reason(unsigned owner_uid, unsigned mode);

  const std::string& dir() const noexcept { return dir_; }
  bool enabled() const noexcept { return !dir_.empty(); }
  DiskCacheStats stats() const;

 private:
  std::string dir_;
  mutable std::mutex mutex_;
  DiskCacheStats stats_;
  bool warned_ = false;
  bool warned_untrusted_ = false;

  void refuse(const std::string& what, const std::string& reason);
};

/// A 128-bit non-cryptographic hash of `data` as 32 hex digits; stable across
/// processes, builds and machines (it names disk-cache entries).
std::string hash_hex(std::string_view data);
/// A 64-bit checksum of `data` (the same function, truncated).
uint64_t hash64(std::string_view data);

}  // namespace tilejit::runtime
