// Helpers shared by the jit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tilejit/tilejit.h"

namespace tilejit::testing {

/// Runs f, which must throw an Error of `kind` whose message is exactly
/// `message`.
template <typename F>
void expect_error(F&& f, ErrorKind kind, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(e.message(), message);
  }
}

/// A contiguous float32 tensor filled with start, start + step, ...
inline Tensor iota(std::initializer_list<int64_t> shape, float start = 0.f, float step = 1.f) {
  Tensor t = empty(shape, DataType::float32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = start + step * float(i);
  return t;
}

/// The CPU workspace pool.
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

}  // namespace tilejit::testing
