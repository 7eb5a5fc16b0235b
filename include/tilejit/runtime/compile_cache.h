// CompileCache: source -> loaded Module, through an in-memory cache of
// modules (per device) and the DiskCache of binaries.
//
// Note [ABI beside the binary]
// A disk entry's payload is the KernelAbi's serialisation (versioned and
// checksummed on its own, kernel_abi.h) followed by the binary. A hit loads
// the binary with the stored KernelAbi, which must equal the one generated
// for the kernel at hand: an entry whose KernelAbi does not read back, or
// reads back different (another tilejit's layout, a damaged entry), is
// treated like a corrupt binary: removed (DiskCache::discard), counted, and
// the kernel recompiled and stored again.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tilejit/runtime/backend.h"
#include "tilejit/runtime/disk_cache.h"

namespace tilejit::runtime {

struct CompileCacheStats {
  uint64_t memory_hits = 0;  // module already loaded for this device
  uint64_t disk_hits = 0;    // binary read from disk and loaded
  uint64_t compiles = 0;     // binary compiled (then stored)
  uint64_t loads = 0;        // Backend::load calls that succeeded
};

class CompileCache {
 public:
  /// The process-wide cache, using DiskCache::default_dir() (read when the
  /// cache is first used or after set_disk_dir).
  static CompileCache& global();

  /// The module for `source` (whose kernel takes `abi`) on `device`: from
  /// memory, else from disk, else compiled and stored with `abi` beside it
  /// (Note [ABI beside the binary]). A binary from disk that fails to load is
  /// recompiled. Concurrent calls for the same key compile once.
  std::shared_ptr<Module> get(Backend& backend, const std::string& source, const KernelAbi& abi,
                              const std::string& kernel_name, const CompileOptions& options,
                              Device device, bool use_disk = true);

  /// The key of a binary: hash of the target, the toolchain key, the source
  /// and the KernelAbi (one source serves plans whose results lie at other
  /// indices: each gets its own entry).
  static std::string key(Backend& backend, const std::string& source, const KernelAbi& abi,
                         const CompileOptions& options, Device device);

  /// Drops loaded modules held only by the cache (kernels keep theirs).
  void clear_memory();
  /// Points the disk cache elsewhere ("" disables it).
  void set_disk_dir(std::string dir);
  DiskCache& disk();

  CompileCacheStats stats() const;

 private:
  CompileCache();
  mutable std::mutex mutex_;
  // Shared so that a get() in flight keeps the DiskCache it started with
  // when set_disk_dir() replaces it.
  std::shared_ptr<DiskCache> disk_;
  std::map<std::string, std::shared_ptr<Module>> modules_;  // key + device
  std::map<std::string, std::shared_ptr<std::mutex>> building_;
  CompileCacheStats stats_;
};

}  // namespace tilejit::runtime
