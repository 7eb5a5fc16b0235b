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

#include "tilejit/runtime/disk_cache.h"
#include "tilejit/tilejit.h"

namespace tilejit::reliability {

/// The CPU workspace pool, the one every CPU call leases from.
inline runtime::WorkspacePool& cpu_pool() {
  return runtime::WorkspacePool::get(runtime::get_backend("cpu"), Device::cpu());
}

inline JitOptions cpu_options(IndexSpec out_idx, IndexSpec workspace_idx = {}) {
  JitOptions o;
  o.out_idx = std::move(out_idx);
  o.workspace_idx = std::move(workspace_idx);
  o.target = "cpu";
  return o;
}

/// The message of the Error that `fn` throws, after checking its kind; ""
/// (and a failure) when it throws none.
template <typename Fn>
std::string error_of(Fn&& fn, ErrorKind kind) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no error; expected a " << error_kind_name(kind);
  return "";
}

/// One catalogue entry (issue 5): `bad` throws an Error of `kind` whose
/// message is exactly `message`; afterwards no lease of the CPU pool is held,
/// and `good` (the next good call, which checks its own result) succeeds.
template <typename Bad, typename Good>
void expect_rejected(Bad&& bad, ErrorKind kind, const std::string& message, Good&& good) {
  EXPECT_EQ(error_of(bad, kind), message);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u) << "a lease is still held after: " << message;
  good();
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u) << "a lease is still held after the good call";
}

/// A contiguous float32 tensor filled with start, start + step, ...
inline Tensor iota(std::initializer_list<int64_t> shape, float start = 0.f, float step = 1.f) {
  Tensor t = empty(shape, DataType::float32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + step * float(i);
  return t;
}

/// A view of `data` that is never read (for calls that must fail before a
/// launch): any shape, strides and device.
inline Tensor view(void* data, std::vector<int64_t> shape, DataType dtype,
                   Device device = Device::cpu(), std::vector<int64_t> strides = {}) {
  return Tensor::from_blob(data, shape, dtype, device, nullptr, nullptr, strides);
}

/// Sets (or, with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

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

/// A fresh directory under $TILEJIT_TEST_TMP (or /tmp), removed with its
/// contents at the end of the scope.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TILEJIT_TEST_TMP");
    const std::string root = base && *base ? base : "/tmp";
    std::filesystem::create_directories(root);
    std::string pattern = root + "/tilejit_reliability_XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      TILEJIT_THROW(kRuntimeError) << "TempDir: mkdtemp in " << root << " failed";
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// A string no earlier run of this machine has put in a kernel body, so that
/// a kernel built with it misses every cache (memory and disk).
inline std::string unique_token() {
  static std::atomic<int> counter{0};
  return std::to_string(::getpid()) + "_" + std::to_string(++counter) + "_" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace tilejit::reliability
