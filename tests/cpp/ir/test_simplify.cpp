#include "tilejit/ir/simplify.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "common/test_util.h"
#include "tilejit/core/error.h"

namespace tilejit::ir {
namespace {

using tilejit::testing::expect_error;

std::string simp(const Expr& e) { return to_string(simplify(e)); }

class Simplify : public ::testing::Test {
 protected:
  Expr a = symbolic("a"), b = symbolic("b"), c = symbolic("c");
  Expr n = symbolic("n"), s = symbolic("s"), t = symbolic("t"), x = symbolic("x"),
       y = symbolic("y");
};

TEST_F(Simplify, ExamplesFromTheContract) {
  EXPECT_EQ(simp(b * s * 4), "4 * b * s");
  EXPECT_EQ(simp(s + s + 1 + 2), "2 * s + 3");
  EXPECT_EQ(simp(2 * s + 1), "2 * s + 1");
  EXPECT_EQ(simp(floordiv(4 * s, 2)), "2 * s");
  EXPECT_EQ(simp(floormod(4 * s, 2)), "0");
  Expr zero = simplify(x - x);
  ASSERT_TRUE(zero.is_const());
  EXPECT_EQ(zero.int_value(), 0);
}

TEST_F(Simplify, Identities) {
  EXPECT_EQ(simp(x + 0), "x");
  EXPECT_EQ(simp(0 + x), "x");
  EXPECT_EQ(simp(x - 0), "x");
  EXPECT_EQ(simp(x * 1), "x");
  EXPECT_EQ(simp(1 * x), "x");
  EXPECT_EQ(simp(x * 0), "0");
  EXPECT_EQ(simp(0 * x), "0");
  EXPECT_EQ(simp(floordiv(x, 1)), "x");
  EXPECT_EQ(simp(floormod(x, 1)), "0");
  EXPECT_EQ(simp(ceildiv(x, 1)), "x");
  EXPECT_EQ(simp(min(x, x)), "x");
  EXPECT_EQ(simp(max(x, x)), "x");
  EXPECT_EQ(simp(x - x), "0");
  EXPECT_EQ(simp(floordiv(x, -1)), "-1 * x");
  EXPECT_EQ(simp(floormod(x, -1)), "0");
  // Identities apply inside atoms too, and to operands equal only after
  // simplification.
  EXPECT_EQ(simp(min(x + 0, 1 * x)), "x");
  EXPECT_EQ(simp(max(s + t, t + s)), "s + t");
  EXPECT_EQ(simp(floordiv(n * 1 + 0, 64)), "n // 64");
}

TEST_F(Simplify, ConstantsFold) {
  EXPECT_EQ(simp(Expr(2) + 3), "5");
  EXPECT_EQ(simp(s - s + 7), "7");
  EXPECT_EQ(simp(floordiv(s - s + 7, 2)), "3");
  EXPECT_EQ(simp(floordiv(s - s - 7, 2)), "-4");
  EXPECT_EQ(simp(floormod(s - s - 7, 2)), "1");
  EXPECT_EQ(simp(ceildiv(s - s + 7, 2)), "4");
  EXPECT_EQ(simp(min(s - s + 3, 5)), "3");
  EXPECT_EQ(simp(max(s - s + 3, 5)), "5");
  EXPECT_EQ(simp((s + 2) - (s - 3)), "5");
}

TEST_F(Simplify, LikeTermsCombine) {
  EXPECT_EQ(simp(s + s + s), "3 * s");
  EXPECT_EQ(simp(2 * s - s), "s");
  EXPECT_EQ(simp(s * b + b * s), "2 * b * s");
  EXPECT_EQ(simp(s * 3 - 3 * s), "0");
  EXPECT_EQ(simp((a + b) * (a - b)), "a * a - b * b");
  EXPECT_EQ(simp((s + 1) * (s + 1)), "s * s + 2 * s + 1");
  EXPECT_EQ(simp(floordiv(n, 64) + floordiv(n, 64)), "2 * (n // 64)");
}

TEST_F(Simplify, CanonicalOrder) {
  // Products before single atoms before the constant; symbols by name;
  // the constant factor first.
  EXPECT_EQ(simp(1 + s + s * b), "b * s + s + 1");
  EXPECT_EQ(simp(t + s), "s + t");
  EXPECT_EQ(simp(s * b), "b * s");
  EXPECT_EQ(simp(s * 2 * b * 3), "6 * b * s");
  EXPECT_EQ(simp(y * x * x), "x * x * y");
  EXPECT_EQ(simp(3 + floordiv(n, 64) + s), "s + n // 64 + 3");
  // Negative terms after the first become subtractions.
  EXPECT_EQ(simp(s - 1), "s - 1");
  EXPECT_EQ(simp(x - 2 * y), "x - 2 * y");
  EXPECT_EQ(simp(1 - s), "-1 * s + 1");
  EXPECT_EQ(simp(Expr(0) - s), "-1 * s");
  // Equal polynomials print the same however they were written.
  EXPECT_TRUE(structural_equal(simplify((a + b) * c), simplify(c * b + a * c)));
  EXPECT_TRUE(structural_equal(simplify(min(t, s)), simplify(min(s, t))));
  EXPECT_EQ(simp(min(t, s)), "min(s, t)");
  EXPECT_EQ(simp(max(4, s)), "max(s, 4)");
}

TEST_F(Simplify, ExactDivisionByConstants) {
  EXPECT_EQ(simp(floordiv(4 * s + 8, 4)), "s + 2");
  EXPECT_EQ(simp(ceildiv(4 * s + 8, 4)), "s + 2");
  EXPECT_EQ(simp(floormod(4 * s + 8, 4)), "0");
  EXPECT_EQ(simp(floordiv(6 * s * t, -3)), "-2 * s * t");
  EXPECT_EQ(simp(floordiv(s * 64, 64) * 2), "2 * s");
  // Not every coefficient divides: the division stays, operands simplified.
  EXPECT_EQ(simp(floordiv(4 * s + 2, 4)), "(4 * s + 2) // 4");
  EXPECT_EQ(simp(floormod(s + s, 4)), "2 * s % 4");
  EXPECT_EQ(simp(ceildiv(n + 63, 64)), "ceildiv(n + 63, 64)");
  // Symbolic divisors are never divided out (s // s is undefined at s = 0).
  EXPECT_EQ(simp(floordiv(s, s)), "s // s");
  EXPECT_EQ(simp(floordiv(s + s, t)), "2 * s // t");
  EXPECT_EQ(simp(n * floordiv(s, 2)), "n * (s // 2)");
}

TEST_F(Simplify, DivisorSimplifyingToZeroStillFails) {
  Expr e = floordiv(s, t - t);
  Expr simplified = simplify(e);
  EXPECT_EQ(to_string(simplified), "s // (t - t)");
  auto lookup = [](const std::string&) { return int64_t{5}; };
  try {
    evaluate(simplified, lookup);
    ADD_FAILURE() << "expected a division by zero";
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kValueError);
    EXPECT_EQ(err.message(), "division by zero in s // (t - t)");
  }
}

TEST_F(Simplify, Idempotent) {
  for (const Expr& e : {b * s * 4, s + s + 1 + 2, 1 - s, (a + b) * (a - b),
                        floordiv(4 * s + 2, 4) + min(t, s) * 3, floordiv(s, t - t) * 2,
                        ceildiv(n + 63, 64) * 64 - n}) {
    Expr once = simplify(e);
    EXPECT_TRUE(structural_equal(simplify(once), once)) << to_string(once);
  }
}

TEST_F(Simplify, UndefinedStaysUndefined) { EXPECT_FALSE(simplify(Expr()).defined()); }

TEST_F(Simplify, SingleVarAffine) {
  AffineForm f;
  ASSERT_TRUE(as_single_var_affine(2 * s + 1, &f));
  EXPECT_EQ(f.var, "s");
  EXPECT_EQ(f.coeff, 2);
  EXPECT_EQ(f.offset, 1);

  ASSERT_TRUE(as_single_var_affine(s * 16, &f));
  EXPECT_EQ(f.var, "s");
  EXPECT_EQ(f.coeff, 16);
  EXPECT_EQ(f.offset, 0);

  ASSERT_TRUE(as_single_var_affine(s, &f));
  EXPECT_EQ(f.coeff, 1);
  EXPECT_EQ(f.offset, 0);

  // After simplification: 3 - s, s + s - s, (4 * t + 8) // 4.
  ASSERT_TRUE(as_single_var_affine(3 - s, &f));
  EXPECT_EQ(f.var, "s");
  EXPECT_EQ(f.coeff, -1);
  EXPECT_EQ(f.offset, 3);
  ASSERT_TRUE(as_single_var_affine(s + s - s, &f));
  EXPECT_EQ(f.coeff, 1);
  EXPECT_EQ(f.offset, 0);
  ASSERT_TRUE(as_single_var_affine(floordiv(4 * t + 8, 4), &f));
  EXPECT_EQ(f.var, "t");
  EXPECT_EQ(f.coeff, 1);
  EXPECT_EQ(f.offset, 2);
}

TEST_F(Simplify, NotSingleVarAffine) {
  AffineForm f{"untouched", 5, 6};
  EXPECT_FALSE(as_single_var_affine(b * s, &f));
  EXPECT_FALSE(as_single_var_affine(Expr(7), &f));
  EXPECT_FALSE(as_single_var_affine(floordiv(s, 2), &f));
  EXPECT_FALSE(as_single_var_affine(s - s, &f));
  EXPECT_FALSE(as_single_var_affine(s + t, &f));
  EXPECT_FALSE(as_single_var_affine(s * s, &f));
  EXPECT_FALSE(as_single_var_affine(s + floordiv(s, 2), &f));
  EXPECT_FALSE(as_single_var_affine(min(s, 4), &f));
  EXPECT_FALSE(as_single_var_affine(Expr(), &f));
  // A failed decomposition leaves the output alone.
  EXPECT_EQ(f.var, "untouched");
  EXPECT_EQ(f.coeff, 5);
  EXPECT_EQ(f.offset, 6);
}

TEST_F(Simplify, PreservesValueOnAGrid) {
  // A hand-picked set over a grid of values, negatives included; the random
  // property test in test_shape_program.cpp covers arbitrary trees.
  std::vector<Expr> exprs = {
      floordiv(4 * s + 8, 4),  floormod(4 * s + 8, 4), ceildiv(4 * s + 8, 4),
      floordiv(6 * s * t, -3), (a + b) * (a - b),      floordiv(s * 64, 64) * 2,
      min(t, s) + max(s, t),   1 - s + floordiv(s + s, 3) * t};
  for (int64_t va = -5; va <= 5; ++va) {
    for (int64_t vs = -5; vs <= 5; ++vs) {
      std::map<std::string, int64_t> env{{"a", va}, {"b", 3 - va}, {"s", vs}, {"t", va * 2}};
      auto lookup = [&](const std::string& name) { return env.at(name); };
      for (const Expr& e : exprs) {
        EXPECT_EQ(evaluate(simplify(e), lookup), evaluate(e, lookup)) << to_string(e);
      }
    }
  }
}

TEST_F(Simplify, CoefficientOverflowLeavesTheExpressionAsWritten) {
  // Note [Canonical polynomial form]: (s * 2^62) * 4 has the coefficient
  // 2^64; wrapped it would be 0 and the shape 0 for every s.
  const Expr big = Expr(int64_t{1} << 62);
  const Expr e = s * big * 4;
  EXPECT_TRUE(structural_equal(simplify(e), e)) << to_string(simplify(e));
  auto at = [&](int64_t v) {
    return [v](const std::string&) { return v; };
  };
  EXPECT_EQ(evaluate(simplify(e), at(0)), 0);
  expect_error([&] { evaluate(simplify(e), at(1)); }, ErrorKind::kValueError,
               "int64 overflow in s * 4611686018427387904 * 4");
  // Sums too, and the solver of affine dimensions gives up on them.
  const Expr sum = s * big + s * big;
  EXPECT_TRUE(structural_equal(simplify(sum), sum));
  AffineForm f;
  EXPECT_FALSE(as_single_var_affine(sum, &f));
  EXPECT_FALSE(as_single_var_affine(s * big * 2 + 1, &f));
  EXPECT_TRUE(as_single_var_affine(s * big + 1, &f));
  EXPECT_EQ(f.coeff, int64_t{1} << 62);
  // A constant quotient that does not fit: INT64_MIN // -1 under a symbol.
  const Expr q = floordiv(Expr(std::numeric_limits<int64_t>::min()) + s - s, -1);
  EXPECT_TRUE(structural_equal(simplify(q), q)) << to_string(simplify(q));
  // Below the limits nothing changes.
  EXPECT_EQ(simp(s * Expr(int64_t{1} << 60) * 4), "4611686018427387904 * s");
}

// ir::prove (Note [Proving conditions]): a block index and a loop variable
// with their ranges, as transform::predicate gives them.
class Prove : public ::testing::Test {
 protected:
  Expr n = symbolic("n"), m = symbolic("m");
  Expr bx = make_var("bx"), i = make_var("i");
  ProofContext ctx;

  // bx in [0, grid - 1], i in [0, 127]; n is a tensor dimension.
  void SetUp() override { ranges(Expr(8)); }
  void ranges(const Expr& grid) {
    ctx.vars[bx.var_id()] = {Expr(0), simplify(grid - 1)};
    ctx.vars[i.var_id()] = {Expr(0), Expr(127)};
    ctx.nonneg_symbols = {"n"};
  }
  std::optional<bool> p(const Expr& cond) const { return prove(cond, ctx); }
};

TEST_F(Prove, ConstantRangesDecideComparisons) {
  const Expr idx = bx * 128 + i;  // [0, 1023]
  EXPECT_EQ(p(idx < 1024), true);
  EXPECT_EQ(p(idx < 1000), std::nullopt);
  EXPECT_EQ(p(idx >= 1024), false);
  EXPECT_EQ(p(idx <= 1023), true);
  EXPECT_EQ(p(idx > 1023), false);
  EXPECT_EQ(p(idx >= 0), true);
  EXPECT_EQ(p(idx < 0), false);
  EXPECT_EQ(p(eq(idx, 2000)), false);
  EXPECT_EQ(p(ne(idx, -1)), true);
  EXPECT_EQ(p(eq(idx, 5)), std::nullopt);
  EXPECT_EQ(p(eq(i - i, 0)), true);
  // Bounds of subterms: 128 * (i // 128) is 0 (its own interval; rewritten
  // as i - i % 128 it would only be known to be at most 127), i % 64 < 64.
  EXPECT_EQ(p(eq(floordiv(i, 128) * 128, 0)), true);
  EXPECT_EQ(p(floormod(bx * 128 + i, 64) < 64), true);
  EXPECT_EQ(p(min(i, 300) < 128), true);
  EXPECT_EQ(p(max(i, 5) >= 5), true);
  EXPECT_EQ(p(bx * i <= 7 * 127), true);
  EXPECT_EQ(p(bx * i < 7 * 127), std::nullopt);
}

TEST_F(Prove, LogicCombinesThreeValues) {
  const Expr yes = i < 128, no = i > 200, unknown = i < 64;
  EXPECT_EQ(p(logical_and(yes, unknown)), std::nullopt);
  EXPECT_EQ(p(logical_and(no, unknown)), false);
  EXPECT_EQ(p(logical_and(yes, yes)), true);
  EXPECT_EQ(p(logical_or(yes, unknown)), true);
  EXPECT_EQ(p(logical_or(no, unknown)), std::nullopt);
  EXPECT_EQ(p(logical_or(no, no)), false);
  EXPECT_EQ(p(logical_not(no)), true);
  EXPECT_EQ(p(logical_not(unknown)), std::nullopt);
  EXPECT_EQ(p(make_bool(true)), true);
}

TEST_F(Prove, ASymbolicGridCancelsAgainstTheDimension) {
  // Blocks of n // 128: every index is below n.
  ranges(floordiv(n, 128));
  EXPECT_EQ(p(bx * 128 + i < n), true);
  EXPECT_EQ(p(bx * 128 + i >= n), false);
  EXPECT_EQ(p(bx * 256 + i * 2 < 2 * n), true);
  // ceildiv(n, 128) blocks cover n rounded up: the last block's tail is out.
  ranges(ceildiv(n, 128));
  EXPECT_EQ(p(bx * 128 + i < n), std::nullopt);
  EXPECT_EQ(p(bx * 128 < n + 127), true);
  EXPECT_EQ(p(bx < ceildiv(n, 128)), true);
  // A range that names another variable: j in [i, n - 1].
  const Expr j = make_var("j");
  ctx.vars[j.var_id()] = {i, n - 1};
  EXPECT_EQ(p(j < n), true);
  EXPECT_EQ(p(j >= 0), true);
  EXPECT_EQ(p(j >= 1), std::nullopt);
}

TEST_F(Prove, WhatIsNotKnownIsNotProven) {
  // m is no tensor dimension: it may be negative.
  EXPECT_EQ(p(m >= 0), std::nullopt);
  EXPECT_EQ(p(n >= 0), true);
  EXPECT_EQ(p(n * m >= 0), std::nullopt);
  // A variable without a range, a float, and a bound beyond int64.
  EXPECT_EQ(p(make_var("k") < 5), std::nullopt);
  EXPECT_EQ(p(Expr::var("f", DataType::float32()) < 1.0), std::nullopt);
  const Expr big = Expr(int64_t{1} << 62);
  EXPECT_EQ(p(n * big * 4 < 1), std::nullopt);
  EXPECT_EQ(p(n + big + big < 0), std::nullopt);
}

}  // namespace
}  // namespace tilejit::ir
