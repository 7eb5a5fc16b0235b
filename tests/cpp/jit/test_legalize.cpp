// out_idx / workspace_idx legalisation (DESIGN.md, "jit(prim_func, options)").
#include <gtest/gtest.h>

#include "common/test_util.h"

namespace tilejit {
namespace {

using testing::expect_error;

ir::PrimFunc five_params() {
  const Expr n = symbolic("n");
  return prim_func("f")
      .tensor("X", {n}, DataType::float32())
      .tensor("Y", {n}, DataType::float32())
      .scalar("alpha", DataType::float32())
      .tensor("Z", {n}, DataType::float32())
      .tensor("W", {n}, DataType::float32())
      .build();
}


TEST(Legalize, IntListAndNegative) {
  const auto f = five_params();
  auto r = legalize_indices(f, 3, {-1});
  EXPECT_EQ(r.outputs, std::vector<int>{3});
  EXPECT_EQ(r.workspaces, std::vector<int>{4});
  r = legalize_indices(f, {-2, 1}, {});
  EXPECT_EQ(r.outputs, (std::vector<int>{3, 1}));  // out_idx order is the return order
  EXPECT_TRUE(r.workspaces.empty());
  r = legalize_indices(f, IndexSpec(), IndexSpec());
  EXPECT_TRUE(r.outputs.empty());
}

TEST(Legalize, CallerListUnchanged) {
  const auto f = five_params();
  const std::vector<int64_t> out = {-1, -2};
  IndexSpec spec(out);
  legalize_indices(f, spec, {});
  EXPECT_EQ(spec.values(), out);
  EXPECT_EQ(out, (std::vector<int64_t>{-1, -2}));
}

TEST(Legalize, OutOfRange) {
  const auto f = five_params();
  expect_error([&] { legalize_indices(f, {5}, {}); }, ErrorKind::kValueError,
               "f: out_idx[0] = 5 is out of range for a signature of 5 parameters (valid: -5 to 4)");
  expect_error([&] { legalize_indices(f, {}, {1, -6}); }, ErrorKind::kValueError,
               "f: workspace_idx[1] = -6 is out of range for a signature of 5 parameters "
               "(valid: -5 to 4)");
}

TEST(Legalize, Duplicates) {
  const auto f = five_params();
  expect_error([&] { legalize_indices(f, {3, -2}, {}); }, ErrorKind::kValueError,
               "f: out_idx[1] = -2 names parameter #3 'Z' again (already out_idx[0])");
  expect_error([&] { legalize_indices(f, {}, {4, 4}); }, ErrorKind::kValueError,
               "f: workspace_idx[1] = 4 names parameter #4 'W' again (already workspace_idx[0])");
}

TEST(Legalize, Overlap) {
  const auto f = five_params();
  expect_error([&] { legalize_indices(f, {3}, {-2}); }, ErrorKind::kValueError,
               "f: parameter #3 'Z' is named by both out_idx and workspace_idx");
}

TEST(Legalize, ScalarNamed) {
  const auto f = five_params();
  expect_error([&] { legalize_indices(f, {2}, {}); }, ErrorKind::kValueError,
               "f: out_idx[0] = 2 names scalar parameter #2 'alpha'; only tensors can be outputs");
  expect_error([&] { legalize_indices(f, {}, {-3}); }, ErrorKind::kValueError,
               "f: workspace_idx[0] = -3 names scalar parameter #2 'alpha'; only tensors can be "
               "workspaces");
}

TEST(Legalize, WorkspaceInitNames) {
  EXPECT_EQ(parse_workspace_init("zero_once"), WorkspaceInit::kZeroOnce);
  EXPECT_STREQ(workspace_init_name(WorkspaceInit::kZero), "zero");
  expect_error([] { parse_workspace_init("zeros"); }, ErrorKind::kValueError,
               "unknown workspace init 'zeros'; expected empty, zero or zero_once");
  EXPECT_EQ(parse_workspace_init("zero", "k", "W"), WorkspaceInit::kZero);
  expect_error([] { parse_workspace_init("zeros", "k", "W"); }, ErrorKind::kValueError,
               "k: workspace_init['W'] = 'zeros' is not a workspace init; expected 'empty', "
               "'zero' or 'zero_once'");
}

}  // namespace
}  // namespace tilejit
