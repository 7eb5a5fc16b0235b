#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "runtime/fake_backend.h"
#include "tilejit/runtime/allocator.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::runtime {
namespace {

using testing::expect_error;
using testing::FakeBackend;

// A device type no real backend serves, so the fake is the one found for it.
constexpr DeviceType kFakeDeviceType = DeviceType::kCUDAHost;

// Registered the way backends register themselves: from a static initializer
// in this file, whose order relative to the registry's own file is unknown.
std::unique_ptr<Backend> make_static_fake() {
  return std::make_unique<FakeBackend>("fake_static", kFakeDeviceType);
}
BackendRegistration static_registration(&make_static_fake);

std::string joined_targets() {
  std::string out;
  for (const auto& t : registered_targets()) out += (out.empty() ? "" : ", ") + t;
  return out;
}

TEST(Registry, StaticRegistrationIsFound) {
  Backend& b = get_backend("fake_static");
  EXPECT_EQ(b.target(), "fake_static");
  EXPECT_EQ(find_backend(kFakeDeviceType), &b);
  auto targets = registered_targets();
  EXPECT_NE(std::find(targets.begin(), targets.end(), "fake_static"), targets.end());
}

TEST(Registry, RegisterKeepsOrderAndRejectsDuplicates) {
  // Registrations last for the process: register once under --gtest_repeat.
  static bool registered = [] {
    register_backend(std::make_unique<FakeBackend>("fake_dynamic", kFakeDeviceType));
    return true;
  }();
  EXPECT_TRUE(registered);
  Backend& dynamic = get_backend("fake_dynamic");
  EXPECT_EQ(dynamic.target(), "fake_dynamic");
  // The first backend of a device type wins.
  EXPECT_EQ(find_backend(kFakeDeviceType)->target(), "fake_static");

  auto targets = registered_targets();
  auto s = std::find(targets.begin(), targets.end(), "fake_static");
  auto d = std::find(targets.begin(), targets.end(), "fake_dynamic");
  ASSERT_NE(d, targets.end());
  EXPECT_LT(s, d);

  expect_error(
      [] { register_backend(std::make_unique<FakeBackend>("fake_dynamic", kFakeDeviceType)); },
      ErrorKind::kInternalError,
      "register_backend: a backend for target 'fake_dynamic' is already registered");
  // The registered one is untouched.
  EXPECT_EQ(&get_backend("fake_dynamic"), &dynamic);
  EXPECT_EQ(registered_targets().size(), targets.size());

  expect_error([] { register_backend(nullptr); }, ErrorKind::kInternalError,
               "register_backend: the backend is null");
}

TEST(Registry, UnknownTargetNamesTheRegisteredOnes) {
  expect_error([] { get_backend("tpu"); }, ErrorKind::kValueError,
               "unknown target 'tpu'; registered targets: " + joined_targets());
  EXPECT_NE(joined_targets().find("fake_static"), std::string::npos);
}

TEST(Registry, FindBackendForAnUnservedType) {
  EXPECT_EQ(find_backend(static_cast<DeviceType>(99)), nullptr);
}

// ---- target="auto" -------------------------------------------------------------

// Fakes that rank only PrimFuncs with a body for them, so that no other
// test's "auto" changes. Registered once for the process (--gtest_repeat).
struct AutoFakes {
  FakeBackend* low;
  FakeBackend* high;
  FakeBackend* tie;  // the same rank as `high`, registered after it
  FakeBackend* off;  // the highest rank, but not available
};

const AutoFakes& auto_fakes() {
  static const AutoFakes fakes = [] {
    auto make = [](const char* target, int rank, bool available) {
      auto b = std::make_unique<FakeBackend>(target, kFakeDeviceType);
      b->rank = rank;
      b->is_available = available;
      FakeBackend* raw = b.get();
      register_backend(std::move(b));
      return raw;
    };
    AutoFakes f;
    f.low = make("auto_low", 5, true);
    f.high = make("auto_high", 7, true);
    f.tie = make("auto_tie", 7, true);
    f.off = make("auto_off", 100, false);
    return f;
  }();
  return fakes;
}

ir::PrimFunc with_bodies(std::initializer_list<const char*> targets) {
  ir::PrimFuncBuilder b = ir::prim_func("k");
  for (const char* t : targets) b.body(t, "");
  return b.build();
}

TEST(AutoBackend, PicksTheHighestRankOfTheAvailableFirstAmongEquals) {
  const AutoFakes& fakes = auto_fakes();
  EXPECT_EQ(&auto_backend(with_bodies({"auto_low", "auto_high", "auto_tie", "auto_off"})),
            fakes.high);
  EXPECT_EQ(&auto_backend(with_bodies({"auto_tie", "auto_low"})), fakes.tie);
  // A fake ranked 5 is preferred to the CPU (0) when both have a body.
  EXPECT_EQ(&auto_backend(with_bodies({"cpu", "auto_low"})), fakes.low);
  // The unavailable one is never asked to run, whatever its rank.
  EXPECT_EQ(&auto_backend(with_bodies({"cpu", "auto_off"})), &get_backend("cpu"));
  EXPECT_EQ(&auto_backend(with_bodies({"cpu"})), &get_backend("cpu"));
}

TEST(AutoBackend, NoneCanRunItIsAValueError) {
  auto_fakes();
  std::string available;
  for (const std::string& t : registered_targets()) {
    if (get_backend(t).available()) available += (available.empty() ? "" : ", ") + t;
  }
  expect_error([] { auto_backend(with_bodies({"auto_off", "tpu"})); }, ErrorKind::kValueError,
               "k: target 'auto' found no available target that can run it (bodies given: "
               "auto_off, tpu; available targets: " + available + ")");
  expect_error([] { auto_backend(with_bodies({})); }, ErrorKind::kValueError,
               "k: target 'auto' found no available target that can run it (bodies given: "
               "none; available targets: " + available + ")");
}

TEST(Allocator, EmptyUsesTheBackendsTensorAllocator) {
  auto& fake = static_cast<FakeBackend&>(get_backend("fake_static"));
  int before = fake.fake_tensor_allocator().calls.load();
  Device device{kFakeDeviceType, 0};
  Tensor t = empty({2, 3, 4}, DataType::float32(), device);
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(t.device(), device);
  EXPECT_EQ(t.dtype(), DataType::float32());
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(fake.fake_tensor_allocator().calls.load(), before + 1);
}

TEST(Allocator, EmptyOnAnUnservedDeviceIsAValueError) {
  Device device{static_cast<DeviceType>(99), 0};
  expect_error([&] { empty({2}, DataType::int32(), device); }, ErrorKind::kValueError,
               "empty: no backend serves device 'device_type<99>:0'; registered targets: " +
                   joined_targets());
}

}  // namespace
}  // namespace tilejit::runtime
