// Symbol binding and the jit-time errors of the call plan.
#include "common/test_util.h"

namespace tilejit {
namespace {

using testing::expect_error;

TEST(CallPlan, BindsPlainAffineAndScalar) {
  const Expr b = symbolic("b"), s = symbolic("s"), n = symbolic("n");
  const auto f = prim_func("k")
                     .tensor("X", {2 * s + 1, b}, DataType::float32())
                     .tensor("Y", {b, s}, DataType::float32())
                     .scalar("n", DataType::int64())
                     .tensor("Z", {b * s, n}, DataType::float32())
                     .build();
  const auto idx = legalize_indices(f, {3}, {});
  const CallPlan plan = build_call_plan(f, idx, JitOptions{});
  EXPECT_EQ(plan.symbols, (std::vector<std::string>{"s", "b", "n"}));
  ASSERT_EQ(plan.bindings.size(), 3u);
  // The scalar binds n; plain dimensions come before the affine 2 * s + 1.
  EXPECT_EQ(plan.bindings[0].symbol, 2);
  EXPECT_EQ(plan.bindings[0].dim, -1);
  EXPECT_EQ(plan.bindings[1].symbol, 1);  // b from X.shape[1]
  EXPECT_EQ(plan.bindings[1].input, 0);
  EXPECT_EQ(plan.bindings[1].dim, 1);
  EXPECT_EQ(plan.bindings[2].symbol, 0);  // s from Y.shape[1], plain
  EXPECT_EQ(plan.bindings[2].input, 1);
  EXPECT_EQ(plan.bindings[2].dim, 1);
  // X.shape[0] (2 * s + 1) and Y.shape[0] (b) are checked.
  ASSERT_EQ(plan.checks.size(), 2u);
  EXPECT_EQ(plan.checks[0].input, 0);
  EXPECT_EQ(plan.checks[0].dim, 0);
  EXPECT_EQ(plan.checks[1].input, 1);
  EXPECT_EQ(plan.checks[1].dim, 0);
  ASSERT_EQ(plan.outputs.size(), 1u);
  EXPECT_EQ(plan.outputs[0].rank, 2);
}

TEST(CallPlan, AffineOnly) {
  const Expr s = symbolic("s"), heads = Expr(16);
  const auto f = prim_func("k")
                     .tensor("X", {s * heads}, DataType::float32())
                     .tensor("Y", {s}, DataType::float32())
                     .build();
  const CallPlan plan = build_call_plan(f, legalize_indices(f, {1}, {}), JitOptions{});
  ASSERT_EQ(plan.bindings.size(), 1u);
  EXPECT_EQ(plan.bindings[0].coeff, 16);
  EXPECT_EQ(plan.bindings[0].offset, 0);
}

TEST(CallPlan, UnboundSymbolInOutput) {
  const Expr n = symbolic("n"), m = symbolic("m");
  const auto f = prim_func("k")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Y", {n, m + 1}, DataType::float32())
                     .build();
  expect_error([&] { build_call_plan(f, legalize_indices(f, {1}, {}), JitOptions{}); },
               ErrorKind::kValueError,
               "k: symbol 'm' in the shape of output 'Y' (parameter #1, dimension 1: m + 1) is "
               "not bound by any input; give an input a dimension 'm' (or an affine form of it "
               "such as 2 * m) or add a scalar parameter named 'm'");
}

TEST(CallPlan, UnboundSymbolInWorkspaceAndGrid) {
  const Expr n = symbolic("n"), t = symbolic("t");
  const auto ws = prim_func("k")
                      .tensor("X", {n}, DataType::float32())
                      .tensor("W", {t}, DataType::float32())
                      .build();
  expect_error([&] { build_call_plan(ws, legalize_indices(ws, {}, {1}), JitOptions{}); },
               ErrorKind::kValueError,
               "k: symbol 't' in the shape of workspace 'W' (parameter #1, dimension 0: t) is "
               "not bound by any input; give an input a dimension 't' (or an affine form of it "
               "such as 2 * t) or add a scalar parameter named 't'");
  const auto grid = prim_func("k").tensor("X", {n}, DataType::float32()).grid({ceildiv(t, 4)}).build();
  expect_error([&] { build_call_plan(grid, legalize_indices(grid, {}, {}), JitOptions{}); },
               ErrorKind::kValueError,
               "k: symbol 't' in the grid (extent 0: ceildiv(t, 4)) is not bound by any input; "
               "give an input a dimension 't' (or an affine form of it such as 2 * t) or add a "
               "scalar parameter named 't'");
}

TEST(CallPlan, InputOnlyProductCannotBind) {
  const Expr b = symbolic("b"), s = symbolic("s");
  const auto f = prim_func("k")
                     .tensor("X", {b * s}, DataType::float32())
                     .tensor("Y", {b}, DataType::float32())
                     .build();
  expect_error([&] { build_call_plan(f, legalize_indices(f, {}, {}), JitOptions{}); },
               ErrorKind::kValueError,
               "k: symbol 's' in the shape of input 'X' (parameter #0, dimension 0: b * s) is not "
               "bound by any input; give an input a dimension 's' (or an affine form of it such "
               "as 2 * s) or add a scalar parameter named 's'");
}

TEST(CallPlan, WorkspaceInitMustNameAWorkspace) {
  const Expr n = symbolic("n");
  const auto f = prim_func("k")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("W", {n}, DataType::float32())
                     .build();
  JitOptions o;
  o.workspace_init = {{"X", WorkspaceInit::kZero}};
  expect_error([&] { build_call_plan(f, legalize_indices(f, {}, {1}), o); }, ErrorKind::kValueError,
               "k: workspace_init names 'X', which is not a workspace");
  o.workspace_init = {{"Q", WorkspaceInit::kZero}};
  expect_error([&] { build_call_plan(f, legalize_indices(f, {}, {1}), o); }, ErrorKind::kValueError,
               "k: workspace_init names 'Q', which is not a workspace (no parameter has that name)");
}

TEST(CallPlan, DeclarationErrors) {
  const Expr n = symbolic("n");
  expect_error([&] { prim_func("k").tensor("X", {n}, DataType::float32()).tensor("X", {n}, DataType::float32()).build(); },
               ErrorKind::kValueError, "k: parameter #1 'X' duplicates an earlier name");
  expect_error([&] { prim_func("k").scalar("a", DataType::float64()).build(); }, ErrorKind::kTypeError,
               "k: scalar parameter #0 'a' has dtype float64; scalars are int32, int64 or float32");
  expect_error([&] { prim_func("k").tensor("X", {n}, DataType::float32()).grid({1, 2, 3, 4}).build(); },
               ErrorKind::kValueError, "k: the grid has 4 extents; expected 1 to 3");
  expect_error([&] { prim_func("k").tensor("X", {n}, DataType::float32()).grid({0}).build(); },
               ErrorKind::kValueError, "k: grid extent 0 is 0; extents must be positive");
  expect_error([&] { prim_func("2k").build(); }, ErrorKind::kValueError,
               "prim_func name '2k' is not an identifier");
  expect_error([&] { prim_func("k").tensor("X", {-1}, DataType::float32()).build(); },
               ErrorKind::kValueError, "k: parameter #0 'X' dimension 0 is negative (-1)");
  expect_error([&] { prim_func("k").tensor("block_idx", {n}, DataType::float32()).build(); },
               ErrorKind::kValueError,
               "k: parameter #0 name 'block_idx' is reserved (a name the generated wrapper "
               "declares)");
  expect_error([&] { prim_func("k").tensor("tilejit_x", {n}, DataType::float32()).build(); },
               ErrorKind::kValueError,
               "k: parameter #0 name 'tilejit_x' is reserved (a name the generated wrapper "
               "declares)");
  expect_error([&] { prim_func("k").tensor("int32_t", {n}, DataType::float32()).build(); },
               ErrorKind::kValueError,
               "k: parameter #0 name 'int32_t' is reserved (a type name the generated code "
               "uses)");
  expect_error([&] { prim_func("k").tensor("new", {n}, DataType::float32()).build(); },
               ErrorKind::kValueError, "k: parameter #0 name 'new' is reserved (a C++ keyword)");
  expect_error([&] { prim_func("k").tensor("X", {symbolic("switch")}, DataType::float32()).build(); },
               ErrorKind::kValueError, "k: symbol name 'switch' is reserved (a C++ keyword)");
  expect_error([&] { prim_func("k").tensor("X", {n}, DataType::float32()).scalar("n", DataType::float32()).build(); },
               ErrorKind::kTypeError,
               "k: symbol 'n' is bound by scalar parameter #1 of dtype float32; it must be int32 or int64");
  expect_error([&] { prim_func("k").tensor("n", {n}, DataType::float32()).build(); },
               ErrorKind::kValueError, "k: symbol 'n' has the name of tensor parameter #0");
}

}  // namespace
}  // namespace tilejit
