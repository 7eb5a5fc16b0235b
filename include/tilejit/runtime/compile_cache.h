// CompileCache: source -> loaded Module, through an in-memory cache of
// modules (per device) and the DiskCache of binaries.
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

  /// The module for `source` on `device`: from memory, else from disk, else
  /// compiled and stored. A binary from disk that fails to load is
  /// recompiled. Concurrent calls for the same key compile once.
  std::shared_ptr<Module> get(Backend& backend, const std::string& source,
                              const std::string& kernel_name, const CompileOptions& options,
                              Device device, bool use_disk = true);

  /// The key of a binary: hash of the target, source and toolchain key.
  static std::string key(Backend& backend, const std::string& source,
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
