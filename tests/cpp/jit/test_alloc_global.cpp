// T.alloc_global workspaces through jit(): leased in the call's arena beside
// the declared workspaces and listed by workspace_bytes() / workspace_layout().
// The kernels compile for a fake backend (codegen of tile bodies is the
// targets' business; the plan is target-neutral).
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "runtime/fake_backend.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/jit/call_plan.h"
#include "tilejit/tilejit.h"

namespace tilejit {
namespace {

using namespace tilejit::ir;  // NOLINT: the tests read as IR
using tilejit::testing::expect_error;

const DataType f32 = DataType::float32();

JitOptions fake_options(IndexSpec out, IndexSpec ws) {
  static bool registered = [] {
    runtime::register_backend(std::make_unique<testing::FakeBackend>("fake_tile"));
    return true;
  }();
  EXPECT_TRUE(registered);
  JitOptions o;
  o.out_idx = std::move(out);
  o.workspace_idx = std::move(ws);
  o.target = "fake_tile";
  o.disk_cache = false;
  return o;
}

TEST(AllocGlobal, LayoutListsDeclaredThenAllocatedWorkspaces) {
  TileBuilder b("sk");
  Expr M = symbolic("M"), N = symbolic("N");
  b.tensor_param("A", {M, N}, f32);
  b.tensor_param("C", {M, N}, f32);
  b.tensor_param("W", {M}, f32);
  Buffer part = b.alloc_global("partial", {4, M, N}, f32);
  b.alloc_global("sem", {ceildiv(M, 64)}, DataType::int32(), WorkspaceInit::kZeroOnce);
  b.begin_kernel({ceildiv(M, 64), 4}, {128});
  b.fill(whole(part), 0);
  b.end_kernel();
  const Kernel k = jit(b.finish(), fake_options({1}, {2}));
  const ShapeArg shapes[] = {{100, 7}};
  const auto layout = k.workspace_layout_for_shapes(shapes);
  ASSERT_EQ(layout.size(), 3u);
  EXPECT_EQ(layout[0].name, "W");
  EXPECT_EQ(layout[0].bytes, 400u);
  EXPECT_EQ(layout[1].name, "partial");
  EXPECT_EQ(layout[1].offset, 512u);
  EXPECT_EQ(layout[1].shape, (std::vector<int64_t>{4, 100, 7}));
  EXPECT_EQ(layout[1].bytes, 4u * 100 * 7 * 4);
  EXPECT_EQ(layout[1].init, WorkspaceInit::kEmpty);
  EXPECT_EQ(layout[2].name, "sem");
  EXPECT_EQ(layout[2].offset, 512u + 11264u);  // 11200 rounded up to 256
  EXPECT_EQ(layout[2].shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(layout[2].dtype, DataType::int32());
  EXPECT_EQ(layout[2].init, WorkspaceInit::kZeroOnce);
  EXPECT_EQ(k.workspace_bytes_for_shapes(shapes), 512u + 11264u + 256u);
  // The hidden parameters are not inputs.
  const ShapeArg too_many[] = {{100, 7}, {4, 100, 7}};
  expect_error([&] { k.workspace_bytes_for_shapes(too_many); }, ErrorKind::kTypeError,
               "sk: expected 1 input (A), got 2");
}

TEST(AllocGlobal, ASymbolNoInputBindsIsAJitError) {
  TileBuilder b("unbound");
  b.tensor_param("A", {symbolic("M")}, f32);
  b.alloc_global("ws", {symbolic("Q")}, f32);
  b.begin_kernel({1}, {1});
  b.end_kernel();
  expect_error([&] { jit(b.finish(), fake_options({}, {})); }, ErrorKind::kValueError,
               "unbound: symbol 'Q' in the shape of workspace 'ws' (parameter #1, dimension 0: "
               "Q) is not bound by any input; give an input a dimension 'Q' (or an affine form "
               "of it such as 2 * Q) or add a scalar parameter named 'Q'");
}

}  // namespace
}  // namespace tilejit
