// as_affine and affine_range (Note [Exact affine ranges]).
#include "tilejit/ir/affine.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <map>

namespace tilejit::ir {
namespace {

const LinearForm* no_lets(uint64_t) { return nullptr; }

class Affine : public ::testing::Test {
 protected:
  Expr i = make_var("i"), j = make_var("j");
  uint64_t vi = i.var_id(), vj = j.var_id();

  LinearForm form(const Expr& e) {
    LinearForm f;
    EXPECT_TRUE(as_affine(e, no_lets, &f)) << to_string(e);
    return f;
  }
  bool affine(const Expr& e) {
    LinearForm f;
    return as_affine(e, no_lets, &f);
  }
};

TEST_F(Affine, CollectsCoefficientsAndConstants) {
  LinearForm f = form(i * 16 + j - 3 + (i - j) * 2);
  EXPECT_EQ(f.constant, -3);
  EXPECT_EQ(f.terms, (std::map<uint64_t, int64_t>{{vi, 18}, {vj, -1}}));
  // Terms that cancel are dropped, leaving a constant.
  f = form((i + 5) - i);
  EXPECT_TRUE(f.terms.empty());
  EXPECT_EQ(f.constant, 5);
  f = form(3 * (2 - j));
  EXPECT_EQ(f.constant, 6);
  EXPECT_EQ(f.terms, (std::map<uint64_t, int64_t>{{vj, -3}}));
  // Multiplying by zero leaves nothing.
  EXPECT_TRUE(form(i * 0 + 1).terms.empty());
}

TEST_F(Affine, WideningCastsAreTransparent) {
  LinearForm f = form(cast(DataType::int64(), i) + 1);
  EXPECT_EQ(f.terms, (std::map<uint64_t, int64_t>{{vi, 1}}));
  EXPECT_FALSE(affine(cast(DataType::int16(), i)));   // narrowing may wrap
  EXPECT_FALSE(affine(cast(DataType::uint8(), i)));   // so may unsigned
}

TEST_F(Affine, RejectsWhatIsNotAffine) {
  EXPECT_FALSE(affine(i * j));
  EXPECT_FALSE(affine(floordiv(i, 2)));
  EXPECT_FALSE(affine(floormod(i, 32)));
  EXPECT_FALSE(affine(min(i, 4)));
  EXPECT_FALSE(affine(i + symbolic("n")));  // a symbol's value is the call's
  EXPECT_FALSE(affine(make_float(1.0)));
  // A coefficient past int64 (of an int64 variable: a constant next to an
  // int32 one would take int32).
  const Expr w = make_var("w", DataType::int64());
  const Expr big = make_int(int64_t{1} << 62, DataType::int64());
  EXPECT_TRUE(affine(w * big));
  EXPECT_FALSE(affine(w * big * 2));
  EXPECT_FALSE(affine(w * big + w * big));
}

TEST_F(Affine, LookupGivesALetsValue) {
  Expr x = make_var("x");
  LinearForm xf;
  xf.constant = 32;
  xf.terms[vi] = 2;
  auto lets = [&](uint64_t id) -> const LinearForm* { return id == x.var_id() ? &xf : nullptr; };
  LinearForm f;
  ASSERT_TRUE(as_affine(x + i, lets, &f));
  EXPECT_EQ(f.constant, 32);
  EXPECT_EQ(f.terms, (std::map<uint64_t, int64_t>{{vi, 3}}));
}

TEST_F(Affine, RangesAreTheBoxsCorners) {
  const std::map<uint64_t, IntRange> box = {{vi, {0, 3}}, {vj, {0, 15}}};
  IntRange r;
  ASSERT_TRUE(affine_range(form(i * 16 + j), box, &r));
  EXPECT_EQ(r.lo, 0);
  EXPECT_EQ(r.hi, 63);
  ASSERT_TRUE(affine_range(form(63 - i - j * 2), box, &r));
  EXPECT_EQ(r.lo, 63 - 3 - 30);
  EXPECT_EQ(r.hi, 63);
  // A variable without a range, or with an empty one, gives no range.
  EXPECT_FALSE(affine_range(form(i + j), {{vi, {0, 3}}}, &r));
  EXPECT_FALSE(affine_range(form(i + j), {{vi, {0, 3}}, {vj, {1, 0}}}, &r));
  // Nor does a bound past int64.
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(affine_range(form(i * 2), {{vi, {0, big}}}, &r));
}

}  // namespace
}  // namespace tilejit::ir
