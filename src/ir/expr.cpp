#include "tilejit/ir/expr.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <ostream>
#include <utility>

#include "ir/fold_internal.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::ir {

// Note [Integer semantics]
// Every place that computes with constants (folding here, evaluate(),
// simplify()'s coefficients, ShapeProgram::run) uses the same rules, so that
// they agree bit for bit: + - * are exact, // and % are floor division and
// floor modulo, and a result that does not fit in int64 (a sum, difference
// or product, or INT64_MIN // -1) is an overflow, never a wrapped value.
// Each place says so in its own way: folding at construction and
// evaluate() throw ValueError, ShapeProgram::run reports kOverflow (the call
// path then raises, naming the shape), and simplify() leaves a term whose
// coefficients would overflow as it was written. A shape that wrapped would
// size a buffer smaller than the body indexes, so no input, however large,
// may produce one, and none can make the call path undefined.
// Tile-IR constants of a narrower int dtype are computed the same way on
// int64, then wrapped to their width (make_int); shapes are int64.
//
// Note [Unsigned constants]
// An unsigned constant holds its value's bits in the int64 `value`: uint8,
// uint16 and uint32 values are the non-negative int64 of that value, so the
// int64 folding above, wrapped to the width, is C's modular arithmetic, but
// for + - * (a uint32 product exceeds int64), which fold.cpp computes
// modulo 2^64 before the wrap; a uint64 value at or above 2^63 reads as a
// negative int64. Folding uint64 on int64 would compare, divide and shift
// those wrongly, so make_binary leaves uint64 operations unfolded (but & | ^
// ~ and shifts, which fold.cpp computes on the bits) and simplify() keeps
// every unsigned expression as an atom; the generated code computes them in
// uint64_t.

using fold_detail::is_division;

namespace {

bool is_identifier(const std::string& s) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Wraps an integer to the width of `t` (Note [Integer semantics]); bool is 0/1.
int64_t wrap_to(int64_t v, DataType t) {
  if (t.code == DataType::kBool) return v != 0;
  if (t.bits >= 64) return v;
  const uint64_t mask = (uint64_t{1} << t.bits) - 1;
  uint64_t u = uint64_t(v) & mask;
  if (t.code == DataType::kInt && (u >> (t.bits - 1)) != 0) u |= ~mask;
  return int64_t(u);
}

bool is_int_like(DataType t) { return t.is_int() || t.code == DataType::kBool; }

using BinaryFactory = Expr (*)(DataType, Expr, Expr);
template <ExprKind K>
Expr make_binary_node(DataType t, Expr a, Expr b) {
  return Expr(std::make_shared<const BinaryOpNode<K>>(t, std::move(a), std::move(b)));
}

// The node class of each binary kind, indexed by kind (nullptr: not binary).
constexpr BinaryFactory kBinaryFactories[] = {
    nullptr,
    nullptr,
    &make_binary_node<ExprKind::kAdd>,
    &make_binary_node<ExprKind::kSub>,
    &make_binary_node<ExprKind::kMul>,
    &make_binary_node<ExprKind::kFloorDiv>,
    &make_binary_node<ExprKind::kFloorMod>,
    &make_binary_node<ExprKind::kCeilDiv>,
    &make_binary_node<ExprKind::kMin>,
    &make_binary_node<ExprKind::kMax>,
    nullptr,
    &make_binary_node<ExprKind::kDiv>,
    &make_binary_node<ExprKind::kEQ>,
    &make_binary_node<ExprKind::kNE>,
    &make_binary_node<ExprKind::kLT>,
    &make_binary_node<ExprKind::kLE>,
    &make_binary_node<ExprKind::kGT>,
    &make_binary_node<ExprKind::kGE>,
    &make_binary_node<ExprKind::kAnd>,
    &make_binary_node<ExprKind::kOr>,
    nullptr,  // kNot ...
    nullptr,
    nullptr,
    nullptr,
    nullptr,  // ... kLoad
    &make_binary_node<ExprKind::kBitAnd>,
    &make_binary_node<ExprKind::kBitOr>,
    &make_binary_node<ExprKind::kBitXor>,
    &make_binary_node<ExprKind::kShiftLeft>,
    &make_binary_node<ExprKind::kShiftRight>,
};
static_assert(std::size(kBinaryFactories) == size_t(ExprKind::kShiftRight) + 1);

// A constant next to a non-constant takes the other's dtype (Note [Expression
// dtypes]): an int constant becomes an int of the other's width or a float;
// a float constant becomes the other's float dtype. Anything else is kept.
Expr adopt(const Expr& c, DataType other) {
  if (other.code == DataType::kBool) return c;
  if (c.is_const()) {
    if (c.dtype().code == DataType::kBool) return c;
    if (other.is_int()) return make_int(c.int_value(), other);
    if (other.is_float()) return make_float(double(c.int_value()), other);
  } else if (c.is_float_const() && other.is_float()) {
    return make_float(c.float_value(), other);
  }
  return c;
}

bool is_imm(const Expr& e) { return e.is_const() || e.is_float_const(); }

// Note [Bitwise operators]: integers; bool too for & | ^ (not for shifts).
void check_bitwise_operands(ExprKind kind, DataType a, DataType b) {
  const bool bool_ok = !is_shift_kind(kind);
  auto ok = [&](DataType t) { return t.is_int() || (bool_ok && t == DataType::boolean()); };
  if (TILEJIT_UNLIKELY(!ok(a) || !ok(b))) {
    TILEJIT_THROW(kTypeError) << "'" << binary_op_name(kind) << "' needs integer operands, got "
                              << a.name() << " and " << b.name();
  }
}

std::atomic<uint64_t> g_next_var_id{1};

}  // namespace

// ---------------------------------------------------------------------------
// Names

const char* expr_kind_name(ExprKind k) {
  static constexpr const char* kNames[] = {
      "IntImm", "Var", "Add", "Sub", "Mul", "FloorDiv", "FloorMod", "CeilDiv", "Min",
      "Max", "FloatImm", "Div", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not",
      "Select", "Cast", "Call", "Load", "BitAnd", "BitOr", "BitXor", "ShiftLeft", "ShiftRight",
      "BitNot"};
  static_assert(std::size(kNames) == size_t(ExprKind::kBitNot) + 1);
  return size_t(k) < std::size(kNames) ? kNames[size_t(k)] : "?";
}

const char* binary_op_name(ExprKind k) {
  static constexpr const char* kNames[] = {
      "?", "?", "+", "-", "*", "//", "%", "ceildiv", "min", "max", "?", "/", "==", "!=",
      "<", "<=", ">", ">=", "&&", "||", "!", "?", "?", "?", "?", "&", "|", "^", "<<", ">>", "~"};
  return size_t(k) < std::size(kNames) ? kNames[size_t(k)] : "?";
}

const char* intrinsic_name(Intrinsic op) {
  static constexpr const char* kNames[] = {"exp",  "exp2",    "log", "log2",  "sqrt",
                                           "rsqrt", "tanh",   "sigmoid", "abs", "floor",
                                           "ceil", "sin",     "cos", "pow",
                                           "shfl_sync", "shfl_up", "shfl_down", "shfl_xor"};
  static_assert(std::size(kNames) == size_t(kLastIntrinsic) + 1);
  return size_t(op) < std::size(kNames) ? kNames[size_t(op)] : "?";
}

int intrinsic_arity(Intrinsic op) {
  if (is_shuffle(op)) return 4;
  return op == Intrinsic::kPow ? 2 : 1;
}

// ---------------------------------------------------------------------------
// Leaves

Expr::Expr(int64_t value) : node_(std::make_shared<const IntImmNode>(value, DataType::int64())) {}

Expr::Expr(double value)
    : node_(std::make_shared<const FloatImmNode>(value, DataType::float32())) {}

Expr Expr::var(std::string name, DataType dtype) {
  TILEJIT_CHECK(is_identifier(name), kValueError)
      << "symbol name '" << name << "' is not a C identifier";
  return Expr(std::make_shared<const VarNode>(std::move(name), 0, dtype));
}

Expr make_var(std::string name, DataType dtype) {
  TILEJIT_CHECK(is_identifier(name), kValueError)
      << "variable name '" << name << "' is not a C identifier";
  const uint64_t id = g_next_var_id.fetch_add(1, std::memory_order_relaxed);
  return Expr(std::make_shared<const VarNode>(std::move(name), id, dtype));
}

Expr make_int(int64_t value, DataType dtype) {
  TILEJIT_CHECK(is_int_like(dtype), kTypeError)
      << "an integer constant cannot have dtype " << dtype.name();
  return Expr(std::make_shared<const IntImmNode>(wrap_to(value, dtype), dtype));
}

Expr make_float(double value, DataType dtype) {
  TILEJIT_CHECK(dtype.is_float(), kTypeError)
      << "a floating constant cannot have dtype " << dtype.name();
  return Expr(std::make_shared<const FloatImmNode>(value, dtype));
}

Expr make_bool(bool value) { return make_int(value ? 1 : 0, DataType::boolean()); }

Expr infinity(DataType dtype) {
  TILEJIT_CHECK(dtype.is_float(), kTypeError) << "infinity: dtype " << dtype.name()
                                              << " is not a float dtype";
  return make_float(std::numeric_limits<double>::infinity(), dtype);
}

const std::string& Expr::var_name() const noexcept {
  static const std::string kEmpty;
  const VarNode* n = as<VarNode>();
  return n ? n->name : kEmpty;
}

const Expr& Expr::a() const noexcept {
  static const Expr kNone;
  const BinaryNode* n = as<BinaryNode>();
  return n ? n->a : kNone;
}

const Expr& Expr::b() const noexcept {
  static const Expr kNone;
  const BinaryNode* n = as<BinaryNode>();
  return n ? n->b : kNone;
}

// ---------------------------------------------------------------------------
// Binary nodes

DataType promote(DataType a, DataType b) {
  if (a == b) return a;
  if (a.is_float() && b.is_float()) {
    if (a.bits != b.bits) return a.bits > b.bits ? a : b;
    return DataType::float32();  // float16 with bfloat16: neither holds the other
  }
  if (a.is_float()) return a;
  if (b.is_float()) return b;
  if (a.code == DataType::kBool) return b;
  if (b.code == DataType::kBool) return a;
  if (a.bits != b.bits) return a.bits > b.bits ? a : b;
  // int and uint of one width: the unsigned one, as in C and TVM's
  // BinaryOpMatchTypes (uint32 + int32 is uint32).
  return a.code == DataType::kUInt ? a : b;
}

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  TILEJIT_CHECK(is_binary_kind(kind), kInternalError)
      << "make_binary: kind " << int(kind) << " is not a binary kind";
  TILEJIT_CHECK(a.defined() && b.defined(), kValueError)
      << "an operand of '" << binary_op_name(kind) << "' is an undefined expression";
  // A constant shift amount as written, before it takes the other operand's
  // dtype (uint8 would make 300 into 44).
  const bool constant_shift = is_shift_kind(kind) && b.is_const();
  const int64_t shift = b.int_value();
  if (is_imm(a) && !is_imm(b)) a = adopt(a, b.dtype());
  if (is_imm(b) && !is_imm(a)) b = adopt(b, a.dtype());
  const DataType operand_type = promote(a.dtype(), b.dtype());
  const bool int_operands = is_int_like(a.dtype()) && is_int_like(b.dtype());
  if (TILEJIT_UNLIKELY(is_bitwise_kind(kind))) {
    check_bitwise_operands(kind, a.dtype(), b.dtype());
  }
  if (TILEJIT_UNLIKELY(is_division(kind) && !int_operands)) {
    TILEJIT_THROW(kTypeError) << "'" << binary_op_name(kind) << "' needs integer operands, got "
                              << a.dtype().name() << " and " << b.dtype().name();
  }
  const bool logic = kind == ExprKind::kAnd || kind == ExprKind::kOr;
  if (TILEJIT_UNLIKELY(logic && (a.dtype() != DataType::boolean() ||
                                 b.dtype() != DataType::boolean()))) {
    TILEJIT_THROW(kTypeError) << "'" << binary_op_name(kind) << "' needs bool operands, got "
                              << a.dtype().name() << " and " << b.dtype().name();
  }
  const DataType type = (is_compare_kind(kind) || logic) ? DataType::boolean() : operand_type;
  Expr e = kBinaryFactories[size_t(kind)](type, std::move(a), std::move(b));
  const Expr& x = e.a();
  const Expr& y = e.b();
  // The node is built before the checks so the messages can print it as the
  // author wrote it.
  const bool int_division = is_division(kind) || (kind == ExprKind::kDiv && int_operands);
  if (int_division && y.is_const() && y.int_value() == 0) {
    TILEJIT_THROW(kValueError) << "division by constant zero in " << to_string(e);
  }
  if (constant_shift && (shift < 0 || shift >= operand_type.bits)) {
    TILEJIT_THROW(kValueError) << "shift amount " << shift << " is out of range for "
                               << operand_type.name() << " (0 to " << operand_type.bits - 1
                               << ") in " << to_string(x) << ' ' << binary_op_name(kind) << ' '
                               << shift;
  }
  Expr folded = fold_detail::fold_binary(e, operand_type);
  return folded.defined() ? folded : e;
}

Expr operator+(const Expr& a, const Expr& b) { return make_binary(ExprKind::kAdd, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return make_binary(ExprKind::kSub, a, b); }
Expr operator*(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMul, a, b); }
Expr div(const Expr& a, const Expr& b) { return make_binary(ExprKind::kDiv, a, b); }
Expr floordiv(const Expr& a, const Expr& b) { return make_binary(ExprKind::kFloorDiv, a, b); }
Expr floormod(const Expr& a, const Expr& b) { return make_binary(ExprKind::kFloorMod, a, b); }
Expr ceildiv(const Expr& a, const Expr& b) { return make_binary(ExprKind::kCeilDiv, a, b); }
Expr min(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMin, a, b); }
Expr max(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMax, a, b); }
Expr eq(const Expr& a, const Expr& b) { return make_binary(ExprKind::kEQ, a, b); }
Expr ne(const Expr& a, const Expr& b) { return make_binary(ExprKind::kNE, a, b); }
Expr lt(const Expr& a, const Expr& b) { return make_binary(ExprKind::kLT, a, b); }
Expr le(const Expr& a, const Expr& b) { return make_binary(ExprKind::kLE, a, b); }
Expr gt(const Expr& a, const Expr& b) { return make_binary(ExprKind::kGT, a, b); }
Expr ge(const Expr& a, const Expr& b) { return make_binary(ExprKind::kGE, a, b); }
Expr logical_and(const Expr& a, const Expr& b) { return make_binary(ExprKind::kAnd, a, b); }
Expr logical_or(const Expr& a, const Expr& b) { return make_binary(ExprKind::kOr, a, b); }
Expr bitwise_and(const Expr& a, const Expr& b) { return make_binary(ExprKind::kBitAnd, a, b); }
Expr bitwise_or(const Expr& a, const Expr& b) { return make_binary(ExprKind::kBitOr, a, b); }
Expr bitwise_xor(const Expr& a, const Expr& b) { return make_binary(ExprKind::kBitXor, a, b); }
Expr shift_left(const Expr& a, const Expr& b) { return make_binary(ExprKind::kShiftLeft, a, b); }
Expr shift_right(const Expr& a, const Expr& b) { return make_binary(ExprKind::kShiftRight, a, b); }

Expr neg(const Expr& a) {
  TILEJIT_CHECK(a.defined(), kValueError) << "the operand of '-' is an undefined expression";
  if (a.dtype().is_float()) return make_float(0.0, a.dtype()) - a;
  return (a.dtype() == DataType::int64() ? Expr(0) : make_int(0, a.dtype())) - a;
}

// ---------------------------------------------------------------------------
// Other nodes

Expr logical_not(const Expr& a) {
  TILEJIT_CHECK(a.defined(), kValueError) << "the operand of '!' is an undefined expression";
  TILEJIT_CHECK(a.dtype() == DataType::boolean(), kTypeError)
      << "'!' needs a bool operand, got " << a.dtype().name();
  if (a.is_const()) return make_bool(a.int_value() == 0);
  return Expr(std::make_shared<const NotNode>(a));
}

Expr bitwise_not(const Expr& a) {
  TILEJIT_CHECK(a.defined(), kValueError) << "the operand of '~' is an undefined expression";
  TILEJIT_CHECK(a.dtype().is_int(), kTypeError)
      << "'~' needs an integer operand, got " << a.dtype().name()
      << (a.dtype() == DataType::boolean() ? " (use '!' on a mask)" : "");
  // The bits of the complement, wrapped to the dtype (Note [Unsigned constants]).
  if (a.is_const()) return make_int(~a.int_value(), a.dtype());
  return Expr(std::make_shared<const BitNotNode>(a));
}

Expr select(const Expr& cond, const Expr& t, const Expr& f) {
  TILEJIT_CHECK(cond.defined() && t.defined() && f.defined(), kValueError)
      << "an operand of select is an undefined expression";
  TILEJIT_CHECK(cond.dtype() == DataType::boolean(), kTypeError)
      << "select: the condition has dtype " << cond.dtype().name() << "; expected bool";
  Expr x = (is_imm(t) && !is_imm(f)) ? adopt(t, f.dtype()) : t;
  Expr y = (is_imm(f) && !is_imm(t)) ? adopt(f, t.dtype()) : f;
  const DataType type = promote(x.dtype(), y.dtype());
  if (x.dtype() != type) x = cast(type, x);
  if (y.dtype() != type) y = cast(type, y);
  if (cond.is_const()) return cond.int_value() != 0 ? x : y;
  return Expr(std::make_shared<const SelectNode>(type, cond, std::move(x), std::move(y)));
}

Expr cast(DataType dtype, const Expr& value) {
  TILEJIT_CHECK(value.defined(), kValueError) << "cast: the value is an undefined expression";
  if (value.dtype() == dtype) return value;
  if (value.is_const()) {
    if (dtype.is_float()) return make_float(double(value.int_value()), dtype);
    return make_int(value.int_value(), dtype);
  }
  if (value.is_float_const() && dtype.is_float()) return make_float(value.float_value(), dtype);
  return Expr(std::make_shared<const CastNode>(dtype, value));
}

Expr call_intrinsic(Intrinsic op, std::vector<Expr> args) {
  TILEJIT_CHECK(int(args.size()) == intrinsic_arity(op), kValueError)
      << intrinsic_name(op) << " takes " << intrinsic_arity(op) << " argument"
      << (intrinsic_arity(op) == 1 ? "" : "s") << ", got " << args.size();
  for (const Expr& a : args) {
    TILEJIT_CHECK(a.defined(), kValueError)
        << "an argument of " << intrinsic_name(op) << " is an undefined expression";
  }
  DataType type = args[0].dtype();
  if (is_shuffle(op)) {
    // The value's dtype; the lane, width and mask are integers.
    for (size_t i = 1; i < args.size(); ++i) {
      TILEJIT_CHECK(args[i].dtype().is_int(), kTypeError)
          << intrinsic_name(op) << ": argument " << i << " is " << args[i].dtype().name()
          << "; the lane, width and mask are integers";
    }
    return Expr(std::make_shared<const CallNode>(type, op, std::move(args)));
  }
  if (op == Intrinsic::kPow) {
    if (is_imm(args[0]) && !is_imm(args[1])) args[0] = adopt(args[0], args[1].dtype());
    if (is_imm(args[1]) && !is_imm(args[0])) args[1] = adopt(args[1], args[0].dtype());
    type = promote(args[0].dtype(), args[1].dtype());
  }
  if (op != Intrinsic::kAbs && !type.is_float()) type = DataType::float32();
  TILEJIT_CHECK(type.code != DataType::kBool, kTypeError)
      << intrinsic_name(op) << ": a bool argument";
  for (Expr& a : args) {
    if (a.dtype() != type) a = cast(type, a);
  }
  return Expr(std::make_shared<const CallNode>(type, op, std::move(args)));
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }

// ---------------------------------------------------------------------------
// Structure

namespace {

int cmp_int(int64_t x, int64_t y) { return x == y ? 0 : (x < y ? -1 : 1); }

int cmp_dtype(DataType x, DataType y) {
  if (x.code != y.code) return x.code < y.code ? -1 : 1;
  if (x.bits != y.bits) return x.bits < y.bits ? -1 : 1;
  return cmp_int(x.lanes, y.lanes);
}

// Symbols first, then the other kinds, constants last (so a min or max
// prints its symbolic operand first: "min(s, 4)"); simplify() relies on it.
int kind_rank(ExprKind kind) {
  switch (kind) {
    case ExprKind::kVar: return 0;
    case ExprKind::kIntImm: return 100;
    case ExprKind::kFloatImm: return 101;
    default: return 1 + int(kind);
  }
}

// Compares the visited node with `other_`, which has the same kind.
class Comparer : public ExprFunctor<int> {
 public:
  int run(const Expr& x, const Expr& y) {
    if (x.get() == y.get()) return 0;  // shared subtrees, and both undefined
    if (!x.defined() || !y.defined()) return x.defined() ? 1 : -1;
    const int rx = kind_rank(x.kind()), ry = kind_rank(y.kind());
    if (rx != ry) return rx < ry ? -1 : 1;
    const Expr* saved = other_;
    other_ = &y;
    int c = visit_expr(x);
    other_ = saved;
    return c != 0 ? c : cmp_dtype(x.dtype(), y.dtype());
  }

 private:
  template <typename T>
  const T* other() const {
    return static_cast<const T*>(other_->get());
  }
  int run_all(const std::vector<Expr>& x, const std::vector<Expr>& y) {
    if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
    for (size_t i = 0; i < x.size(); ++i) {
      if (int c = run(x[i], y[i])) return c;
    }
    return 0;
  }

  int visit_int_imm(const IntImmNode* op, const Expr&) override {
    return cmp_int(op->value, other<IntImmNode>()->value);
  }
  int visit_float_imm(const FloatImmNode* op, const Expr&) override {
    const double y = other<FloatImmNode>()->value;
    return op->value == y ? 0 : (op->value < y ? -1 : 1);
  }
  int visit_var(const VarNode* op, const Expr&) override {
    const VarNode* y = other<VarNode>();
    if (int c = op->name.compare(y->name)) return c < 0 ? -1 : 1;
    return op->id == y->id ? 0 : (op->id < y->id ? -1 : 1);
  }
  int visit_binary(const BinaryNode* op, const Expr&) override {
    const BinaryNode* y = other<BinaryNode>();
    if (int c = run(op->a, y->a)) return c;
    return run(op->b, y->b);
  }
  int visit_not(const NotNode* op, const Expr&) override { return run(op->a, other<NotNode>()->a); }
  int visit_bit_not(const BitNotNode* op, const Expr&) override {
    return run(op->a, other<BitNotNode>()->a);
  }
  int visit_select(const SelectNode* op, const Expr&) override {
    const SelectNode* y = other<SelectNode>();
    if (int c = run(op->cond, y->cond)) return c;
    if (int c = run(op->true_value, y->true_value)) return c;
    return run(op->false_value, y->false_value);
  }
  int visit_cast(const CastNode* op, const Expr&) override {
    return run(op->value, other<CastNode>()->value);
  }
  int visit_call(const CallNode* op, const Expr&) override {
    const CallNode* y = other<CallNode>();
    if (op->op != y->op) return op->op < y->op ? -1 : 1;
    return run_all(op->args, y->args);
  }
  int visit_load(const LoadNode* op, const Expr&) override {
    const LoadNode* y = other<LoadNode>();
    if (op->buffer.id() != y->buffer.id()) return op->buffer.id() < y->buffer.id() ? -1 : 1;
    return run_all(op->indices, y->indices);
  }

  const Expr* other_ = nullptr;
};

class SymbolCollector : public IRVisitor {
 public:
  explicit SymbolCollector(std::vector<std::string>* out) : out_(out) {}

 private:
  void visit_var(const VarNode* op, const Expr&) override {
    if (op->id != 0) return;
    for (const std::string& name : *out_) {
      if (name == op->name) return;
    }
    out_->push_back(op->name);
  }
  void visit_load(const LoadNode* op, const Expr& e) override {
    // A load's symbols include those of its buffer's shape: a kernel that
    // reads it needs them bound.
    for (const Expr& d : op->buffer.shape()) visit(d);
    IRVisitor::visit_load(op, e);
  }
  std::vector<std::string>* out_;
};

}  // namespace

int structural_compare(const Expr& a, const Expr& b) { return Comparer().run(a, b); }

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.get() == b.get()) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind()) return false;
  return Comparer().run(a, b) == 0;
}

void collect_vars(const Expr& e, std::vector<std::string>* out) {
  SymbolCollector collector(out);
  collector.visit(e);
}

// ---------------------------------------------------------------------------
// Evaluation

namespace {

using Lookup = std::function<int64_t(const std::string&)>;

EvalStatus eval(const Expr& e, const Lookup& lookup, int64_t* value, Expr* where) {
  switch (e.kind()) {
    case ExprKind::kIntImm: *value = e.int_value(); return EvalStatus::kOk;
    case ExprKind::kVar: *value = lookup(e.var_name()); return EvalStatus::kOk;
    default: break;
  }
  if (TILEJIT_UNLIKELY(!is_shape_kind(e.kind()))) {
    TILEJIT_THROW(kValueError) << "evaluate: " << to_string(e)
                               << " is not an integer shape expression";
  }
  int64_t a = 0, b = 0;
  EvalStatus status = eval(e.a(), lookup, &a, where);
  if (status == EvalStatus::kOk) status = eval(e.b(), lookup, &b, where);
  if (status != EvalStatus::kOk) return status;
  if (is_division(e.kind()) && b == 0) {
    status = EvalStatus::kDivisionByZero;
  } else if (!apply_int(e.kind(), a, b, value)) {
    status = EvalStatus::kOverflow;
  }
  if (status != EvalStatus::kOk && where != nullptr) *where = e;
  return status;
}

}  // namespace

EvalStatus try_evaluate(const Expr& e, const Lookup& lookup, int64_t* value, Expr* where) {
  TILEJIT_CHECK(e.defined(), kValueError) << "evaluate: the expression is undefined";
  return eval(e, lookup, value, where);
}

int64_t evaluate(const Expr& e, const Lookup& lookup) {
  int64_t value = 0;
  Expr where;
  switch (try_evaluate(e, lookup, &value, &where)) {
    case EvalStatus::kOk: break;
    case EvalStatus::kDivisionByZero:
      TILEJIT_THROW(kValueError) << "division by zero in " << to_string(where);
    case EvalStatus::kOverflow:
      TILEJIT_THROW(kValueError) << "int64 overflow in " << to_string(where);
  }
  return value;
}

}  // namespace tilejit::ir
