// The CPU backend and the KernelAbi (Note [Kernel ABI]): a hand-written
// binary whose ABI has a scalar, a by-value struct and a symbol, launched
// twice in one call; and what load() and launch() refuse.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu_test_util.h"
#include "tilejit/runtime/kernel_abi.h"

namespace tilejit::cpu::testing {
namespace {

// The block of abi(): Out @0, alpha (int32) @8, a 128-byte struct aligned to
// 64 @64 (a TMA descriptor's size and alignment), n @192. `scale` writes
// Out[i] = desc[i] * alpha + n over its blocks; `total`, launched after it,
// sums what `scale` wrote into Out[16].
constexpr const char* kSource = R"(
#include <cstdint>
#include <cstring>
struct Desc { int64_t v[16]; };
static_assert(sizeof(Desc) == 128);
extern "C" int tilejit_abi_version() { return 3; }
extern "C" const char* tilejit_kernel_name() { return "abi_test"; }
typedef void (*fault_fn)(void*, int, const char*, const char*) noexcept;
extern "C" int64_t scale(const void* block, const int64_t*, int64_t begin, int64_t end, fault_fn,
                         void*) {
  const char* b = static_cast<const char*>(block);
  int64_t* out; std::memcpy(&out, b, 8);
  int32_t alpha; std::memcpy(&alpha, b + 8, 4);
  Desc d; std::memcpy(&d, b + 64, sizeof d);
  int64_t n; std::memcpy(&n, b + 192, 8);
  for (int64_t i = begin; i < end; ++i) out[i] = d.v[i] * alpha + n;
  return -1;
}
extern "C" int64_t total(const void* block, const int64_t* grid, int64_t begin, int64_t end,
                         fault_fn, void*) {
  const char* b = static_cast<const char*>(block);
  int64_t* out; std::memcpy(&out, b, 8);
  if (begin == 0 && end == 1 && grid[0] == 1) {
    int64_t sum = 0;
    for (int i = 0; i < 16; ++i) sum += out[i];
    out[16] = sum;
  }
  return -1;
}
)";

runtime::KernelAbi abi() {
  runtime::KernelAbi a;
  a.add(runtime::AbiArgKind::kPointer, "Out", 0, 8, 8);
  a.add(runtime::AbiArgKind::kScalar, "alpha", 1, 4, 4, DataType::int32());
  a.add(runtime::AbiArgKind::kStruct, "desc", 2, 128, 64);
  a.add(runtime::AbiArgKind::kSymbol, "n", 0, 8, 8);
  a.launches.push_back(runtime::AbiLaunch{"scale", {0, 1, 2}, 3, {1, 1, 1}});
  a.launches.push_back(runtime::AbiLaunch{"total", {4, 5, 6}, 7, {1, 1, 1}});
  return a;
}

const std::string& binary() {
  static const std::string bytes =
      cpu_backend().compile(kSource, "abi_test", {{"-O1"}, {}}, Device::cpu());
  return bytes;
}

struct Call {
  int64_t out[17] = {};
  int32_t alpha = 3;
  int64_t desc[16];
  int64_t n = 1000;
  void* values[3] = {out, &alpha, desc};
  // Launch "scale" reads its grid at results 0-2, "total" at 4-6.
  int64_t results[8] = {16, 1, 1, 0, 1, 1, 1, 0};
  runtime::LaunchParams params;
  Call() {
    for (int i = 0; i < 16; ++i) desc[i] = i + 1;
    params.args = values;
    params.num_args = 3;
    params.symbols = &n;
    params.num_symbols = 1;
    params.results = results;
    params.num_results = 8;
    params.device = Device::cpu();
  }
};

TEST(CpuAbi, ByValueStructAndTwoLaunchesInOrder) {
  ScopedThreads threads(2);
  auto m = cpu_backend().load(binary(), abi(), Device::cpu());
  Call c;
  m->launch(c.params);
  int64_t sum = 0;
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(c.out[i], (i + 1) * 3 + 1000) << i;
    sum += c.out[i];
  }
  EXPECT_EQ(c.out[16], sum);  // the second launch saw all of the first's writes
}

TEST(CpuAbi, LaunchWithAnotherShapeIsRefused) {
  auto m = cpu_backend().load(binary(), abi(), Device::cpu());
  Call c;
  c.params.num_results = 7;
  EXPECT_EQ(error_message([&] { m->launch(c.params); }, ErrorKind::kInternalError),
            "cpu launch: 3 arguments, 1 symbols and 7 results for a kernel that reads 3, 1 and 8");
  c.params.num_results = 8;
  c.params.num_symbols = 0;
  EXPECT_EQ(error_message([&] { m->launch(c.params); }, ErrorKind::kInternalError),
            "cpu launch: 3 arguments, 0 symbols and 8 results for a kernel that reads 3, 1 and 8");
  EXPECT_EQ(c.out[0], 0);  // nothing ran
}

TEST(CpuAbi, LoadChecksTheAbi) {
  const std::string prefix = "cpu backend: cannot load the kernel binary: ";
  runtime::KernelAbi missing = abi();
  missing.launches[1].entry = "absent";
  const std::string msg = error_message(
      [&] { cpu_backend().load(binary(), missing, Device::cpu()); }, ErrorKind::kRuntimeError);
  EXPECT_EQ(msg.rfind(prefix, 0), 0u) << msg;
  EXPECT_NE(msg.find("undefined symbol: absent"), std::string::npos) << msg;

  runtime::KernelAbi none = abi();
  none.launches.clear();
  EXPECT_EQ(error_message([&] { cpu_backend().load(binary(), none, Device::cpu()); },
                          ErrorKind::kRuntimeError),
            prefix + "its KernelAbi is not well formed: 0 launches");
}

TEST(CpuAbi, GeneratedAbiIsTheSlotLayout) {
  // Note [Slot layout]: a slot per parameter in signature order, the scalar's
  // bytes in its own slot, then the symbols; the request's result indices.
  const ir::Expr n = ir::Expr::var("n");
  ir::PrimFunc f = ir::prim_func("slots")
                       .tensor("A", {n}, DataType::float32())
                       .scalar("alpha", DataType::float32())
                       .tensor("B", {n}, DataType::float32())
                       .threads(4)
                       .body("cpu", "")
                       .build();
  const std::vector<std::string> symbols = {"n"};
  const runtime::LaunchResults results{{5, 6, 7}, 8};
  runtime::SourceRequest request{&f, symbols, {&results, 1}};
  const runtime::KernelAbi a = cpu_backend().generate(request).abi;
  EXPECT_EQ(a.str(),
            "block 32 bytes: pointer A @0, scalar alpha float32 @8, pointer B @16, symbol n @24; "
            "launch tilejit_entry grid (r5, r6, r7) threads (4, 1, 1) smem r8");
  EXPECT_FALSE(a.is_dense(3, 1));  // the scalar is no pointer
}

}  // namespace
}  // namespace tilejit::cpu::testing
