// Typed expression nodes, dtypes, variables, the visitor / mutator pair.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::ir {
namespace {

using tilejit::testing::expect_error;

const DataType f32 = DataType::float32();
const DataType f16 = DataType::float16();
const DataType i32 = DataType::int32();
const DataType i64 = DataType::int64();
const DataType boolean = DataType::boolean();

TEST(IrNodes, TypedNodesByKind) {
  Expr s = symbolic("s");
  Expr e = s + 1;
  ASSERT_NE(e.as<AddNode>(), nullptr);
  EXPECT_EQ(e.as<SubNode>(), nullptr);
  ASSERT_NE(e.as<BinaryNode>(), nullptr);
  EXPECT_EQ(e.as<BinaryNode>()->a.get(), s.get());
  EXPECT_NE(Expr(3).as<IntImmNode>(), nullptr);
  EXPECT_EQ(Expr(3).as<VarNode>(), nullptr);
  EXPECT_EQ(s.as<VarNode>()->name, "s");
  EXPECT_EQ(make_float(1.5).as<FloatImmNode>()->value, 1.5);
  EXPECT_STREQ(expr_kind_name(ExprKind::kLoad), "Load");
  EXPECT_STREQ(expr_kind_name((s < 2).kind()), "LT");
}

TEST(IrNodes, Dtypes) {
  Expr s = symbolic("s");
  EXPECT_EQ(s.dtype(), i64);
  EXPECT_EQ(Expr(3).dtype(), i64);
  Expr i = make_var("i", i32);
  EXPECT_EQ(i.dtype(), i32);
  // A literal adopts the other operand's dtype.
  EXPECT_EQ((i + 1).dtype(), i32);
  EXPECT_EQ((i + 1).b().dtype(), i32);
  // int op int: the wider one.
  EXPECT_EQ((i + s).dtype(), i64);
  Expr x = make_var("x", f16);
  EXPECT_EQ((x * 0.5).dtype(), f16);  // a float literal takes the float operand's dtype
  EXPECT_EQ((x * 2).dtype(), f16);
  EXPECT_EQ((i * make_var("y", f32)).dtype(), f32);  // int op float: the float
  EXPECT_EQ(lt(i, 4).dtype(), boolean);
  EXPECT_EQ(logical_and(lt(i, 4), ge(i, 0)).dtype(), boolean);
  EXPECT_EQ(promote(f16, DataType::bfloat16()), f32);
  EXPECT_EQ(promote(DataType::int8(), i32), i32);
  EXPECT_EQ(promote(boolean, i32), i32);
  // Signed with unsigned (TVM's BinaryOpMatchTypes): the wider, and at one
  // width the unsigned one, as in C.
  const DataType u32 = DataType::uint32(), u64 = DataType::uint64();
  EXPECT_EQ(promote(i32, u32), u32);
  EXPECT_EQ(promote(u32, i32), u32);
  EXPECT_EQ(promote(u32, i64), i64);
  EXPECT_EQ(promote(i64, u64), u64);
  EXPECT_EQ(promote(DataType::uint16(), i32), i32);
  EXPECT_EQ(promote(DataType::int8(), DataType::uint8()), DataType::uint8());
}

TEST(IrNodes, UnsignedFolding) {
  // Note [Unsigned constants]: uint32 folds modulo 2^32 ...
  const DataType u32 = DataType::uint32(), u64 = DataType::uint64();
  EXPECT_EQ((make_int(4000000000LL, u32) + make_int(500000000LL, u32)).int_value(), 205032704);
  EXPECT_EQ((make_int(3, u32) - make_int(5, u32)).int_value(), 4294967294LL);
  EXPECT_EQ(make_int(-1, u32).int_value(), 4294967295LL);
  EXPECT_EQ(lt(make_int(1, u32), make_int(-1, u32)).int_value(), 1);
  // ... and uint64 is not folded: 2^63 + 1 is a negative int64.
  Expr big = make_int(INT64_MIN + 1, u64);
  Expr q = floordiv(big, make_int(3, u64));
  EXPECT_EQ(q.kind(), ExprKind::kFloorDiv);
  EXPECT_EQ(q.dtype(), u64);
  EXPECT_EQ(gt(big, make_int(1, u64)).kind(), ExprKind::kGT);
  // simplify() keeps unsigned arithmetic as written.
  Expr x = make_var("x", u32);
  EXPECT_EQ(simplify(x + 1 - 1).kind(), ExprKind::kSub);
}

TEST(IrNodes, FloatFoldingAndCasts) {
  EXPECT_EQ((make_float(1.5) * 2).float_value(), 3.0);
  EXPECT_EQ((make_float(1.5) * 2).dtype(), f32);
  EXPECT_EQ(div(make_float(1.0), make_float(4.0)).float_value(), 0.25);
  EXPECT_EQ(div(Expr(7), Expr(-2)).int_value(), -3);  // truncating on ints
  EXPECT_EQ(lt(Expr(2), Expr(3)).int_value(), 1);
  EXPECT_EQ(lt(Expr(2), Expr(3)).dtype(), boolean);
  EXPECT_EQ(cast(f32, Expr(3)).float_value(), 3.0);
  EXPECT_EQ(cast(i32, make_float(2.5, f32)).kind(), ExprKind::kCast);
  Expr x = make_var("x", f32);
  EXPECT_EQ(cast(f32, x).get(), x.get());  // a cast to its own dtype is the value
  EXPECT_EQ(cast(f16, x).dtype(), f16);
  EXPECT_TRUE(std::isinf(infinity(f16).float_value()));
  EXPECT_EQ(infinity(f16).dtype(), f16);
  EXPECT_EQ(make_int(300, DataType::int8()).int_value(), 44);  // wraps to its width
}

// Folded constants keep a NaN from either side, as the targets' T.max and
// T.min do.
TEST(IrNodes, FoldedMaxAndMinKeepNaN) {
  const Expr nan = make_float(std::nan(""), f32), one = make_float(1.0, f32);
  for (const Expr& e : {max(nan, one), max(one, nan), min(nan, one), min(one, nan)}) {
    ASSERT_NE(e.as<FloatImmNode>(), nullptr) << to_string(e);
    EXPECT_TRUE(std::isnan(e.float_value())) << to_string(e);
  }
  EXPECT_EQ(max(make_float(2.0, f32), one).float_value(), 2.0);
  EXPECT_EQ(min(make_float(2.0, f32), one).float_value(), 1.0);
}

TEST(IrNodes, SelectAndCalls) {
  Expr x = make_var("x", f32);
  Expr i = make_var("i", i32);
  Expr s = select(lt(i, 4), x, 0);
  ASSERT_NE(s.as<SelectNode>(), nullptr);
  EXPECT_EQ(s.dtype(), f32);
  EXPECT_EQ(s.as<SelectNode>()->false_value.dtype(), f32);
  EXPECT_EQ(select(make_bool(true), x, 0).get(), x.get());
  Expr e = call_intrinsic(Intrinsic::kExp, {x});
  EXPECT_EQ(e.dtype(), f32);
  EXPECT_EQ(call_intrinsic(Intrinsic::kSqrt, {i}).dtype(), f32);  // ints go to float32
  EXPECT_EQ(call_intrinsic(Intrinsic::kAbs, {i}).dtype(), i32);
  EXPECT_EQ(call_intrinsic(Intrinsic::kPow, {make_var("h", f16), 2}).dtype(), f16);
}

TEST(IrNodes, TypeErrors) {
  Expr x = make_var("x", f32);
  Expr i = make_var("i", i32);
  expect_error([&] { floordiv(x, 2); }, ErrorKind::kTypeError,
               "'//' needs integer operands, got float32 and float32");
  expect_error([&] { floormod(i, x); }, ErrorKind::kTypeError,
               "'%' needs integer operands, got int32 and float32");
  expect_error([&] { logical_and(i, lt(i, 1)); }, ErrorKind::kTypeError,
               "'&&' needs bool operands, got int32 and bool");
  expect_error([&] { logical_not(x); }, ErrorKind::kTypeError,
               "'!' needs a bool operand, got float32");
  expect_error([&] { select(i, x, x); }, ErrorKind::kTypeError,
               "select: the condition has dtype int32; expected bool");
  expect_error([&] { call_intrinsic(Intrinsic::kExp, {x, x}); }, ErrorKind::kValueError,
               "exp takes 1 argument, got 2");
  expect_error([&] { call_intrinsic(Intrinsic::kPow, {x}); }, ErrorKind::kValueError,
               "pow takes 2 arguments, got 1");
  expect_error([] { make_float(1.0, DataType::int32()); }, ErrorKind::kTypeError,
               "a floating constant cannot have dtype int32");
  expect_error([] { make_int(1, DataType::float32()); }, ErrorKind::kTypeError,
               "an integer constant cannot have dtype float32");
  expect_error([] { infinity(DataType::int32()); }, ErrorKind::kTypeError,
               "infinity: dtype int32 is not a float dtype");
  expect_error([&] { div(i, 0); }, ErrorKind::kValueError, "division by constant zero in i / 0");
}

TEST(IrNodes, VariablesIdentity) {
  Expr i1 = make_var("i"), i2 = make_var("i");
  EXPECT_GT(i1.var_id(), 0u);
  EXPECT_NE(i1.var_id(), i2.var_id());
  EXPECT_FALSE(structural_equal(i1, i2));  // IR variables by identity
  EXPECT_TRUE(structural_equal(i1 + 1, i1 + 1));
  EXPECT_TRUE(structural_equal(symbolic("n"), symbolic("n")));  // symbols by name
  EXPECT_EQ(symbolic("n").var_id(), 0u);
  EXPECT_EQ(Expr::var("alpha", f32).dtype(), f32);
  expect_error([] { make_var("a b"); }, ErrorKind::kValueError,
               "variable name 'a b' is not a C identifier");
  // Only symbols are collected.
  std::vector<std::string> names;
  collect_vars(i1 * symbolic("n") + i2, &names);
  EXPECT_EQ(names, std::vector<std::string>{"n"});
}

TEST(IrNodes, StructuralCompareIsATotalOrder) {
  Expr a = symbolic("a"), b = symbolic("b");
  EXPECT_LT(structural_compare(a, b), 0);
  EXPECT_GT(structural_compare(b, a), 0);
  EXPECT_EQ(structural_compare(a + 1, symbolic("a") + 1), 0);
  EXPECT_LT(structural_compare(a, Expr(1)), 0);  // symbols before constants
  EXPECT_NE(structural_compare(make_int(1, i32), Expr(1)), 0);  // dtypes differ
}

TEST(IrNodes, Loads) {
  Buffer A = Buffer::make("A", {16, symbolic("n")}, f16, Scope::kShared);
  Expr i = make_var("i");
  Expr e = load(A, {i, i + 1});
  ASSERT_NE(e.as<LoadNode>(), nullptr);
  EXPECT_EQ(e.dtype(), f16);
  EXPECT_EQ(to_string(e), "A[i, i + 1]");
  EXPECT_EQ(to_string(e * 2.0), "A[i, i + 1] * float16(2.0)");
  expect_error([&] { load(A, {i}); }, ErrorKind::kValueError,
               "load of A: 1 indices for a buffer of rank 2");
  expect_error([&] { load(A, {i, make_float(1.0)}); }, ErrorKind::kTypeError,
               "load of A: index 1 (1.0) has dtype float32; indices are integers");
  std::vector<std::string> names;
  collect_vars(e, &names);
  EXPECT_EQ(names, std::vector<std::string>{"n"});  // the buffer's shape's symbols
}

TEST(IrNodes, PrintingNewKinds) {
  Expr i = make_var("i", i32), j = make_var("j", i32);
  Expr x = make_var("x", f32);
  EXPECT_EQ(to_string(lt(i, 4)), "i < 4");
  EXPECT_EQ(to_string(logical_and(lt(i, 4), ge(j, 0))), "i < 4 && j >= 0");
  EXPECT_EQ(to_string(logical_or(logical_and(lt(i, 4), ge(j, 0)), eq(i, j))),
            "i < 4 && j >= 0 || i == j");
  EXPECT_EQ(to_string(logical_and(logical_or(lt(i, 4), ge(j, 0)), ne(i, j))),
            "(i < 4 || j >= 0) && i != j");
  EXPECT_EQ(to_string(logical_not(lt(i, 4))), "!(i < 4)");
  EXPECT_EQ(to_string(div(x, 2)), "x / 2.0");
  EXPECT_EQ(to_string(x * 0.5 + 1), "x * 0.5 + 1.0");
  EXPECT_EQ(to_string(select(gt(x, 0), x, 0)), "select(x > 0.0, x, 0.0)");
  EXPECT_EQ(to_string(cast(f16, x)), "float16(x)");
  EXPECT_EQ(to_string(call_intrinsic(Intrinsic::kExp2, {x * 1.4426950408889634})),
            "exp2(x * 1.4426950408889634)");
  EXPECT_EQ(to_string(max(x, infinity(f32))), "max(x, inf)");
  EXPECT_EQ(to_string(make_bool(true)), "true");
  // Distinct variables of one name print apart.
  Expr i2 = make_var("i", i32);
  EXPECT_EQ(to_string(i + i2), "i + i_1");
  EXPECT_EQ(to_string(i2 + i), "i + i_1");
}

// Counts the Var nodes it meets.
class VarCounter : public IRVisitor {
 public:
  int count = 0;

 protected:
  void visit_var(const VarNode*, const Expr&) override { ++count; }
};

// Replaces every IR variable by 7.
class SubstituteSeven : public IRMutator {
 protected:
  Expr visit_var(const VarNode* op, const Expr& e) override {
    return op->id != 0 ? Expr(make_int(7, op->dtype)) : e;
  }
};

TEST(IrNodes, VisitorReachesEveryChild) {
  Buffer A = Buffer::make("A", {8}, f32, Scope::kLocal);
  Expr i = make_var("i"), x = make_var("x", f32);
  Expr e = select(lt(i, 4), call_intrinsic(Intrinsic::kExp, {load(A, {i})}),
                  cast(f32, logical_not(eq(i, 2)))) +
           x;
  VarCounter counter;
  counter.visit(e);
  EXPECT_EQ(counter.count, 4);  // i three times, x once
}

TEST(IrNodes, MutatorRebuildsOnlyWhatChanged) {
  Expr n = symbolic("n"), i = make_var("i", i64);
  Expr untouched = n * 2 + 1;
  SubstituteSeven m;
  EXPECT_EQ(m.mutate(untouched).get(), untouched.get());
  Expr e = n * i + i;
  EXPECT_EQ(to_string(m.mutate(e)), "n * 7 + 7");
  EXPECT_EQ(m.mutate(i * 2 + 1).int_value(), 15);  // constants fold again
}

TEST(IrNodes, UnhandledKindIsAnInternalError) {
  // A walk over shape expressions does not handle loads.
  Buffer A = Buffer::make("A", {8}, i64, Scope::kLocal);
  class IntsOnly : public ExprFunctor<int> {
   protected:
    const char* walk_name() const override { return "ints only"; }
    int visit_int_imm(const IntImmNode*, const Expr&) override { return 1; }
  } walk;
  EXPECT_EQ(walk.visit_expr(Expr(3)), 1);
  expect_error([&] { walk.visit_expr(load(A, {0})); }, ErrorKind::kInternalError,
               "ints only: expression kind Load is not handled (A[0])");
}

TEST(IrNodes, SimplifyCanonicalisesIndexArithmetic) {
  Expr i = make_var("i", i32), x = make_var("x", f32);
  Expr e = simplify(i * 32 + 32 - i * 32);
  EXPECT_EQ(to_string(e), "32");
  EXPECT_EQ(e.dtype(), i32);  // a constant result keeps the dtype
  EXPECT_EQ(to_string(simplify(i + i + 1)), "2 * i + 1");
  EXPECT_EQ(simplify(i + i + 1).dtype(), i32);
  // Floats and comparisons are left as written (their integer operands are not).
  EXPECT_EQ(to_string(simplify(x + x)), "x + x");
  EXPECT_EQ(to_string(simplify(lt(i + 0, 4))), "i + 0 < 4");
}

TEST(IrNodes, EvaluateRejectsNonShapeKinds) {
  Expr i = make_var("i", i64);
  expect_error([&] { evaluate(lt(symbolic("s"), 3), [](const std::string&) { return int64_t{0}; }); },
               ErrorKind::kValueError, "evaluate: s < 3 is not an integer shape expression");
  (void)i;
}

}  // namespace
}  // namespace tilejit::ir
