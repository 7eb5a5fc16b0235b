// Helpers every C++ test suite shares: error expectations, scoped
// environment variables, temporary directories, and the CPU pool and options
// that most jit-level tests use. Suites pull what they need into their own
// namespace with using-declarations.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "tilejit/core/error.h"
#include "tilejit/tilejit.h"

namespace tilejit::testing {

/// Runs `fn`, which must throw an Error of `kind` whose message is exactly
/// `message`.
template <typename Fn>
void expect_error(Fn&& fn, ErrorKind kind, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "expected " << error_kind_name(kind) << ": " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(e.message(), message);
  }
}

/// The message of the Error that `fn` throws, after checking its kind; ""
/// (and a failure) when it throws none.
template <typename Fn>
std::string error_message(Fn&& fn, ErrorKind kind) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no tilejit::Error thrown; expected a " << error_kind_name(kind);
  return "";
}

/// Sets (or, with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
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

/// A fresh directory under $TILEJIT_TEST_TMP (or /tmp), removed with its
/// contents at the end of the scope.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TILEJIT_TEST_TMP");
    const std::string root = base && *base ? base : "/tmp";
    std::filesystem::create_directories(root);
    std::string pattern = root + "/tilejit_test_XXXXXX";
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

/// A contiguous float32 tensor filled with start, start + step, ...
inline Tensor iota(std::initializer_list<int64_t> shape, float start = 0.f, float step = 1.f) {
  Tensor t = empty(shape, DataType::float32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + step * float(i);
  return t;
}

#ifdef TILEJIT_TESTS_DIR
/// Compares `text` with the golden file tests/cpp/<suite>/golden/<name>, or
/// rewrites the file under TILEJIT_UPDATE_GOLDEN=1. `what` names the text in
/// the failure ("printed IR"). The directory comes from the build, so a test
/// binary finds its files from any working directory.
inline void check_golden(const std::string& suite, const std::string& name,
                         const std::string& text, const char* what) {
  const std::filesystem::path path = std::filesystem::path(TILEJIT_TESTS_DIR) / suite / "golden" / name;
  const char* update = std::getenv("TILEJIT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream out(path, std::ios::binary);
    out << text;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << "missing " << path << "; run with TILEJIT_UPDATE_GOLDEN=1";
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), text) << what << " differs from " << path
                            << "; run with TILEJIT_UPDATE_GOLDEN=1 if the change is intended";
}
#endif

}  // namespace tilejit::testing
