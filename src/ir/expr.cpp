#include "tilejit/ir/expr.h"

#include <ostream>
#include <utility>

#include "tilejit/core/error.h"

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

bool is_division(ExprKind kind) {
  return kind == ExprKind::kFloorDiv || kind == ExprKind::kFloorMod ||
         kind == ExprKind::kCeilDiv;
}

bool is_identifier(const std::string& s) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Printing precedence: a child is parenthesised when it binds more loosely
// than its parent, or, as a right operand, equally loosely (every operator
// here associates to the left, so "a - (b + c)" and "a * (b // c)" need
// them). Constants (negative ones included), symbols and calls are atoms:
// "-3" reads as one token in the languages a reader has in mind.
int precedence(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kAdd:
    case ExprKind::kSub: return 1;
    case ExprKind::kMul:
    case ExprKind::kFloorDiv:
    case ExprKind::kFloorMod: return 2;
    default: return 3;
  }
}

const char* infix_symbol(ExprKind kind) {
  switch (kind) {
    case ExprKind::kAdd: return " + ";
    case ExprKind::kSub: return " - ";
    case ExprKind::kMul: return " * ";
    case ExprKind::kFloorDiv: return " // ";
    case ExprKind::kFloorMod: return " % ";
    default: return nullptr;
  }
}

const char* call_name(ExprKind kind) {
  switch (kind) {
    case ExprKind::kCeilDiv: return "ceildiv";
    case ExprKind::kMin: return "min";
    case ExprKind::kMax: return "max";
    default: return nullptr;
  }
}

// The operator as an author writes it, for messages.
const char* op_name(ExprKind kind) {
  switch (kind) {
    case ExprKind::kAdd: return "+";
    case ExprKind::kSub: return "-";
    case ExprKind::kMul: return "*";
    case ExprKind::kFloorDiv: return "//";
    case ExprKind::kFloorMod: return "%";
    default: return call_name(kind);
  }
}

void print(const Expr& e, std::string* out) {
  if (!e.defined()) {
    *out += "<undefined>";
    return;
  }
  switch (e.kind()) {
    case ExprKind::kIntImm: *out += std::to_string(e.int_value()); return;
    case ExprKind::kVar: *out += e.var_name(); return;
    default: break;
  }
  if (const char* name = call_name(e.kind())) {
    *out += name;
    *out += '(';
    print(e.a(), out);
    *out += ", ";
    print(e.b(), out);
    *out += ')';
    return;
  }
  int p = precedence(e);
  bool paren_a = precedence(e.a()) < p;
  bool paren_b = precedence(e.b()) <= p;
  if (paren_a) *out += '(';
  print(e.a(), out);
  if (paren_a) *out += ')';
  *out += infix_symbol(e.kind());
  if (paren_b) *out += '(';
  print(e.b(), out);
  if (paren_b) *out += ')';
}

}  // namespace

Expr::Expr(int64_t value) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::kIntImm;
  node->value = value;
  node_ = std::move(node);
}

Expr Expr::var(std::string name) {
  TILEJIT_CHECK(is_identifier(name), kValueError)
      << "symbol name '" << name << "' is not a C identifier";
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::kVar;
  node->name = std::move(name);
  return Expr(std::shared_ptr<const ExprNode>(std::move(node)));
}

ExprKind Expr::kind() const noexcept { return node_->kind; }
int64_t Expr::int_value() const noexcept { return node_->value; }
const std::string& Expr::var_name() const noexcept { return node_->name; }
const Expr& Expr::a() const noexcept { return node_->a; }
const Expr& Expr::b() const noexcept { return node_->b; }

Expr make_binary(ExprKind kind, Expr a, Expr b) {
  TILEJIT_CHECK(kind != ExprKind::kIntImm && kind != ExprKind::kVar, kInternalError)
      << "make_binary: kind " << int(kind) << " is not a binary kind";
  TILEJIT_CHECK(a.defined() && b.defined(), kValueError)
      << "an operand of '" << op_name(kind) << "' is an undefined expression";
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->a = std::move(a);
  node->b = std::move(b);
  Expr e(std::shared_ptr<const ExprNode>(std::move(node)));
  // The node is built before the checks so the messages can print it as the
  // author wrote it.
  if (is_division(kind) && e.b().is_const() && e.b().int_value() == 0) {
    TILEJIT_THROW(kValueError) << "division by constant zero in " << to_string(e);
  }
  if (e.a().is_const() && e.b().is_const()) {
    int64_t value = 0;
    if (!apply_int(kind, e.a().int_value(), e.b().int_value(), &value)) {
      TILEJIT_THROW(kValueError) << "int64 overflow in " << to_string(e);
    }
    return Expr(value);
  }
  return e;
}

Expr operator+(const Expr& a, const Expr& b) { return make_binary(ExprKind::kAdd, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return make_binary(ExprKind::kSub, a, b); }
Expr operator*(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMul, a, b); }
Expr floordiv(const Expr& a, const Expr& b) { return make_binary(ExprKind::kFloorDiv, a, b); }
Expr floormod(const Expr& a, const Expr& b) { return make_binary(ExprKind::kFloorMod, a, b); }
Expr ceildiv(const Expr& a, const Expr& b) { return make_binary(ExprKind::kCeilDiv, a, b); }
Expr min(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMin, a, b); }
Expr max(const Expr& a, const Expr& b) { return make_binary(ExprKind::kMax, a, b); }

std::string to_string(const Expr& e) {
  std::string out;
  print(e, &out);
  return out;
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }

bool structural_equal(const Expr& a, const Expr& b) {
  if (a.get() == b.get()) return true;  // shared subtrees, and both undefined
  if (!a.defined() || !b.defined() || a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ExprKind::kIntImm: return a.int_value() == b.int_value();
    case ExprKind::kVar: return a.var_name() == b.var_name();
    default: return structural_equal(a.a(), b.a()) && structural_equal(a.b(), b.b());
  }
}

void collect_vars(const Expr& e, std::vector<std::string>* out) {
  if (!e.defined() || e.is_const()) return;
  if (e.is_var()) {
    for (const std::string& name : *out) {
      if (name == e.var_name()) return;
    }
    out->push_back(e.var_name());
    return;
  }
  collect_vars(e.a(), out);
  collect_vars(e.b(), out);
}

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

namespace {

using Lookup = std::function<int64_t(const std::string&)>;

EvalStatus eval(const Expr& e, const Lookup& lookup, int64_t* value, Expr* where) {
  switch (e.kind()) {
    case ExprKind::kIntImm: *value = e.int_value(); return EvalStatus::kOk;
    case ExprKind::kVar: *value = lookup(e.var_name()); return EvalStatus::kOk;
    default: break;
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
