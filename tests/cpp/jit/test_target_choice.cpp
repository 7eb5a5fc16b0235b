// Which backend jit() uses and what it asks of it: target="auto" by the
// backends' ranks, the target's own validation, and its default device. jit/
// knows nothing of any target; these tests use a fake one registered here.
#include <algorithm>
#include <memory>

#include "common/test_util.h"
#include "runtime/fake_backend.h"
#include "tilejit/runtime/backend.h"

namespace tilejit {
namespace {

using testing::cpu_options;
using testing::expect_error;
using testing::FakeBackend;

// Ranks 9 when the PrimFunc has a body for "jit_fake" (above the CPU's 0),
// allows 64 threads, and defaults to device 3 of its type. Registered once
// for the process (--gtest_repeat).
FakeBackend& jit_fake() {
  static FakeBackend* fake = [] {
    auto b = std::make_unique<FakeBackend>("jit_fake", DeviceType::kCUDAHost);
    b->rank = 9;
    b->max_threads = 64;
    b->default_device_id = 3;
    FakeBackend* raw = b.get();
    runtime::register_backend(std::move(b));
    return raw;
  }();
  return *fake;
}

JitOptions options(const char* target) {
  JitOptions o;
  o.target = target;
  o.disk_cache = false;
  return o;
}

TEST(TargetChoice, AutoTakesTheBackendOfHighestRank) {
  jit_fake();
  const auto both = prim_func("both").body("cpu", "").body("jit_fake", "").build();
  const Kernel k = jit(both, options("auto"));
  EXPECT_EQ(k.target(), "jit_fake");
  // Without a body for the fake, the CPU is what can run it.
  const auto cpu_only = prim_func("cpu_only").body("cpu", "").build();
  EXPECT_EQ(jit(cpu_only, options("auto")).target(), "cpu");
}

TEST(TargetChoice, AutoWithNoBodyAnyTargetRunsIsAValueError) {
  jit_fake();
  std::string available;
  for (const std::string& t : runtime::registered_targets()) {
    if (runtime::get_backend(t).available()) available += (available.empty() ? "" : ", ") + t;
  }
  const auto f = prim_func("npu_only").body("npu", "").build();
  expect_error([&] { jit(f, options("auto")); }, ErrorKind::kValueError,
               "npu_only: target 'auto' found no available target that can run it (bodies "
               "given: npu; available targets: " + available + ")");
}

TEST(TargetChoice, TheDefaultDeviceIsTheBackends) {
  jit_fake();
  const auto f = prim_func("k").body("cpu", "").body("jit_fake", "").build();
  EXPECT_EQ(jit(f, options("jit_fake")).default_device(), (Device{DeviceType::kCUDAHost, 3}));
  EXPECT_EQ(jit(f, options("cpu")).default_device(), Device::cpu());
}

TEST(TargetChoice, TheTargetValidatesWhatItAloneLimits) {
  jit_fake();
  const auto f = prim_func("wide").threads(128).body("cpu", "").body("jit_fake", "").build();
  expect_error([&] { jit(f, options("jit_fake")); }, ErrorKind::kValueError,
               "wide: 128 threads; jit_fake allows 64");
  expect_error([&] { jit(f, options("auto")); }, ErrorKind::kValueError,
               "wide: 128 threads; jit_fake allows 64");
}

// The 1,024-thread limit is CUDA's: the IR accepts more, the CPU backend
// (one thread per block) runs it, and the CUDA backend's validation rejects
// it, whether or not a GPU is present.
TEST(TargetChoice, TheThreadLimitIsTheCudaBackends) {
  const auto f = prim_func("wide")
                     .tensor("X", {4}, DataType::int32())
                     .threads(2000)
                     .body("cpu", "X(bx) = int32_t(bx);")
                     .body("cuda", "")
                     .grid({4})
                     .build();
  Tensor x = jit(f, cpu_options({0}))();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(x.data_as<int32_t>()[i], i);

  const auto targets = runtime::registered_targets();
  if (std::find(targets.begin(), targets.end(), "cuda") == targets.end()) {
    GTEST_SKIP() << "libtilejit is built without the CUDA backend";
  }
  expect_error([&] { runtime::get_backend("cuda").validate(f); }, ErrorKind::kValueError,
               "wide: 2000 threads per block; CUDA allows 1 to 1024");
  expect_error([&] { jit(f, options("cuda")); }, ErrorKind::kValueError,
               "wide: 2000 threads per block; CUDA allows 1 to 1024");
}

}  // namespace
}  // namespace tilejit
