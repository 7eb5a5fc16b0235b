// Symbolic integer expressions: the shapes, grids and sizes of a signature.
//
// An Expr is an immutable tree shared by reference. Symbols (Var) are
// identified by name: two Vars with the same name are the same symbol. This is
// what lets a plan be persisted and matched "symbols by name" and what a
// Python `T.symbolic("b")` means to its author.
//
// Division and remainder are floor division and floor modulo (Python's // and
// %), the conventions shape arithmetic needs for non-negative extents and that
// stay well defined for negative intermediate values.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace tilejit::ir {

enum class ExprKind : uint8_t {
  kIntImm,
  kVar,
  kAdd,
  kSub,
  kMul,
  kFloorDiv,
  kFloorMod,
  kCeilDiv,
  kMin,
  kMax,
};

struct ExprNode;

class Expr {
 public:
  Expr() = default;
  /// An integer constant.
  Expr(int64_t value);  // NOLINT(google-explicit-constructor): shapes mix ints and symbols
  Expr(int value) : Expr(int64_t{value}) {}  // NOLINT(google-explicit-constructor)

  /// A symbol. Throws ValueError unless `name` is a C identifier (it becomes a
  /// variable in generated source).
  static Expr var(std::string name);

  bool defined() const noexcept { return node_ != nullptr; }
  ExprKind kind() const noexcept;
  /// The constant of an IntImm.
  int64_t int_value() const noexcept;
  /// The name of a Var.
  const std::string& var_name() const noexcept;
  /// Operands of a binary node.
  const Expr& a() const noexcept;
  const Expr& b() const noexcept;

  bool is_const() const noexcept { return defined() && kind() == ExprKind::kIntImm; }
  bool is_var() const noexcept { return defined() && kind() == ExprKind::kVar; }

  const ExprNode* get() const noexcept { return node_.get(); }

 private:
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}
  friend Expr make_binary(ExprKind kind, Expr a, Expr b);
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind;
  int64_t value = 0;  // kIntImm
  std::string name;   // kVar
  Expr a, b;          // binary kinds
};

/// A symbol; same as Expr::var.
inline Expr symbolic(std::string name) { return Expr::var(std::move(name)); }

// Arithmetic. Constant operands fold at construction (2 + 3 is IntImm 5);
// anything further is simplify()'s job. A constant zero divisor, and a
// folded constant that does not fit in int64, are ValueErrors.
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr floordiv(const Expr& a, const Expr& b);
Expr floormod(const Expr& a, const Expr& b);
/// ceil(a / b); kept as its own node so that it prints as the author wrote it.
Expr ceildiv(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);

/// The node built from a kind and two operands, folding constants.
Expr make_binary(ExprKind kind, Expr a, Expr b);

/// Prints with the usual precedence, `//` and `%` for floordiv and floormod,
/// and ceildiv(a, b), min(a, b), max(a, b) as calls: "b * s + 1",
/// "ceildiv(n, 64)".
std::string to_string(const Expr& e);
std::ostream& operator<<(std::ostream& os, const Expr& e);

/// Same tree, same constants, same symbol names.
bool structural_equal(const Expr& a, const Expr& b);

/// Names of the symbols in `e`, appended to `out` in order of first
/// appearance, each once (names already in `out` are not repeated).
void collect_vars(const Expr& e, std::vector<std::string>* out);

/// Reference evaluation by walking the tree (the call path uses
/// ShapeProgram instead). `lookup` returns a symbol's value. Throws ValueError
/// on division by zero ("division by zero in n // m") and when a value does
/// not fit in int64 ("int64 overflow in m * m"): Note [Integer semantics].
int64_t evaluate(const Expr& e, const std::function<int64_t(const std::string&)>& lookup);

/// How an evaluation ended.
enum class EvalStatus : uint8_t { kOk, kDivisionByZero, kOverflow };

/// evaluate() that reports instead of throwing: the first failure in
/// evaluation order (operands left to right, then their node), with the
/// subterm that failed in *where when it is given. *value is set on kOk.
/// Exceptions from `lookup` pass through.
EvalStatus try_evaluate(const Expr& e, const std::function<int64_t(const std::string&)>& lookup,
                        int64_t* value, Expr* where = nullptr);

/// `a kind b` for two integers as Note [Integer semantics] says; false when
/// the exact result does not fit in int64 (*out is then unspecified). The
/// divisor of a division is nonzero.
bool apply_int(ExprKind kind, int64_t a, int64_t b, int64_t* out) noexcept;

/// Floor division and modulo of integers (Python semantics); b != 0, and not
/// a == INT64_MIN with b == -1 (the one quotient that does not fit). Written
/// from the truncating / and % so that no intermediate overflows.
constexpr int64_t floordiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
constexpr int64_t floormod_int(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
constexpr int64_t ceildiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}

}  // namespace tilejit::ir
