// Bitwise operators (Note [Bitwise operators] in tilejit/ir/expr.h): their
// dtypes, constant folding in each integer dtype, the errors, printing; and
// the unsigned wrap of + - * folding (Note [Unsigned constants]).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "common/test_util.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/expr.h"

namespace tilejit::ir {
namespace {

using tilejit::testing::expect_error;

const DataType i8 = DataType::int8(), i32 = DataType::int32(), i64 = DataType::int64();
const DataType u8 = DataType::uint8(), u16 = DataType::uint16(), u32 = DataType::uint32();
const DataType u64 = DataType::uint64(), f32 = DataType::float32();

// The folded constant of `e`, checking that it folded to `dtype`.
int64_t folded(const Expr& e, DataType dtype) {
  EXPECT_TRUE(e.is_const()) << to_string(e);
  EXPECT_EQ(e.dtype(), dtype) << to_string(e);
  return e.int_value();
}

TEST(Bitwise, KindsAndPromotedDtypes) {
  Expr x = make_var("x", i32), u = make_var("u", u32), b = make_var("b", u8);
  Expr c = make_var("c", i8);
  Expr e = bitwise_and(x, 0xF);
  EXPECT_EQ(e.kind(), ExprKind::kBitAnd);
  EXPECT_EQ(e.dtype(), i32);
  EXPECT_EQ(e.b().dtype(), i32);  // the literal adopts x's dtype
  EXPECT_EQ(bitwise_or(x, u).kind(), ExprKind::kBitOr);
  EXPECT_EQ(bitwise_or(x, u).dtype(), u32);  // one width: the unsigned one
  EXPECT_EQ(bitwise_xor(c, x).dtype(), i32);  // the wider
  EXPECT_EQ(shift_left(c, x).kind(), ExprKind::kShiftLeft);
  EXPECT_EQ(shift_right(b, 4).kind(), ExprKind::kShiftRight);
  EXPECT_EQ(shift_right(b, 4).dtype(), u8);
  EXPECT_EQ(bitwise_not(b).kind(), ExprKind::kBitNot);
  EXPECT_EQ(bitwise_not(b).dtype(), u8);
  Expr m = make_var("m", DataType::boolean());
  EXPECT_EQ(bitwise_xor(m, m).dtype(), DataType::boolean());
  EXPECT_TRUE(is_binary_kind(ExprKind::kShiftRight));
  EXPECT_FALSE(is_binary_kind(ExprKind::kBitNot));
  EXPECT_FALSE(is_shape_kind(ExprKind::kBitAnd));
  EXPECT_STREQ(expr_kind_name(ExprKind::kBitNot), "BitNot");
  EXPECT_STREQ(expr_kind_name(ExprKind::kShiftLeft), "ShiftLeft");
  EXPECT_STREQ(binary_op_name(ExprKind::kBitXor), "^");
  EXPECT_STREQ(binary_op_name(ExprKind::kShiftRight), ">>");
}

TEST(Bitwise, FoldsSignedAsC) {
  // int8: arithmetic right shift; a left shift keeps the low 8 bits.
  EXPECT_EQ(folded(shift_right(make_int(-128, i8), make_int(3, i8)), i8), -16);
  EXPECT_EQ(folded(shift_left(make_int(96, i8), make_int(2, i8)), i8), -128);
  EXPECT_EQ(folded(bitwise_not(make_int(0, i8)), i8), -1);
  // int32.
  Expr m1 = make_int(-1, i32);
  EXPECT_EQ(folded(shift_right(m1, make_int(28, i32)), i32), -1);
  EXPECT_EQ(folded(bitwise_and(make_int(-8, i32), make_int(0xFF, i32)), i32), 248);
  EXPECT_EQ(folded(bitwise_or(make_int(5, i32), make_int(3, i32)), i32), 7);
  EXPECT_EQ(folded(bitwise_xor(make_int(5, i32), make_int(3, i32)), i32), 6);
  EXPECT_EQ(folded(bitwise_xor(m1, make_int(0x0F0F, i32)), i32), ~int64_t{0x0F0F});
  EXPECT_EQ(folded(shift_left(make_int(1, i32), make_int(31, i32)), i32),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(folded(bitwise_not(make_int(5, i32)), i32), -6);
  // int64 (C++ literals are int64).
  EXPECT_EQ(folded(shift_left(Expr(-1), Expr(63)), i64), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(folded(shift_right(Expr(std::numeric_limits<int64_t>::min()), Expr(63)), i64), -1);
  EXPECT_EQ(folded(bitwise_and(Expr(12), Expr(10)), i64), 8);
}

TEST(Bitwise, FoldsUnsignedInTheirWidth) {
  EXPECT_EQ(folded(shift_right(make_int(0xF0, u8), make_int(4, u8)), u8), 15);
  EXPECT_EQ(folded(shift_left(make_int(200, u8), make_int(1, u8)), u8), 144);  // 400 mod 256
  EXPECT_EQ(folded(bitwise_not(make_int(5, u8)), u8), 250);  // not int64's -6
  EXPECT_EQ(folded(bitwise_not(make_int(0, u16)), u16), 65535);
  EXPECT_EQ(folded(bitwise_not(make_int(0, u32)), u32), 4294967295);
  // A logical right shift: the top bit of a uint32 does not spread.
  EXPECT_EQ(folded(shift_right(make_int(0x80000000, u32), make_int(31, u32)), u32), 1);
  EXPECT_EQ(folded(shift_left(make_int(0xFFFFFFFF, u32), make_int(4, u32)), u32), 0xFFFFFFF0);
  EXPECT_EQ(folded(bitwise_xor(make_int(0xFFFFFFFF, u32), make_int(0xFF, u32)), u32),
            0xFFFFFF00);
  // uint64 values at or above 2^63 are held as their bits (negative int64).
  Expr top = make_int(-1, u64);  // 2^64 - 1
  EXPECT_EQ(folded(shift_right(top, make_int(60, u64)), u64), 15);
  EXPECT_EQ(folded(bitwise_not(make_int(0, u64)), u64), -1);
  EXPECT_EQ(folded(bitwise_and(top, make_int(0xFF, u64)), u64), 0xFF);
  // uint8 mixed with an int32 literal-free variable: no fold, int32.
  Expr b = make_var("b", u8);
  EXPECT_FALSE(shift_right(b, make_var("s", i32)).is_const());
  // Bool & | ^ bool folds as bool.
  EXPECT_EQ(folded(bitwise_and(make_bool(true), make_bool(false)), DataType::boolean()), 0);
  EXPECT_EQ(folded(bitwise_xor(make_bool(true), make_bool(false)), DataType::boolean()), 1);
}

TEST(Bitwise, UnsignedArithmeticFoldsWrap) {
  // A uint32 product beyond int64 wraps modulo 2^32, as C computes it.
  Expr max32 = make_int(4294967295, u32);
  EXPECT_EQ(folded(max32 * max32, u32), 1);
  EXPECT_EQ(folded(make_int(4000000000, u32) + make_int(4000000000, u32), u32), 3705032704);
  EXPECT_EQ(folded(make_int(0, u32) - make_int(1, u32), u32), 4294967295);
  EXPECT_EQ(folded(make_int(3000000000, u32) * make_int(7, u32), u32),
            int64_t(uint32_t(3000000000u * 7u)));
  EXPECT_EQ(folded(make_int(65535, u16) * make_int(65535, u16), u16), 1);
  // Signed int64 still reports its overflow (Note [Integer semantics]).
  expect_error([] { Expr(std::numeric_limits<int64_t>::max()) * 2; }, ErrorKind::kValueError,
               "int64 overflow in 9223372036854775807 * 2");
}

TEST(Bitwise, Errors) {
  Expr x = make_var("x", i32), u = make_var("u", u8), f = make_var("f", f32);
  Expr m = make_var("m", DataType::boolean());
  expect_error([&] { shift_left(x, 32); }, ErrorKind::kValueError,
               "shift amount 32 is out of range for int32 (0 to 31) in x << 32");
  expect_error([&] { shift_right(x, -1); }, ErrorKind::kValueError,
               "shift amount -1 is out of range for int32 (0 to 31) in x >> -1");
  // The amount as written, not as uint8 would wrap it (300 -> 44).
  expect_error([&] { shift_left(u, 300); }, ErrorKind::kValueError,
               "shift amount 300 is out of range for uint8 (0 to 7) in u << 300");
  expect_error([&] { shift_left(make_int(1, i32), make_int(40, i32)); }, ErrorKind::kValueError,
               "shift amount 40 is out of range for int32 (0 to 31) in 1 << 40");
  expect_error([&] { bitwise_and(x, f); }, ErrorKind::kTypeError,
               "'&' needs integer operands, got int32 and float32");
  expect_error([&] { bitwise_xor(f, 1); }, ErrorKind::kTypeError,
               "'^' needs integer operands, got float32 and float32");
  expect_error([&] { shift_left(m, m); }, ErrorKind::kTypeError,
               "'<<' needs integer operands, got bool and bool");
  expect_error([&] { bitwise_not(f); }, ErrorKind::kTypeError,
               "'~' needs an integer operand, got float32");
  expect_error([&] { bitwise_not(m); }, ErrorKind::kTypeError,
               "'~' needs an integer operand, got bool (use '!' on a mask)");
  // A shift by a computed amount is the author's to keep in range.
  EXPECT_EQ(shift_left(x, make_var("s", i32)).kind(), ExprKind::kShiftLeft);
}

TEST(Bitwise, Printing) {
  Expr x = make_var("x", i32), y = make_var("y", i32), z = make_var("z", i32);
  EXPECT_EQ(to_string(eq(bitwise_and(x, 1), 0)), "(x & 1) == 0");
  EXPECT_EQ(to_string(bitwise_and(lt(x, y), lt(y, z))), "(x < y) & (y < z)");
  EXPECT_EQ(to_string(bitwise_or(bitwise_and(x, y), z)), "x & y | z");
  EXPECT_EQ(to_string(bitwise_and(bitwise_or(x, y), z)), "(x | y) & z");
  EXPECT_EQ(to_string(bitwise_xor(x, bitwise_and(y, z))), "x ^ y & z");
  EXPECT_EQ(to_string(shift_left(x, y + 1)), "x << y + 1");
  EXPECT_EQ(to_string(shift_left(x, y) + 1), "(x << y) + 1");
  EXPECT_EQ(to_string(bitwise_and(shift_right(x, 4), 15)), "x >> 4 & 15");
  EXPECT_EQ(to_string(shift_right(shift_right(x, 1), 2)), "x >> 1 >> 2");
  EXPECT_EQ(to_string(shift_right(x, shift_right(y, 2))), "x >> (y >> 2)");
  EXPECT_EQ(to_string(bitwise_not(x) + 1), "~x + 1");
  EXPECT_EQ(to_string(bitwise_not(x + 1)), "~(x + 1)");
  EXPECT_EQ(to_string(logical_and(ne(bitwise_and(x, 3), 0), lt(x, y))), "(x & 3) != 0 && x < y");
}

TEST(Bitwise, Structure) {
  Expr x = make_var("x", i32), y = make_var("y", i32);
  EXPECT_TRUE(structural_equal(bitwise_not(x), bitwise_not(x)));
  EXPECT_FALSE(structural_equal(bitwise_not(x), bitwise_not(y)));
  EXPECT_FALSE(structural_equal(shift_left(x, 1), shift_right(x, 1)));
  EXPECT_NE(structural_compare(bitwise_not(x), bitwise_not(y)), 0);
  EXPECT_EQ(structural_compare(bitwise_and(x, y), bitwise_and(x, y)), 0);
}

}  // namespace
}  // namespace tilejit::ir
