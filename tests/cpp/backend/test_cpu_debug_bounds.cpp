// Note [Debug bounds] on the CPU: with JitOptions::debug_bounds or
// TILEJIT_DEBUG_BOUNDS, a tile-buffer index outside its dimension is the
// call's RuntimeError naming the kernel, the block, the buffer, the
// dimension and the index; without, the unit has no checks.
#include <gtest/gtest.h>

#include <string>

#include "backend/cpu_test_util.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/jit/kernel.h"
#include "tilejit/runtime/compile_cache.h"

namespace tilejit::cpu::testing {
namespace {

using ir::Buffer;
using ir::Expr;
using ir::ForKind;
using ir::load;
using ir::Scope;
using ir::TileBuilder;
using tilejit::testing::expect_error;

// shift(X: f32[32], Y: f32[4, 8], off: int32, soff: int32): f = X, then
// s[i, j + soff] = f[8 i + j + off] on a [4, 8] shared tile s, and Y = s.
// The indices depend on scalars, so only a run-time check can see them leave
// f or s.
ir::PrimFunc shift() {
  TileBuilder b("shift");
  const Buffer X = b.tensor_param("X", {Expr(32)}, DataType::float32());
  const Buffer Y = b.tensor_param("Y", {Expr(4), Expr(8)}, DataType::float32());
  const Expr off = b.scalar_param("off", DataType::int32());
  const Expr soff = b.scalar_param("soff", DataType::int32());
  b.begin_kernel({Expr(1)}, {1});
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
  return b.finish();
}

Kernel build_shift(bool debug_bounds) {
  JitOptions o;
  o.out_idx = {1};
  o.target = "cpu";
  o.debug_bounds = debug_bounds;
  return jit(shift(), o);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

TEST(CpuDebugBounds, AnIndexOutsideItsDimensionRaises) {
  ScopedEnv env("TILEJIT_DEBUG_BOUNDS", nullptr);
  const Kernel k = build_shift(true);
  Tensor x = tilejit::testing::iota({32}, 0.f);
  // In bounds, the checks change nothing.
  Tensor y = k(x, 0, 0);
  for (int64_t e = 0; e < 32; ++e) ASSERT_EQ(y.data_as<float>()[e], float(e)) << e;
  // The load of f: 8 i + j + 3 reaches 32 at i = 3, j = 5; 8 i + j - 1 is
  // -1 at once.
  expect_error([&] { k(x, 3, 0); }, ErrorKind::kRuntimeError,
               "shift: block (0, 0, 0) threw std::runtime_error: bounds check: index 32 lies "
               "outside f [32] in dimension 0");
  expect_error([&] { k(x, -1, 0); }, ErrorKind::kRuntimeError,
               "shift: block (0, 0, 0) threw std::runtime_error: bounds check: index -1 lies "
               "outside f [32] in dimension 0");
  // The store: j + 1 leaves s in dimension 1 at j = 7.
  expect_error([&] { k(x, 0, 1); }, ErrorKind::kRuntimeError,
               "shift: block (0, 0, 0) threw std::runtime_error: bounds check: index 8 lies "
               "outside s [4, 8] in dimension 1");
}

TEST(CpuDebugBounds, OffUnlessAskedFor) {
  ScopedEnv env("TILEJIT_DEBUG_BOUNDS", nullptr);
  const Kernel plain = build_shift(false);
  EXPECT_EQ(plain.source().find("checked_index"), std::string::npos) << plain.source();
  Tensor y = plain(tilejit::testing::iota({32}, 0.f), 0, 0);
  EXPECT_EQ(y.data_as<float>()[31], 31.f);
  const std::string checked = build_shift(true).source();
  EXPECT_NE(checked.find("tilejit::cpu::checked_index((j + soff), 8, \"shift\", \"s [4, 8]\", 1)"),
            std::string::npos)
      << checked;
  // Each index of f and s, once per access; X and Y are tensors, which the
  // predicates guard instead.
  EXPECT_EQ(count(checked, "tilejit::cpu::checked_index("), 1u + 1u + 2u + 2u);
  EXPECT_EQ(count(checked, ", 32, \"shift\", \"f [32]\", 0)"), 2u);
}

TEST(CpuDebugBounds, TheEnvironmentTurnsItOn) {
  {
    ScopedEnv env("TILEJIT_DEBUG_BOUNDS", "1");
    EXPECT_NE(build_shift(false).source().find("checked_index"), std::string::npos);
  }
  for (const char* off : {"0", ""}) {
    ScopedEnv env("TILEJIT_DEBUG_BOUNDS", off);
    EXPECT_EQ(build_shift(false).source().find("checked_index"), std::string::npos) << off;
  }
}

// The compile cache keys on the generated source, which the checks change:
// a kernel with them never loads the binary of one without.
TEST(CpuDebugBounds, TheOptionIsPartOfTheCacheKey) {
  ScopedEnv env("TILEJIT_DEBUG_BOUNDS", nullptr);
  const Kernel plain = build_shift(false), checked = build_shift(true);
  runtime::Backend& be = cpu_backend();
  EXPECT_NE(runtime::CompileCache::key(be, plain.source(), plain.abi(), {}, Device::cpu()),
            runtime::CompileCache::key(be, checked.source(), checked.abi(), {}, Device::cpu()));
}

}  // namespace
}  // namespace tilejit::cpu::testing
