// Constant folding of binary nodes (fold_internal.h) and the integer
// arithmetic every constant computation shares (apply_int; Note [Integer
// semantics] in expr.cpp).
#include "ir/fold_internal.h"

#include "tilejit/core/error.h"

namespace tilejit::ir {
namespace {

// Division by `b != 0` as Note [Integer semantics] says.
bool divide(ExprKind kind, int64_t a, int64_t b, int64_t* out) {
  if (b == -1) {
    if (kind == ExprKind::kFloorMod) {
      *out = 0;
      return true;
    }
    return !__builtin_sub_overflow(int64_t{0}, a, out);
  }
  switch (kind) {
    case ExprKind::kFloorDiv: *out = floordiv_int(a, b); break;
    case ExprKind::kFloorMod: *out = floormod_int(a, b); break;
    default: *out = ceildiv_int(a, b); break;
  }
  return true;
}

// The kinds phase 1 did not have, on integer constants: truncating division
// (b != 0; INT64_MIN / -1 overflows), comparisons and logic (0 or 1). False
// on overflow, as apply_int.
bool apply_extended(ExprKind kind, int64_t a, int64_t b, int64_t* out) {
  switch (kind) {
    case ExprKind::kDiv:
      if (b == -1) return !__builtin_sub_overflow(int64_t{0}, a, out);
      *out = a / b;
      return true;
    case ExprKind::kEQ: *out = a == b; return true;
    case ExprKind::kNE: *out = a != b; return true;
    case ExprKind::kLT: *out = a < b; return true;
    case ExprKind::kLE: *out = a <= b; return true;
    case ExprKind::kGT: *out = a > b; return true;
    case ExprKind::kGE: *out = a >= b; return true;
    case ExprKind::kAnd: *out = (a != 0) && (b != 0); return true;
    case ExprKind::kOr: *out = (a != 0) || (b != 0); return true;
    default: return apply_int(kind, a, b, out);
  }
}

double apply_float(ExprKind kind, double a, double b) {
  switch (kind) {
    case ExprKind::kAdd: return a + b;
    case ExprKind::kSub: return a - b;
    case ExprKind::kMul: return a * b;
    case ExprKind::kDiv: return a / b;
    // NaN wins, as the targets' T.max / T.min (Note [NaN in max and min],
    // device/cpu/tilejit/cpu/prelude.h).
    case ExprKind::kMin: return (a < b || a != a) ? a : b;
    case ExprKind::kMax: return (a > b || a != a) ? a : b;
    case ExprKind::kEQ: return a == b;
    case ExprKind::kNE: return a != b;
    case ExprKind::kLT: return a < b;
    case ExprKind::kLE: return a <= b;
    case ExprKind::kGT: return a > b;
    default: return a >= b;  // kGE; the caller folds nothing else
  }
}

bool is_int_like(DataType t) { return t.is_int() || t.code == DataType::kBool; }

// Note [Bitwise operators] on two constants of the operand dtype `t`: their
// int64 values are the sign-extended bits of a signed dtype and the bits of
// an unsigned one (Note [Unsigned constants]), so the int64 result holds the
// bits of t's result, which make_int then wraps to t. make_binary has
// checked that a shift amount is from 0 to t's width less one.
int64_t apply_bitwise(ExprKind kind, int64_t a, int64_t b, DataType t) {
  switch (kind) {
    case ExprKind::kBitAnd: return a & b;
    case ExprKind::kBitOr: return a | b;
    case ExprKind::kBitXor: return a ^ b;
    case ExprKind::kShiftLeft: return int64_t(uint64_t(a) << b);
    default: return t.is_uint() ? int64_t(uint64_t(a) >> b) : a >> b;  // kShiftRight
  }
}

// + - * of unsigned constants narrower than 64 bits: modulo 2^64, which
// make_int reduces modulo 2^width, as C computes them. False for any other
// kind (Note [Integer semantics] then applies).
bool apply_unsigned(ExprKind kind, int64_t a, int64_t b, int64_t* out) {
  const uint64_t x = uint64_t(a), y = uint64_t(b);
  switch (kind) {
    case ExprKind::kAdd: *out = int64_t(x + y); return true;
    case ExprKind::kSub: *out = int64_t(x - y); return true;
    case ExprKind::kMul: *out = int64_t(x * y); return true;
    default: return false;
  }
}

}  // namespace

bool apply_int(ExprKind kind, int64_t a, int64_t b, int64_t* out) noexcept {
  switch (kind) {
    case ExprKind::kAdd: return !__builtin_add_overflow(a, b, out);
    case ExprKind::kSub: return !__builtin_sub_overflow(a, b, out);
    case ExprKind::kMul: return !__builtin_mul_overflow(a, b, out);
    case ExprKind::kMin: *out = a < b ? a : b; return true;
    case ExprKind::kMax: *out = a < b ? b : a; return true;
    default: return divide(kind, a, b, out);
  }
}

namespace fold_detail {

bool is_division(ExprKind kind) {
  return kind == ExprKind::kFloorDiv || kind == ExprKind::kFloorMod ||
         kind == ExprKind::kCeilDiv;
}

Expr fold_binary(const Expr& e, DataType operand_type) {
  const ExprKind kind = e.kind();
  const DataType type = e.dtype();
  const Expr& x = e.a();
  const Expr& y = e.b();
  if (x.is_const() && y.is_const() && is_bitwise_kind(kind)) {
    const int64_t v = apply_bitwise(kind, x.int_value(), y.int_value(), operand_type);
    return type == DataType::int64() ? Expr(v) : make_int(v, type);
  }
  // Note [Unsigned constants]: uint64 constants are not folded (bitwise
  // operations aside); int64 arithmetic would misread those at or above 2^63.
  const bool foldable = operand_type != DataType::uint64();
  if (x.is_const() && y.is_const() && foldable) {
    int64_t v = 0;
    const bool wrapped =
        operand_type.is_uint() && apply_unsigned(kind, x.int_value(), y.int_value(), &v);
    if (!wrapped && !apply_extended(kind, x.int_value(), y.int_value(), &v)) {
      TILEJIT_THROW(kValueError) << "int64 overflow in " << to_string(e);
    }
    return type == DataType::int64() ? Expr(v) : make_int(v, type);
  }
  const bool int_operands = is_int_like(x.dtype()) && is_int_like(y.dtype());
  const bool logic = kind == ExprKind::kAnd || kind == ExprKind::kOr;
  const bool imms = (x.is_const() || x.is_float_const()) && (y.is_const() || y.is_float_const());
  if (imms && !int_operands && !logic) {
    const double fx = x.is_const() ? double(x.int_value()) : x.float_value();
    const double fy = y.is_const() ? double(y.int_value()) : y.float_value();
    const double v = apply_float(kind, fx, fy);
    return type.is_float() ? make_float(v, type) : make_bool(v != 0);
  }
  return Expr();
}

}  // namespace fold_detail
}  // namespace tilejit::ir
