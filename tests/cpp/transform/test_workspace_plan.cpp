// transform::plan_workspaces: T.alloc_global buffers become hidden workspace
// parameters.
#include "tilejit/transform/workspace_plan.h"

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "tilejit/ir/tile_builder.h"

namespace tilejit::transform {
namespace {

using namespace tilejit::ir;  // NOLINT: the tests read as IR
using tilejit::testing::expect_error;

const DataType f32 = DataType::float32();

TEST(WorkspacePlan, GlobalsBecomeTrailingParameters) {
  TileBuilder b("splitk");
  Expr M = symbolic("M"), N = symbolic("N");
  b.tensor_param("A", {M, N}, f32);
  Buffer part = b.alloc_global("partial", {4, M, N}, f32);
  Buffer sem = b.alloc_global("sem", {ceildiv(M, 64)}, DataType::int32(), WorkspaceInit::kZeroOnce);
  b.begin_kernel({1}, {1});
  b.fill(whole(part), 0);
  b.end_kernel();
  PrimFunc f = plan_workspaces(b.finish());
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_EQ(f.params[1].name, "partial");
  EXPECT_EQ(f.params[1].tensor.dtype, f32);
  EXPECT_EQ(shape_string(f.params[1].tensor.shape), "[4, M, N]");
  EXPECT_EQ(f.params[2].name, "sem");
  EXPECT_EQ(f.tile()->global_params, (std::vector<int>{1, 2}));
  EXPECT_EQ(f.tile()->params[2], sem);
  // Planning twice is planning once.
  EXPECT_EQ(plan_workspaces(f).params.size(), 3u);
}

TEST(WorkspacePlan, NothingToPlan) {
  PrimFunc s = prim_func("s").tensor("A", {4}, f32).body("cpu", "").build();
  EXPECT_EQ(plan_workspaces(s).params.size(), 1u);
  TileBuilder b("t");
  b.tensor_param("A", {4}, f32);
  b.begin_kernel({1}, {1});
  b.end_kernel();
  EXPECT_TRUE(plan_workspaces(b.finish()).tile()->global_params.empty());
}

TEST(WorkspacePlan, NameClashes) {
  TileBuilder b("f");
  b.alloc_global("A", {4}, f32, WorkspaceInit::kEmpty, Span{"k.py", 3, 4});
  b.tensor_param("A", {4}, f32);
  b.begin_kernel({1}, {1});
  b.end_kernel();
  PrimFunc f = b.finish();
  expect_error([&] { plan_workspaces(f); }, ErrorKind::kValueError,
               "k.py:3:4: T.alloc_global: workspace 'A' has the name of parameter #0");
  TileBuilder c("g");
  c.alloc_global("w", {4}, f32);
  c.alloc_global("w", {8}, f32);
  c.begin_kernel({1}, {1});
  c.end_kernel();
  PrimFunc g = c.finish();
  expect_error([&] { plan_workspaces(g); }, ErrorKind::kValueError,
               "g: T.alloc_global: workspace 'w' has the name of another T.alloc_global buffer");
}

}  // namespace
}  // namespace tilejit::transform
