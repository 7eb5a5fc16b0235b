// Note [Debug bounds] on CUDA: with SourceRequest::debug_bounds every index
// of a tile buffer's scalar load or store goes through
// tilejit::cuda::checked_index (tilejit/cuda/bounds.h: a printf naming the
// kernel, the block, the thread, the buffer, the dimension and the index,
// then __trap()), and the unit still compiles under NVRTC; without it there
// is no check.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "tile/flash_attention.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/jit/kernel.h"
#include "tilejit/runtime/allocator.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

using ir::Buffer;
using ir::Expr;
using ir::ForKind;
using ir::load;
using ir::Scope;
using ir::TileBuilder;

// shift(X: f32[32], Y: f32[4, 8], off: int32, soff: int32) over 128
// threads: f = X, s[i, j + soff] = f[8 i + j + off], Y = s (the CPU test's
// program); the indices depend on scalars, which only a run-time check sees.
ir::PrimFunc shift() {
  TileBuilder b("shift");
  const Buffer X = b.tensor_param("X", {Expr(32)}, DataType::float32());
  const Buffer Y = b.tensor_param("Y", {Expr(4), Expr(8)}, DataType::float32());
  const Expr off = b.scalar_param("off", DataType::int32());
  const Expr soff = b.scalar_param("soff", DataType::int32());
  b.begin_kernel({Expr(1)}, {128});
  const Buffer f = b.alloc("f", {32}, DataType::float32(), Scope::kFragment);
  const Buffer s = b.alloc("s", {4, 8}, DataType::float32(), Scope::kShared);
  Expr i = b.begin_for("i", 0, 32, ForKind::kParallel);
  b.store(f, {i}, load(X, {i}));
  b.end_for();
  i = b.begin_for("i", 0, 4, ForKind::kParallel);
  Expr j = b.begin_for("j", 0, 8, ForKind::kParallel);
  b.store(s, {i, j + soff}, load(f, {i * 8 + j + off}));
  b.end_for();
  b.end_for();
  i = b.begin_for("i", 0, 4, ForKind::kParallel);
  j = b.begin_for("j", 0, 8, ForKind::kParallel);
  b.store(Y, {i, j}, load(s, {i, j}));
  b.end_for();
  b.end_for();
  b.end_kernel();
  return transform::verify(b.finish());
}

std::string source_of(const ir::PrimFunc& f, bool debug_bounds) {
  runtime::SourceRequest request{&f, {}};
  request.debug_bounds = debug_bounds;
  return cuda_backend().generate(request).source;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

TEST(CudaTileDebugBounds, EveryTileIndexIsCheckedAndTheUnitCompiles) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const ir::PrimFunc f = shift();
  const std::string src = source_of(f, true);
  // Each index of f and s, once per access; X and Y are tensors, which the
  // predicates guard instead.
  EXPECT_EQ(count(src, "tilejit::cuda::checked_index("), 1u + 1u + 2u + 2u) << src;
  EXPECT_EQ(count(src, ", 32, \"shift\", \"f [32]\", 0)"), 2u) << src;
  EXPECT_EQ(count(src, ", 4, \"shift\", \"s [4, 8]\", 0)"), 2u) << src;
  EXPECT_EQ(count(src, ", 8, \"shift\", \"s [4, 8]\", 1)"), 2u) << src;
  EXPECT_NE(src.find("tilejit::cuda::checked_index((j + soff), 8, \"shift\", \"s [4, 8]\", 1)"),
            std::string::npos)
      << src;
  EXPECT_FALSE(cuda_backend().compile(src, f.name, {}, Device::cuda(0)).empty());
}

Kernel build_shift() {
  JitOptions o;
  o.out_idx = {1};
  o.target = "cuda";
  o.debug_bounds = true;
  return jit(shift(), o);
}

Tensor on_device(const Tensor& host) {
  Tensor dev = runtime::empty(host.shape(), host.dtype(), Device::cuda(0));
  runtime::copy(host, dev);
  return dev;
}

// In bounds the checks change nothing. Out of bounds the thread prints what
// was wrong and traps, which fails the launch and leaves the context
// unusable: that part runs in a process of its own (a death test in the
// threadsafe style runs this test again in a new process), with its stdout,
// where the device's printf goes, sent to stderr, which the test matches.
TEST(CudaTileDebugBounds, AnIndexOutsideItsDimensionTrapsOnTheGpu) {
  TILEJIT_SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Tensor x = tilejit::testing::iota({32}, 0.f);
  auto run = [&](int off, int soff) {
    Tensor y = build_shift()(on_device(x), off, soff);
    Tensor host = runtime::empty(y.shape(), y.dtype());
    runtime::copy(y, host);  // waits for the kernel
    return host;
  };
  const Tensor y = run(0, 0);
  for (int64_t e = 0; e < 32; ++e) ASSERT_EQ(y.data_as<float>()[e], float(e)) << e;
  auto trap = [&](int off, int soff) {
    ::dup2(2, 1);
    try {
      run(off, soff);
      std::fprintf(stderr, "no error\n");
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
    std::fflush(nullptr);
    std::_Exit(0);
  };
  EXPECT_EXIT(trap(3, 0), ::testing::ExitedWithCode(0),
              "shift: block \\(0, 0, 0\\), thread [0-9]+: bounds check: index 32 lies outside "
              "f \\[32\\] in dimension 0\n");
  EXPECT_EXIT(trap(0, 1), ::testing::ExitedWithCode(0),
              "shift: block \\(0, 0, 0\\), thread [0-9]+: bounds check: index 8 lies outside "
              "s \\[4, 8\\] in dimension 1\n");
}

TEST(CudaTileDebugBounds, NoCheckUnlessAskedFor) {
  const std::string src = source_of(shift(), false);
  EXPECT_EQ(src.find("checked_index"), std::string::npos) << src;
}

// Every mbarrier wait of a debug unit gives up after a timeout, naming the
// barrier: the consumers' waits for a stage to land and the producer's for
// it to be free (Note [Warp specialisation]).
TEST(CudaTileDebugBounds, EveryMbarrierWaitIsBounded) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  namespace ex = ::examples::tile;
  ex::FlashAttentionConfig cfg;
  cfg.dtype = DataType::float16();
  cfg.dim = 128;
  cfg.stages = 2;
  cfg.block_m = cfg.block_n = 128;
  cfg.threads = 256;
  const ir::PrimFunc f = transform::plan_workspaces(transform::verify(ex::flash_attention(cfg)));
  const std::vector<std::string> symbols = symbols_of(f);
  runtime::SourceRequest request{&f, symbols};
  request.debug_bounds = true;
  const std::string src = cuda_backend().generate(request).source;
  EXPECT_EQ(src.find("tilejit::cuda::mbar_wait("), std::string::npos) << src;
  for (const char* bar : {"K_shared_landed", "K_shared_free", "V_shared_landed", "V_shared_free"}) {
    const std::string call = "tilejit::cuda::mbar_wait_checked(&" + std::string(bar) + "[";
    const std::string named = ", \"flash_attention\", \"" + std::string(bar) + "\");";
    EXPECT_NE(src.find(call), std::string::npos) << bar << "\n" << src;
    EXPECT_NE(src.find(named), std::string::npos) << bar << "\n" << src;
  }
  EXPECT_FALSE(cuda_backend().compile(src, f.name, {}, Device::cuda(0)).empty());
  request.debug_bounds = false;
  EXPECT_EQ(cuda_backend().generate(request).source.find("mbar_wait_checked"), std::string::npos);
}

// A wait that never ends prints the barrier and the phase, and traps.
TEST(CudaTileDebugBounds, AHungMbarrierWaitTraps) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const ir::PrimFunc f = ir::prim_func("hang")
                             .scalar("parity", DataType::int32())
                             .threads(32)
                             .body("cuda",
                                   "__shared__ uint64_t bar;\n"
                                   "if (threadIdx.x == 0) tilejit::cuda::mbar_init(&bar, 1);\n"
                                   "__syncthreads();\n"
                                   "tilejit::cuda::mbar_wait_checked(&bar, unsigned(parity), "
                                   "\"hang\", \"never_landed\");\n")
                             .build();
  runtime::CompileOptions options;
  options.extra_flags = {"--pre-include=tilejit/cuda/tma.h",
                         "-DTILEJIT_MBAR_TIMEOUT_NS=100000000ull"};
  EXPECT_FALSE(compile(f, {}, options).empty());
  TILEJIT_SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto m = build(f, {}, options);
  int32_t parity = 1;  // the phase before the first: complete at once
  launch(*m, {.args = {&parity}});
  DeviceBuffer sync(4);
  (void)sync.download<int32_t>(1);
  auto trap = [&] {
    ::dup2(2, 1);
    try {
      int32_t p = 0;  // the first phase, which nothing completes
      launch(*m, {.args = {&p}});
      (void)sync.download<int32_t>(1);
      std::fprintf(stderr, "no error\n");
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
    std::fflush(nullptr);
    std::_Exit(0);
  };
  EXPECT_EXIT(trap(), ::testing::ExitedWithCode(0),
              "hang: block \\(0, 0, 0\\), thread [0-9]+: mbarrier never_landed did not complete "
              "its phase of parity 0 in 100 ms \\(a hang\\)\n");
}

}  // namespace
}  // namespace tilejit::cuda::testing
