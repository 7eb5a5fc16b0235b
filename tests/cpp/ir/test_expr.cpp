#include "tilejit/ir/expr.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "common/test_util.h"
#include "tilejit/core/error.h"

namespace tilejit::ir {
namespace {

using tilejit::testing::expect_error;


int64_t eval_with(const Expr& e, const std::map<std::string, int64_t>& env) {
  return evaluate(e, [&](const std::string& name) { return env.at(name); });
}

TEST(Expr, ConstantsAndSymbols) {
  Expr c = 42;
  EXPECT_TRUE(c.defined());
  EXPECT_TRUE(c.is_const());
  EXPECT_FALSE(c.is_var());
  EXPECT_EQ(c.kind(), ExprKind::kIntImm);
  EXPECT_EQ(c.int_value(), 42);
  EXPECT_EQ(Expr(int64_t{1} << 40).int_value(), int64_t{1} << 40);

  Expr s = Expr::var("seq_len");
  EXPECT_TRUE(s.is_var());
  EXPECT_EQ(s.kind(), ExprKind::kVar);
  EXPECT_EQ(s.var_name(), "seq_len");
  EXPECT_EQ(symbolic("_b2").var_name(), "_b2");

  Expr none;
  EXPECT_FALSE(none.defined());
  EXPECT_FALSE(none.is_const());
  EXPECT_FALSE(none.is_var());
}

TEST(Expr, BinaryOperands) {
  Expr b = symbolic("b"), s = symbolic("s");
  Expr e = b * s;
  EXPECT_EQ(e.kind(), ExprKind::kMul);
  EXPECT_TRUE(structural_equal(e.a(), b));
  EXPECT_TRUE(structural_equal(e.b(), s));
  EXPECT_EQ((b + s).kind(), ExprKind::kAdd);
  EXPECT_EQ((b - s).kind(), ExprKind::kSub);
  EXPECT_EQ(floordiv(b, s).kind(), ExprKind::kFloorDiv);
  EXPECT_EQ(floormod(b, s).kind(), ExprKind::kFloorMod);
  EXPECT_EQ(ceildiv(b, s).kind(), ExprKind::kCeilDiv);
  EXPECT_EQ(min(b, s).kind(), ExprKind::kMin);
  EXPECT_EQ(max(b, s).kind(), ExprKind::kMax);
  EXPECT_EQ(make_binary(ExprKind::kAdd, b, 1).kind(), ExprKind::kAdd);
}

TEST(Expr, BadSymbolNames) {
  for (const char* name : {"", "1b", "a-b", "a b", "s.x", "é"}) {
    expect_error([&] { Expr::var(name); }, ErrorKind::kValueError,
                 std::string("symbol name '") + name + "' is not a C identifier");
  }
  expect_error([] { symbolic("9"); }, ErrorKind::kValueError,
               "symbol name '9' is not a C identifier");
}

TEST(Expr, ConstantFolding) {
  EXPECT_EQ((Expr(2) + 3).int_value(), 5);
  EXPECT_EQ((Expr(2) - 7).int_value(), -5);
  EXPECT_EQ((Expr(6) * 7).int_value(), 42);
  EXPECT_EQ(floordiv(7, 2).int_value(), 3);
  EXPECT_EQ(floordiv(-7, 2).int_value(), -4);
  EXPECT_EQ(floordiv(7, -2).int_value(), -4);
  EXPECT_EQ(floordiv(-7, -2).int_value(), 3);
  EXPECT_EQ(floormod(-7, 2).int_value(), 1);
  EXPECT_EQ(floormod(7, -2).int_value(), -1);
  EXPECT_EQ(ceildiv(7, 2).int_value(), 4);
  EXPECT_EQ(ceildiv(8, 2).int_value(), 4);
  EXPECT_EQ(ceildiv(-7, 2).int_value(), -3);
  EXPECT_EQ(min(3, -4).int_value(), -4);
  EXPECT_EQ(max(3, -4).int_value(), 3);
  EXPECT_TRUE(make_binary(ExprKind::kMul, 3, 4).is_const());
}

TEST(Expr, FoldingNeverWrapsNorTraps) {
  // Note [Integer semantics]: a folded constant that does not fit in int64
  // is a ValueError naming the operation as written.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  expect_error([] { Expr(kMax) + 1; }, ErrorKind::kValueError,
               "int64 overflow in 9223372036854775807 + 1");
  expect_error([] { Expr(kMin) - 1; }, ErrorKind::kValueError,
               "int64 overflow in -9223372036854775808 - 1");
  expect_error([] { Expr(int64_t{1} << 32) * (int64_t{1} << 31); }, ErrorKind::kValueError,
               "int64 overflow in 4294967296 * 2147483648");
  expect_error([] { floordiv(kMin, -1); }, ErrorKind::kValueError,
               "int64 overflow in -9223372036854775808 // -1");
  expect_error([] { ceildiv(kMin, -1); }, ErrorKind::kValueError,
               "int64 overflow in ceildiv(-9223372036854775808, -1)");
  EXPECT_EQ((Expr(kMax - 1) + 1).int_value(), kMax);
  EXPECT_EQ((Expr(kMin + 1) * -1).int_value(), kMax);
  EXPECT_EQ(floormod(kMin, -1).int_value(), 0);
  EXPECT_EQ(floordiv(kMin + 1, -1).int_value(), kMax);
  EXPECT_EQ(ceildiv(kMin, 2).int_value(), kMin / 2);
  EXPECT_EQ(ceildiv(kMin, 3).int_value(), kMin / 3);
}

TEST(Expr, NoFoldingWithASymbol) {
  // Identities are simplify()'s job: construction folds constants only.
  Expr s = symbolic("s");
  EXPECT_EQ((s + 0).kind(), ExprKind::kAdd);
  EXPECT_EQ((s * 1).kind(), ExprKind::kMul);
  EXPECT_EQ((s - s).kind(), ExprKind::kSub);
  EXPECT_EQ(to_string((Expr(2) + 3) * s), "5 * s");
}

TEST(Expr, ConstantZeroDivisor) {
  Expr n = symbolic("n");
  expect_error([&] { floordiv(n, 0); }, ErrorKind::kValueError,
               "division by constant zero in n // 0");
  expect_error([&] { floormod(n + 1, 0); }, ErrorKind::kValueError,
               "division by constant zero in (n + 1) % 0");
  expect_error([&] { ceildiv(n, 0); }, ErrorKind::kValueError,
               "division by constant zero in ceildiv(n, 0)");
  expect_error([] { floordiv(4, 0); }, ErrorKind::kValueError,
               "division by constant zero in 4 // 0");
  expect_error([] { make_binary(ExprKind::kFloorMod, 4, 0); }, ErrorKind::kValueError,
               "division by constant zero in 4 % 0");
  // A symbolic zero is only known at evaluation.
  EXPECT_NO_THROW(floordiv(n, n - n));
}

TEST(Expr, UndefinedOperands) {
  expect_error([] { Expr() + 1; }, ErrorKind::kValueError,
               "an operand of '+' is an undefined expression");
  expect_error([] { min(Expr(), 1); }, ErrorKind::kValueError,
               "an operand of 'min' is an undefined expression");
  EXPECT_THROW(make_binary(ExprKind::kVar, 1, 2), Error);
}

TEST(Expr, Printing) {
  Expr a = symbolic("a"), b = symbolic("b"), c = symbolic("c"), s = symbolic("s"),
       n = symbolic("n");
  EXPECT_EQ(to_string(Expr(7)), "7");
  EXPECT_EQ(to_string(s), "s");
  EXPECT_EQ(to_string(b * s + 1), "b * s + 1");
  EXPECT_EQ(to_string((a + b) * c), "(a + b) * c");
  EXPECT_EQ(to_string(a + b * c), "a + b * c");
  EXPECT_EQ(to_string(floordiv(n, 64)), "n // 64");
  EXPECT_EQ(to_string(floormod(n, 64)), "n % 64");
  EXPECT_EQ(to_string(ceildiv(n, 64)), "ceildiv(n, 64)");
  EXPECT_EQ(to_string(min(a, b)), "min(a, b)");
  EXPECT_EQ(to_string(max(a + 1, b * 2)), "max(a + 1, b * 2)");
  EXPECT_EQ(to_string(ceildiv(a * b, 64) * 2), "ceildiv(a * b, 64) * 2");
  EXPECT_EQ(to_string(Expr()), "<undefined>");
}

TEST(Expr, PrintingParenthesesFollowAssociativity) {
  Expr a = symbolic("a"), b = symbolic("b"), c = symbolic("c");
  // Left-associative chains need none on the left ...
  EXPECT_EQ(to_string(a - b - c), "a - b - c");
  EXPECT_EQ(to_string(a + b - c), "a + b - c");
  EXPECT_EQ(to_string(floordiv(a * b, c)), "a * b // c");
  EXPECT_EQ(to_string(floormod(floordiv(a, 4), 2)), "a // 4 % 2");
  // ... and the right operand needs them at equal precedence.
  EXPECT_EQ(to_string(a - (b + c)), "a - (b + c)");
  EXPECT_EQ(to_string(a - (b - c)), "a - (b - c)");
  EXPECT_EQ(to_string(a + (b + c)), "a + (b + c)");
  EXPECT_EQ(to_string(a * floordiv(b, c)), "a * (b // c)");
  EXPECT_EQ(to_string(floordiv(a, b * c)), "a // (b * c)");
  EXPECT_EQ(to_string((a - b) * (b + c)), "(a - b) * (b + c)");
  EXPECT_EQ(to_string(floordiv(a + b, 2)), "(a + b) // 2");
}

TEST(Expr, PrintingNegativeConstants) {
  Expr s = symbolic("s");
  EXPECT_EQ(to_string(Expr(-3)), "-3");
  EXPECT_EQ(to_string(s + -1), "s + -1");
  EXPECT_EQ(to_string(s - -1), "s - -1");
  EXPECT_EQ(to_string(Expr(-2) * s), "-2 * s");
  EXPECT_EQ(to_string(floordiv(s, -4)), "s // -4");
}

TEST(Expr, StreamOperator) {
  std::ostringstream os;
  os << ceildiv(symbolic("n"), 64) << ";" << Expr(3);
  EXPECT_EQ(os.str(), "ceildiv(n, 64);3");
}

TEST(Expr, StructuralEqual) {
  Expr s = symbolic("s");
  EXPECT_TRUE(structural_equal(s, symbolic("s")));  // symbols are equal by name
  EXPECT_FALSE(structural_equal(s, symbolic("t")));
  EXPECT_TRUE(structural_equal(Expr(3), Expr(3)));
  EXPECT_FALSE(structural_equal(Expr(3), Expr(4)));
  EXPECT_TRUE(structural_equal(s * 2 + 1, symbolic("s") * 2 + 1));
  EXPECT_FALSE(structural_equal(s * 2 + 1, 2 * s + 1));  // no reordering
  EXPECT_FALSE(structural_equal(s + 1, s - 1));
  EXPECT_FALSE(structural_equal(min(s, 1), max(s, 1)));
  EXPECT_FALSE(structural_equal(s, Expr(1)));
  EXPECT_TRUE(structural_equal(Expr(), Expr()));
  EXPECT_FALSE(structural_equal(Expr(), s));
}

TEST(Expr, CollectVars) {
  Expr b = symbolic("b"), s = symbolic("s"), h = symbolic("h");
  std::vector<std::string> vars;
  collect_vars(s * b + floordiv(s, h) + 4, &vars);
  EXPECT_EQ(vars, (std::vector<std::string>{"s", "b", "h"}));
  collect_vars(min(h, symbolic("k")), &vars);  // appends only the new one
  EXPECT_EQ(vars, (std::vector<std::string>{"s", "b", "h", "k"}));
  std::vector<std::string> none;
  collect_vars(Expr(3) * 4, &none);
  collect_vars(Expr(), &none);
  EXPECT_TRUE(none.empty());
}

TEST(Expr, Evaluate) {
  Expr b = symbolic("b"), s = symbolic("s"), n = symbolic("n");
  std::map<std::string, int64_t> env{{"b", 4}, {"s", 100}, {"n", -7}};
  EXPECT_EQ(eval_with(b * s + 1, env), 401);
  EXPECT_EQ(eval_with(ceildiv(s, 64), env), 2);
  EXPECT_EQ(eval_with(floordiv(s, 64), env), 1);
  EXPECT_EQ(eval_with(floormod(s, 64), env), 36);
  EXPECT_EQ(eval_with(floordiv(n, 2), env), -4);
  EXPECT_EQ(eval_with(floormod(n, 2), env), 1);
  EXPECT_EQ(eval_with(ceildiv(n, 2), env), -3);
  EXPECT_EQ(eval_with(min(b, s) - max(b, n), env), 0);
  EXPECT_EQ(eval_with(Expr(9), env), 9);
}

TEST(Expr, EvaluateDivisionByZero) {
  Expr s = symbolic("s"), t = symbolic("t");
  std::map<std::string, int64_t> env{{"s", 3}, {"t", 0}};
  expect_error([&] { eval_with(floordiv(s, t), env); }, ErrorKind::kValueError,
               "division by zero in s // t");
  expect_error([&] { eval_with(floormod(s, t) + 1, env); }, ErrorKind::kValueError,
               "division by zero in s % t");
  expect_error([&] { eval_with(2 * ceildiv(s + 1, s - 3), env); }, ErrorKind::kValueError,
               "division by zero in ceildiv(s + 1, s - 3)");
  expect_error([] { evaluate(Expr(), [](const std::string&) { return int64_t{0}; }); },
               ErrorKind::kValueError, "evaluate: the expression is undefined");
}

TEST(Expr, EvaluateOverflow) {
  // The innermost operation that does not fit is named, as a division by
  // zero is; try_evaluate() says the same without throwing.
  Expr m = symbolic("m"), n = symbolic("n");
  std::map<std::string, int64_t> env{{"m", int64_t{1} << 32}, {"n", 65536}};
  expect_error([&] { eval_with(m * m + 5, env); }, ErrorKind::kValueError,
               "int64 overflow in m * m");
  expect_error([&] { eval_with(n * n * n * n, env); }, ErrorKind::kValueError,
               "int64 overflow in n * n * n * n");
  expect_error([&] { eval_with(floordiv(0 - m * m * m, 1), env); }, ErrorKind::kValueError,
               "int64 overflow in m * m");
  EXPECT_EQ(eval_with(n * n * n, env), int64_t{1} << 48);
  // 2^32 * (2^31 - 1) + 2^32 - 1 is INT64_MAX itself.
  EXPECT_EQ(eval_with(m * (floordiv(m, 2) - 1) + (m - 1), env),
            std::numeric_limits<int64_t>::max());
  auto lookup = [&](const std::string& name) { return env.at(name); };
  int64_t value = 0;
  Expr where;
  EXPECT_EQ(try_evaluate(m * m * m + floordiv(n, n - n), lookup, &value, &where),
            EvalStatus::kOverflow);
  EXPECT_EQ(to_string(where), "m * m");
  EXPECT_EQ(try_evaluate(floordiv(n, n - n) + m * m, lookup, &value, &where),
            EvalStatus::kDivisionByZero);
  EXPECT_EQ(to_string(where), "n // (n - n)");
  EXPECT_EQ(try_evaluate(n * n, lookup, &value), EvalStatus::kOk);
  EXPECT_EQ(value, int64_t{1} << 32);
}

TEST(Expr, EvaluateLookupErrorsPropagate) {
  Expr s = symbolic("s");
  EXPECT_THROW(evaluate(s + 1,
                        [](const std::string& name) -> int64_t {
                          TILEJIT_THROW(kValueError) << "unbound symbol '" << name << "'";
                        }),
               Error);
}

TEST(Expr, IntegerHelpersMatchPython) {
  // Python: -7 // 2 == -4, -7 % 2 == 1, 7 % -2 == -1, -(-7 // 2) == 4.
  static_assert(floordiv_int(-7, 2) == -4);
  static_assert(floormod_int(-7, 2) == 1);
  static_assert(floormod_int(7, -2) == -1);
  static_assert(ceildiv_int(7, 2) == 4);
  static_assert(ceildiv_int(-7, 2) == -3);
  // Near INT64_MIN no intermediate may overflow (a constant expression with
  // undefined behaviour would not compile): INT64_MIN = -3074457345618258603 * 3 + 1.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  static_assert(floordiv_int(kMin, 3) == -3074457345618258603);
  static_assert(floormod_int(kMin, 3) == 1);
  static_assert(floormod_int(kMin, -3) == -2);
  static_assert(ceildiv_int(kMin, 3) == -3074457345618258602);
  static_assert(ceildiv_int(kMin, 2) == kMin / 2);
  static_assert(floormod_int(kMin + 1, std::numeric_limits<int64_t>::max()) == 0);
  for (int64_t a = -20; a <= 20; ++a) {
    for (int64_t b = -6; b <= 6; ++b) {
      if (b == 0) continue;
      int64_t q = floordiv_int(a, b), r = floormod_int(a, b);
      EXPECT_EQ(q * b + r, a);
      EXPECT_TRUE(r == 0 || (r < 0) == (b < 0)) << a << " % " << b;
      int64_t c = ceildiv_int(a, b);
      EXPECT_EQ(c, q + (r != 0 ? 1 : 0)) << "ceildiv(" << a << ", " << b << ")";
    }
  }
}

}  // namespace
}  // namespace tilejit::ir
