// Helpers shared by the reliability tests (issue 5): checked bad calls, the
// CPU pool's gauges, scoped settings that must be restored whatever a test
// does, and temporary directories.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "tilejit/runtime/disk_cache.h"
#include "tilejit/tilejit.h"

namespace tilejit::reliability {

using testing::cpu_options;
using testing::cpu_pool;
using testing::error_message;
using testing::iota;
using testing::ScopedEnv;
using testing::TempDir;




/// One catalogue entry (issue 5): `bad` throws an Error of `kind` whose
/// message is exactly `message`; afterwards no lease of the CPU pool is held,
/// and `good` (the next good call, which checks its own result) succeeds.
template <typename Bad, typename Good>
void expect_rejected(Bad&& bad, ErrorKind kind, const std::string& message, Good&& good) {
  EXPECT_EQ(error_message(bad, kind), message);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u) << "a lease is still held after: " << message;
  good();
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u) << "a lease is still held after the good call";
}


/// A view of `data` that is never read (for calls that must fail before a
/// launch): any shape, strides and device.
inline Tensor view(void* data, std::vector<int64_t> shape, DataType dtype,
                   Device device = Device::cpu(), std::vector<int64_t> strides = {}) {
  return Tensor::from_blob(data, shape, dtype, device, nullptr, nullptr, strides);
}


/// Caps the CPU pool for a scope and restores the previous cap.
class ScopedPoolLimit {
 public:
  explicit ScopedPoolLimit(size_t bytes) : old_(cpu_pool().limit()) { cpu_pool().set_limit(bytes); }
  ~ScopedPoolLimit() { cpu_pool().set_limit(old_); }
  ScopedPoolLimit(const ScopedPoolLimit&) = delete;
  ScopedPoolLimit& operator=(const ScopedPoolLimit&) = delete;

 private:
  size_t old_;
};

/// Points the global compile cache at `dir` (and empties its memory) for a
/// scope; restores DiskCache::default_dir() afterwards.
class ScopedCacheDir {
 public:
  explicit ScopedCacheDir(const std::string& dir) {
    runtime::CompileCache::global().set_disk_dir(dir);
    runtime::CompileCache::global().clear_memory();
  }
  ~ScopedCacheDir() {
    runtime::CompileCache::global().clear_memory();
    runtime::CompileCache::global().set_disk_dir(runtime::DiskCache::default_dir());
  }
  ScopedCacheDir(const ScopedCacheDir&) = delete;
  ScopedCacheDir& operator=(const ScopedCacheDir&) = delete;
};


/// A string no earlier run of this machine has put in a kernel body, so that
/// a kernel built with it misses every cache (memory and disk).
inline std::string unique_token() {
  static std::atomic<int> counter{0};
  return std::to_string(::getpid()) + "_" + std::to_string(++counter) + "_" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace tilejit::reliability
