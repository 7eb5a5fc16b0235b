#include "tilejit/ir/shape_program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/simplify.h"

namespace tilejit::ir {
namespace {

using tilejit::testing::expect_error;

using Op = ShapeProgram::Op;


int count_ops(const ShapeProgram& p, Op op) {
  return int(std::count_if(p.instructions().begin(), p.instructions().end(),
                           [&](const ShapeProgram::Instr& in) { return in.op == op; }));
}

TEST(ShapeProgram, EvaluatesShapes) {
  Expr b = symbolic("b"), s = symbolic("s");
  std::vector<Expr> exprs = {b * s, b * s + 1, ceildiv(s, 64), floordiv(s, 64), floormod(s, 64),
                             min(b, s), max(b, s), s - b};
  std::vector<std::string> symbols = {"b", "s"};
  ShapeProgram p = ShapeProgram::compile(exprs, symbols);
  EXPECT_EQ(p.num_symbols(), 2);
  EXPECT_EQ(p.num_results(), 8);
  int64_t in[] = {4, 100};
  int64_t out[8] = {};
  ASSERT_EQ(p.run(in, out), 0u);
  EXPECT_EQ(std::vector<int64_t>(out, out + 8),
            (std::vector<int64_t>{400, 401, 2, 1, 36, 4, 100, 96}));
}

TEST(ShapeProgram, SharesSubexpressionsAndConstants) {
  Expr b = symbolic("b"), s = symbolic("s"), t = symbolic("t");
  std::vector<std::string> symbols = {"b", "s", "t"};
  // b * s once, 1 and 64 once each: Mul, Const 1, Add, Const 64, CeilDiv.
  std::vector<Expr> first = {b * s, b * s + 1, ceildiv(s, 64), s * b};
  ShapeProgram p = ShapeProgram::compile(first, symbols);
  EXPECT_EQ(p.instructions().size(), 5u);
  EXPECT_EQ(count_ops(p, Op::kMul), 1);
  EXPECT_EQ(count_ops(p, Op::kConst), 2);

  // Structurally equal after simplification: min(s, t) is one atom.
  std::vector<Expr> second = {min(s, t) + 1, min(t, s) * 2, Expr(64), s * 64, 64 + t};
  ShapeProgram q = ShapeProgram::compile(second, symbols);
  EXPECT_EQ(count_ops(q, Op::kMin), 1);
  int consts_64 = 0;
  for (const auto& in : q.instructions()) consts_64 += in.op == Op::kConst && in.imm == 64;
  EXPECT_EQ(consts_64, 1);
  int64_t in[] = {0, 3, 5};
  int64_t out[5] = {};
  ASSERT_EQ(q.run(in, out), 0u);
  EXPECT_EQ(std::vector<int64_t>(out, out + 5), (std::vector<int64_t>{4, 6, 64, 192, 69}));
}

TEST(ShapeProgram, SimplifiesFirst) {
  Expr s = symbolic("s");
  std::vector<Expr> exprs = {s + s - 2 * s + 7, floordiv(4 * s, 2)};
  std::vector<std::string> symbols = {"s"};
  ShapeProgram p = ShapeProgram::compile(exprs, symbols);
  // 7; and 2 * s: Const 7, Const 2, Mul.
  EXPECT_EQ(p.instructions().size(), 3u);
  EXPECT_EQ(count_ops(p, Op::kFloorDiv), 0);
}

TEST(ShapeProgram, SymbolsConstantsAndEmptyPrograms) {
  std::vector<std::string> symbols = {"s", "t"};
  std::vector<Expr> exprs = {symbolic("t"), Expr(7), symbolic("s")};
  ShapeProgram p = ShapeProgram::compile(exprs, symbols);
  EXPECT_EQ(p.instructions().size(), 1u);  // the constant; symbols are read in place
  int64_t in[] = {11, 22};
  int64_t out[3] = {};
  ASSERT_EQ(p.run(in, out), 0u);
  EXPECT_EQ(std::vector<int64_t>(out, out + 3), (std::vector<int64_t>{22, 7, 11}));

  ShapeProgram empty = ShapeProgram::compile({}, {});
  EXPECT_EQ(empty.num_symbols(), 0);
  EXPECT_EQ(empty.num_results(), 0);
  EXPECT_EQ(empty.run(nullptr, nullptr), 0u);

  ShapeProgram defaulted;
  EXPECT_EQ(defaulted.num_results(), 0);
  EXPECT_EQ(defaulted.run(nullptr, nullptr), 0u);
}

TEST(ShapeProgram, DivisionByZeroIsReported) {
  Expr s = symbolic("s"), t = symbolic("t");
  std::vector<Expr> exprs = {floordiv(s, t), s + 1, floormod(s, t), ceildiv(s, t),
                             floordiv(s, t - t)};
  std::vector<std::string> symbols = {"s", "t"};
  ShapeProgram p = ShapeProgram::compile(exprs, symbols);
  int64_t zero[] = {9, 0};
  int64_t out[5];
  std::fill(out, out + 5, -1);
  EXPECT_EQ(p.run(zero, out), ShapeProgram::kDivisionByZero);
  EXPECT_EQ(std::vector<int64_t>(out, out + 5), (std::vector<int64_t>{0, 10, 0, 0, 0}));
  // A divisor that simplifies to zero fails for every input.
  int64_t two[] = {9, 2};
  EXPECT_EQ(p.run(two, out), ShapeProgram::kDivisionByZero);
  EXPECT_EQ(std::vector<int64_t>(out, out + 4), (std::vector<int64_t>{4, 10, 1, 5}));
}

TEST(ShapeProgram, ExtremeValuesOverflowAsEvaluateDoes) {
  // Note [Integer semantics]: no operation wraps or traps; each one that does
  // not fit in int64 sets kOverflow, exactly where evaluate() throws.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Expr s = symbolic("s"), t = symbolic("t");
  std::vector<Expr> exprs = {floordiv(s, t), floormod(s, t), ceildiv(s, t), s + t, s * t, s - t};
  std::vector<std::string> symbols = {"s", "t"};
  int overflowed = 0;
  for (const auto& pair : std::vector<std::pair<int64_t, int64_t>>{
           {kMin, -1}, {kMin, 3}, {kMin, -3}, {kMax, -1}, {kMax, 2}, {kMin, kMin}, {kMax, 1},
           {int64_t{1} << 32, int64_t{1} << 31}, {int64_t{1} << 32, int64_t{1} << 32}}) {
    int64_t vs = pair.first, vt = pair.second;
    auto lookup = [&](const std::string& name) { return name == "s" ? vs : vt; };
    for (const Expr& e : exprs) {
      ShapeProgram p = ShapeProgram::compile(std::span<const Expr>(&e, 1), symbols);
      int64_t in[] = {vs, vt};
      int64_t out = 0;
      const unsigned faults = p.run(in, &out);
      int64_t want = 0;
      const EvalStatus status = try_evaluate(e, lookup, &want);
      if (status == EvalStatus::kOk) {
        EXPECT_EQ(faults, 0u) << to_string(e) << " at " << vs << ", " << vt;
        EXPECT_EQ(out, want) << to_string(e) << " at " << vs << ", " << vt;
      } else {
        ASSERT_EQ(status, EvalStatus::kOverflow);
        EXPECT_EQ(faults, ShapeProgram::kOverflow) << to_string(e) << " at " << vs << ", " << vt;
        ++overflowed;
      }
    }
  }
  // Counted by hand: kMin // -1, ceildiv(kMin, -1), kMin + -1, kMin * -1;
  // kMin * 3, kMin - 3; kMin + -3, kMin * -3; kMax - -1; kMax + 2, kMax * 2;
  // kMin + kMin, kMin * kMin; kMax + 1; 2^32 * 2^31 (= 2^63); 2^32 * 2^32.
  EXPECT_EQ(overflowed, 16);
  // One flag for every program: an overflow in one result, a division by
  // zero in another.
  std::vector<Expr> both = {s * s, floordiv(s, t), s + 1};
  ShapeProgram p = ShapeProgram::compile(both, symbols);
  int64_t in[] = {int64_t{1} << 32, 0};
  int64_t out[3];
  EXPECT_EQ(p.run(in, out), ShapeProgram::kOverflow | ShapeProgram::kDivisionByZero);
  EXPECT_EQ(out[2], (int64_t{1} << 32) + 1);
}

TEST(ShapeProgram, Errors) {
  Expr s = symbolic("s"), q = symbolic("q");
  std::vector<std::string> only_s = {"s"};
  expect_error([&] { ShapeProgram::compile(std::vector<Expr>{s + q}, only_s); },
               ErrorKind::kInternalError, "shape program: symbol 'q' is not among its symbols");
  expect_error([&] { ShapeProgram::compile(std::vector<Expr>{s, Expr()}, only_s); },
               ErrorKind::kInternalError, "shape program: expression #1 is undefined");
  std::vector<std::string> twice = {"s", "s"};
  expect_error([&] { ShapeProgram::compile(std::vector<Expr>{s}, twice); },
               ErrorKind::kInternalError, "shape program: symbol 's' is given twice");

  std::vector<std::string> many(ShapeProgram::kMaxRegisters + 1);
  for (size_t i = 0; i < many.size(); ++i) many[i] = "v" + std::to_string(i);
  expect_error([&] { ShapeProgram::compile({}, many); }, ErrorKind::kInternalError,
               "shape program: 1025 symbols exceed the 1024 registers");

  // Distinct non-polynomial atoms s // k: a constant, a division and an add
  // each, past the register file.
  Expr sum = 0;
  for (int k = 2; k < 400; ++k) sum = sum + floordiv(s, k);
  expect_error([&] { ShapeProgram::compile(std::vector<Expr>{sum}, only_s); },
               ErrorKind::kInternalError, "shape program: more than 1024 registers needed");
}

TEST(ShapeProgram, RunIsThreadSafe) {
  Expr b = symbolic("b"), s = symbolic("s");
  std::vector<Expr> exprs = {b * s * 4 + ceildiv(s, 64), max(b, s)};
  std::vector<std::string> symbols = {"b", "s"};
  ShapeProgram p = ShapeProgram::compile(exprs, symbols);
  std::vector<std::thread> threads;
  std::array<int, 4> failures{};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int64_t i = 0; i < 2000; ++i) {
        int64_t in[] = {k + 1, i};
        int64_t out[2];
        bool ok = p.run(in, out) == 0;
        int64_t want = (k + 1) * i * 4 + ceildiv_int(i, 64);
        if (!ok || out[0] != want || out[1] != std::max<int64_t>(k + 1, i)) ++failures[k];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, (std::array<int, 4>{}));
}

// Note [Random expression property]
// Trees over three symbols, up to depth 5, with leaves and symbol values in
// [-3, 3]: the largest magnitude is 3^(2^5) < 2^51, so nothing wraps and
// floor division's exactness arguments hold (see Note [Integer semantics]).
// Divisors are mostly nonzero constants and sometimes subtrees, which can be
// zero; the checks say what must hold then.
class RandomExprs {
 public:
  explicit RandomExprs(uint64_t seed) : rng_(seed) {}

  Expr gen(int depth) {
    if (depth == 0 || uniform(0, 3) == 0) return leaf();
    static constexpr ExprKind kKinds[] = {ExprKind::kAdd,      ExprKind::kSub,
                                          ExprKind::kMul,      ExprKind::kFloorDiv,
                                          ExprKind::kFloorMod, ExprKind::kCeilDiv,
                                          ExprKind::kMin,      ExprKind::kMax};
    ExprKind kind = kKinds[uniform(0, 7)];
    Expr a = gen(depth - 1);
    bool division = kind == ExprKind::kFloorDiv || kind == ExprKind::kFloorMod ||
                    kind == ExprKind::kCeilDiv;
    Expr b;
    if (division && uniform(0, 3) != 0) {
      static constexpr int64_t kDivisors[] = {-3, -2, -1, 1, 2, 3, 4, 8, 16, 64};
      b = Expr(kDivisors[uniform(0, 9)]);
    } else {
      b = gen(depth - 1);
      if (division && b.is_const() && b.int_value() == 0) b = Expr(2);
    }
    return make_binary(kind, a, b);
  }

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  Expr leaf() {
    static const char* kNames[] = {"b", "s", "t"};
    if (uniform(0, 4) < 3) return symbolic(kNames[uniform(0, 2)]);
    return Expr(uniform(-3, 3));
  }

  std::mt19937_64 rng_;
};

// Evaluates with evaluate(); false on division by zero.
bool reference(const Expr& e, const int64_t* values, int64_t* result) {
  try {
    // Symbols b, s, t are slots 0, 1, 2.
    *result = evaluate(e, [&](const std::string& name) {
      return values[name == "b" ? 0 : name == "s" ? 1 : 2];
    });
    return true;
  } catch (const Error& err) {
    EXPECT_EQ(err.kind(), ErrorKind::kValueError);
    EXPECT_EQ(err.message().rfind("division by zero in ", 0), 0u) << err.message();
    return false;
  }
}

TEST(ShapeProgram, RandomExpressionsAgreeWithEvaluateAndSimplify) {
  const std::vector<std::string> symbols = {"b", "s", "t"};
  RandomExprs random(20240601);
  std::vector<Expr> all;
  int compared = 0, reference_failed = 0;
  for (int i = 0; i < 3000; ++i) {
    Expr e = random.gen(5);
    all.push_back(e);
    Expr simplified = simplify(e);
    ASSERT_TRUE(structural_equal(simplify(simplified), simplified))
        << "not idempotent: " << to_string(e) << " -> " << to_string(simplified);
    ShapeProgram p = ShapeProgram::compile(std::span<const Expr>(&e, 1), symbols);
    for (int trial = 0; trial < 8; ++trial) {
      int64_t values[3] = {random.uniform(-3, 3), random.uniform(-3, 3), random.uniform(-3, 3)};
      int64_t ref = 0, simp = 0, ran = -1;
      bool ref_ok = reference(e, values, &ref);
      bool simp_ok = reference(simplified, values, &simp);
      bool ran_ok = p.run(values, &ran) == 0;
      // The program computes exactly the simplified tree, every node of it.
      ASSERT_EQ(ran_ok, simp_ok) << to_string(simplified);
      if (ran_ok) {
        ASSERT_EQ(ran, simp) << to_string(simplified);
      }
      // simplify() preserves the value wherever the original is defined; it
      // may drop a division by zero (x * 0), never add one.
      if (ref_ok) {
        ++compared;
        ASSERT_TRUE(simp_ok) << to_string(e) << " -> " << to_string(simplified);
        ASSERT_EQ(simp, ref) << to_string(e) << " -> " << to_string(simplified) << " at b="
                             << values[0] << " s=" << values[1] << " t=" << values[2];
      } else {
        ++reference_failed;
      }
    }
  }
  // The generator must exercise the interesting case, not only failures.
  EXPECT_GT(compared, 20000);
  EXPECT_GT(reference_failed, 0);

  // One program for all of them: sharing across expressions changes nothing.
  std::vector<Expr> batch(all.begin(), all.begin() + 200);
  ShapeProgram whole = ShapeProgram::compile(batch, symbols);
  std::vector<int64_t> together(batch.size());
  for (int trial = 0; trial < 20; ++trial) {
    int64_t values[3] = {random.uniform(-3, 3), random.uniform(-3, 3), random.uniform(-3, 3)};
    bool all_ok = whole.run(values, together.data()) == 0;
    bool each_ok = true;
    for (size_t i = 0; i < batch.size(); ++i) {
      ShapeProgram one = ShapeProgram::compile(std::span<const Expr>(&batch[i], 1), symbols);
      int64_t alone = 0;
      bool ok = one.run(values, &alone) == 0;
      each_ok = each_ok && ok;
      EXPECT_EQ(together[i], alone) << to_string(batch[i]);
    }
    EXPECT_EQ(all_ok, each_ok);
  }
}

}  // namespace
}  // namespace tilejit::ir
