// Expressions: the shapes, grids and sizes of a signature, and the scalar
// arithmetic of a tile program (indices, values, masks).
//
// An Expr is a cheap handle on an immutable node shared by reference. Every
// node has a kind and a dtype, and one class per kind (IntImmNode, VarNode,
// AddNode, ..., LoadNode); Expr::as<T>() gives the typed node. Walks over the
// tree go through ExprFunctor / IRVisitor / IRMutator (visitor.h), which hold
// the one dispatch on the kind.
//
// Note [Variables]
// Two sorts of Var exist. Symbols of the signature (`symbolic("b")`, scalar
// parameters) have id 0 and are identified by NAME: two symbols with the same
// name are the same symbol, which is what lets a plan be persisted and matched
// "symbols by name" and what a Python `T.symbolic("b")` means to its author.
// Variables made inside the IR (loop variables, block indices, let
// temporaries; make_var()) get a unique id > 0 at creation and are identified
// by it: two loops may both call their variable `i`. The printer shows clashing
// names as `i`, `i_1`, ...
//
// Note [Expression dtypes]
// Integer constants written in C++ (`Expr(4)`) are int64, as are symbols: shape
// arithmetic is int64 throughout. A binary node's dtype is the promoted dtype of
// its operands (TVM's rule): int op int -> the wider int; int op float -> the
// float; and a constant operand adopts the other operand's dtype (a literal
// `2` next to an int32 loop variable is int32, a literal `0.5` next to a
// float16 value is float16). Comparisons, And, Or and Not are bool. Operands
// are not rewritten with casts; the node's dtype records the promotion.
//
// Division: `floordiv` / `floormod` are floor division and modulo (Python's
// `//` and `%`), the conventions shape arithmetic needs. `div` (kDiv, Python's
// `/`) is true division on floats; on two integers it is C's truncating
// division, as TVM's `tir.Div` and therefore TileLang define `/` on ints.
//
// Note [Bitwise operators]
// BitAnd, BitOr, BitXor, ShiftLeft, ShiftRight and BitNot are TVM's
// bitwise_and / or / xor, shift_left / shift_right and bitwise_not: integer
// (or bool, for & | ^) operands, promoted as for `+` (so uint32 with int32 is
// uint32, a literal takes the other operand's dtype), and C's result
// computed in the promoted dtype: `>>` of a signed value is arithmetic, of
// an unsigned one logical; `<<` keeps the low bits of the dtype (int8(96) <<
// 2 is -128, as the narrow type holds it); `~` is the complement in the
// operand's dtype (~uint8(5) is 250, not int64's -6). A shift by a negative
// amount or by the width or more is undefined, as in C and TVM: a constant
// amount out of range is a ValueError at construction ("shift amount 40 is
// out of range for int32 (0 to 31) in x << 40"); a computed one is the
// author's to keep in range. Constants fold (fold.cpp) exactly as the
// targets compute (Note [Unsigned arithmetic] in backend/common/
// tile_codegen.h says how narrow unsigned values are held); bool & | ^ bool
// is bool. The Python front end makes & | ^ ~ of bool masks the logical
// And / Or / NE / Not instead.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "tilejit/core/data_type.h"

namespace tilejit::ir {

// The order of the first ten is phase 1's and is relied on by simplify()'s
// canonical order; new kinds go after them.
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
  kFloatImm,
  kDiv,  // true division on floats, truncating on ints (see the top of this file)
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,
  kOr,
  kNot,
  kSelect,
  kCast,
  kCall,
  kLoad,
  // Note [Bitwise operators]; the five binary ones are consecutive.
  kBitAnd,
  kBitOr,
  kBitXor,
  kShiftLeft,
  kShiftRight,
  kBitNot,
};

/// True for the kinds with two operands a, b (BinaryNode).
constexpr bool is_binary_kind(ExprKind k) {
  return (k >= ExprKind::kAdd && k <= ExprKind::kMax) ||
         (k >= ExprKind::kDiv && k <= ExprKind::kOr) ||
         (k >= ExprKind::kBitAnd && k <= ExprKind::kShiftRight);
}
/// BitAnd, BitOr, BitXor, ShiftLeft, ShiftRight (Note [Bitwise operators]).
constexpr bool is_bitwise_kind(ExprKind k) {
  return k >= ExprKind::kBitAnd && k <= ExprKind::kShiftRight;
}
constexpr bool is_shift_kind(ExprKind k) {
  return k == ExprKind::kShiftLeft || k == ExprKind::kShiftRight;
}
/// EQ, NE, LT, LE, GT, GE.
constexpr bool is_compare_kind(ExprKind k) { return k >= ExprKind::kEQ && k <= ExprKind::kGE; }
/// The kinds of phase 1's integer shape expressions: IntImm, Var and the
/// eight integer operators. ShapeProgram and evaluate() take these only.
constexpr bool is_shape_kind(ExprKind k) { return k <= ExprKind::kMax; }

/// "IntImm", "Add", "Load", ...
const char* expr_kind_name(ExprKind k);
/// The operator as an author writes it: "+", "//", "<=", "min", "&&", "<<".
const char* binary_op_name(ExprKind k);

/// Intrinsic functions (CallNode). T.max / T.min are the Max / Min nodes.
enum class Intrinsic : uint8_t {
  kExp,
  kExp2,
  kLog,
  kLog2,
  kSqrt,
  kRsqrt,
  kTanh,
  kSigmoid,
  kAbs,
  kFloor,
  kCeil,
  kSin,
  kCos,
  kPow,  // two arguments
  // Warp shuffles (Note [Warp shuffles] in tilejit/transform/hoist_shuffles.h),
  // four arguments: (value, lane or delta, width, mask); the value's dtype.
  kShflSync,
  kShflUp,
  kShflDown,
  kShflXor,
};
inline constexpr Intrinsic kLastIntrinsic = Intrinsic::kShflXor;
/// "exp", "exp2", ..., "pow", "shfl_sync", "shfl_up", "shfl_down", "shfl_xor".
const char* intrinsic_name(Intrinsic op);
/// Arguments the intrinsic takes (1, 2 for pow, 4 for a shuffle).
int intrinsic_arity(Intrinsic op);
/// T.shfl_sync / shfl_up / shfl_down / shfl_xor.
constexpr bool is_shuffle(Intrinsic op) { return op >= Intrinsic::kShflSync; }

struct ExprNode;
struct IntImmNode;
struct FloatImmNode;
struct VarNode;
struct BinaryNode;
struct NotNode;
struct BitNotNode;
struct SelectNode;
struct CastNode;
struct CallNode;
struct LoadNode;  // buffer.h

class Expr {
 public:
  Expr() = default;
  /// An int64 integer constant.
  Expr(int64_t value);  // NOLINT(google-explicit-constructor): shapes mix ints and symbols
  Expr(int value) : Expr(int64_t{value}) {}  // NOLINT(google-explicit-constructor)
  /// A float32 constant (it adopts a float operand's dtype: `x * 0.5`).
  Expr(double value);  // NOLINT(google-explicit-constructor)
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

  /// A signature symbol (Note [Variables]): id 0, identified by name; int64
  /// unless a scalar parameter gives another dtype. Throws ValueError unless
  /// `name` is a C identifier (it becomes a variable in generated source).
  static Expr var(std::string name, DataType dtype = DataType::int64());

  bool defined() const noexcept { return node_ != nullptr; }
  ExprKind kind() const noexcept;
  DataType dtype() const noexcept;
  /// The constant of an IntImm (0 for other kinds).
  int64_t int_value() const noexcept;
  /// The constant of a FloatImm (0 for other kinds).
  double float_value() const noexcept;
  /// The name of a Var ("" for other kinds).
  const std::string& var_name() const noexcept;
  /// The id of a Var: 0 for a symbol, unique and > 0 for an IR variable.
  uint64_t var_id() const noexcept;
  /// Operands of a binary node (undefined for other kinds).
  const Expr& a() const noexcept;
  const Expr& b() const noexcept;

  bool is_const() const noexcept { return defined() && kind() == ExprKind::kIntImm; }
  bool is_float_const() const noexcept { return defined() && kind() == ExprKind::kFloatImm; }
  bool is_var() const noexcept { return defined() && kind() == ExprKind::kVar; }

  const ExprNode* get() const noexcept { return node_.get(); }
  const std::shared_ptr<const ExprNode>& node() const noexcept { return node_; }

  /// The typed node, or nullptr when the kind differs. `T` is a node class
  /// of this header or buffer.h (BinaryNode matches every binary kind).
  template <typename T>
  const T* as() const noexcept {
    return (defined() && T::classof(kind())) ? static_cast<const T*>(get()) : nullptr;
  }

 private:
  std::shared_ptr<const ExprNode> node_;
};

// ---------------------------------------------------------------------------
// Nodes. Invariant: immutable after construction; made only by the free
// functions below (which check operands and compute the dtype).

struct ExprNode {
  ExprKind kind;
  DataType dtype;

 protected:
  ExprNode(ExprKind k, DataType t) : kind(k), dtype(t) {}
};

struct IntImmNode : ExprNode {
  int64_t value;
  IntImmNode(int64_t v, DataType t) : ExprNode(ExprKind::kIntImm, t), value(v) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kIntImm; }
};

/// The value is kept as written (a double) whatever the dtype; code
/// generation rounds it to the dtype.
struct FloatImmNode : ExprNode {
  double value;
  FloatImmNode(double v, DataType t) : ExprNode(ExprKind::kFloatImm, t), value(v) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kFloatImm; }
};

struct VarNode : ExprNode {
  std::string name;
  uint64_t id;  // Note [Variables]: 0 for a signature symbol
  VarNode(std::string n, uint64_t i, DataType t)
      : ExprNode(ExprKind::kVar, t), name(std::move(n)), id(i) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kVar; }
};

/// Every binary kind. BinaryOpNode<K> is the class of one kind (AddNode, ...);
/// visitors receive a BinaryNode and read `kind`.
struct BinaryNode : ExprNode {
  Expr a, b;
  BinaryNode(ExprKind k, DataType t, Expr x, Expr y)
      : ExprNode(k, t), a(std::move(x)), b(std::move(y)) {}
  static constexpr bool classof(ExprKind k) { return is_binary_kind(k); }
};

template <ExprKind K>
struct BinaryOpNode : BinaryNode {
  static_assert(is_binary_kind(K));
  BinaryOpNode(DataType t, Expr x, Expr y) : BinaryNode(K, t, std::move(x), std::move(y)) {}
  static constexpr bool classof(ExprKind k) { return k == K; }
};
using AddNode = BinaryOpNode<ExprKind::kAdd>;
using SubNode = BinaryOpNode<ExprKind::kSub>;
using MulNode = BinaryOpNode<ExprKind::kMul>;
using DivNode = BinaryOpNode<ExprKind::kDiv>;
using FloorDivNode = BinaryOpNode<ExprKind::kFloorDiv>;
using FloorModNode = BinaryOpNode<ExprKind::kFloorMod>;
using CeilDivNode = BinaryOpNode<ExprKind::kCeilDiv>;
using MinNode = BinaryOpNode<ExprKind::kMin>;
using MaxNode = BinaryOpNode<ExprKind::kMax>;
using EQNode = BinaryOpNode<ExprKind::kEQ>;
using NENode = BinaryOpNode<ExprKind::kNE>;
using LTNode = BinaryOpNode<ExprKind::kLT>;
using LENode = BinaryOpNode<ExprKind::kLE>;
using GTNode = BinaryOpNode<ExprKind::kGT>;
using GENode = BinaryOpNode<ExprKind::kGE>;
using AndNode = BinaryOpNode<ExprKind::kAnd>;
using OrNode = BinaryOpNode<ExprKind::kOr>;
using BitAndNode = BinaryOpNode<ExprKind::kBitAnd>;
using BitOrNode = BinaryOpNode<ExprKind::kBitOr>;
using BitXorNode = BinaryOpNode<ExprKind::kBitXor>;
using ShiftLeftNode = BinaryOpNode<ExprKind::kShiftLeft>;
using ShiftRightNode = BinaryOpNode<ExprKind::kShiftRight>;

struct NotNode : ExprNode {
  Expr a;
  explicit NotNode(Expr x) : ExprNode(ExprKind::kNot, DataType::boolean()), a(std::move(x)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kNot; }
};

/// ~a, the complement of an integer in its own dtype.
struct BitNotNode : ExprNode {
  Expr a;
  explicit BitNotNode(Expr x) : ExprNode(ExprKind::kBitNot, x.dtype()), a(std::move(x)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kBitNot; }
};

struct SelectNode : ExprNode {
  Expr cond, true_value, false_value;
  SelectNode(DataType t, Expr c, Expr x, Expr y)
      : ExprNode(ExprKind::kSelect, t), cond(std::move(c)), true_value(std::move(x)),
        false_value(std::move(y)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kSelect; }
};

/// `value` converted to `dtype`.
struct CastNode : ExprNode {
  Expr value;
  CastNode(DataType t, Expr v) : ExprNode(ExprKind::kCast, t), value(std::move(v)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kCast; }
};

struct CallNode : ExprNode {
  Intrinsic op;
  std::vector<Expr> args;
  CallNode(DataType t, Intrinsic o, std::vector<Expr> xs)
      : ExprNode(ExprKind::kCall, t), op(o), args(std::move(xs)) {}
  static constexpr bool classof(ExprKind k) { return k == ExprKind::kCall; }
};

// ---------------------------------------------------------------------------
// Construction. Constant operands fold at construction (2 + 3 is IntImm 5,
// 1.5 * 2.0 is FloatImm 3.0); anything further is simplify()'s job. A constant
// zero integer divisor, and a folded int64 constant that does not fit, are
// ValueErrors, as is a constant shift amount out of range; an operand of the
// wrong dtype (a float in floordiv or &, a non-bool in And) is a TypeError
// naming the operator.

/// A symbol; same as Expr::var.
inline Expr symbolic(std::string name) { return Expr::var(std::move(name)); }
/// A new IR variable (Note [Variables]): a unique id; `name` a C identifier.
Expr make_var(std::string name, DataType dtype = DataType::int32());

/// An integer (or bool) constant of the given dtype.
Expr make_int(int64_t value, DataType dtype);
/// A floating constant of a float dtype (float16, bfloat16, float32, float64).
Expr make_float(double value, DataType dtype = DataType::float32());
/// Boolean constants.
Expr make_bool(bool value);
/// +infinity of a float dtype (T.infinity).
Expr infinity(DataType dtype);

Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
/// `/`: true division on floats, truncating division on ints.
Expr div(const Expr& a, const Expr& b);
Expr floordiv(const Expr& a, const Expr& b);
Expr floormod(const Expr& a, const Expr& b);
/// ceil(a / b); kept as its own node so that it prints as the author wrote it.
Expr ceildiv(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
/// -a (0 - a, in a's dtype).
Expr neg(const Expr& a);
inline Expr operator-(const Expr& a) { return neg(a); }

Expr eq(const Expr& a, const Expr& b);
Expr ne(const Expr& a, const Expr& b);
Expr lt(const Expr& a, const Expr& b);
Expr le(const Expr& a, const Expr& b);
Expr gt(const Expr& a, const Expr& b);
Expr ge(const Expr& a, const Expr& b);
inline Expr operator<(const Expr& a, const Expr& b) { return lt(a, b); }
inline Expr operator<=(const Expr& a, const Expr& b) { return le(a, b); }
inline Expr operator>(const Expr& a, const Expr& b) { return gt(a, b); }
inline Expr operator>=(const Expr& a, const Expr& b) { return ge(a, b); }
Expr logical_and(const Expr& a, const Expr& b);
Expr logical_or(const Expr& a, const Expr& b);
Expr logical_not(const Expr& a);

// Note [Bitwise operators]. TypeError for a float operand (and a bool one
// for shifts and ~), ValueError for a constant shift amount out of range.
Expr bitwise_and(const Expr& a, const Expr& b);
Expr bitwise_or(const Expr& a, const Expr& b);
Expr bitwise_xor(const Expr& a, const Expr& b);
Expr shift_left(const Expr& a, const Expr& b);
Expr shift_right(const Expr& a, const Expr& b);
Expr bitwise_not(const Expr& a);

/// cond ? t : f (T.if_then_else); cond is bool, t and f promote together.
Expr select(const Expr& cond, const Expr& t, const Expr& f);
/// `value` as `dtype` (T.cast); a cast to the value's own dtype is the value.
Expr cast(DataType dtype, const Expr& value);
/// An intrinsic call. Float intrinsics take the float dtype of their argument
/// (an integer argument is cast to float32 first); abs keeps its argument's.
Expr call_intrinsic(Intrinsic op, std::vector<Expr> args);

/// The node built from a binary kind and two operands, folding constants.
Expr make_binary(ExprKind kind, Expr a, Expr b);

/// The dtype of `a op b` for arithmetic (Note [Expression dtypes]), before
/// constant adoption: the wider int, or the float.
DataType promote(DataType a, DataType b);

/// Prints with the usual precedence, `//` and `%` for floordiv and floormod,
/// and ceildiv(a, b), min(a, b), max(a, b) as calls: "b * s + 1",
/// "ceildiv(n, 64)". (printer.h prints statements and functions.)
std::string to_string(const Expr& e);
std::ostream& operator<<(std::ostream& os, const Expr& e);

/// Same tree, same constants and dtypes, same variables (symbols by name, IR
/// variables by id), same buffers (by id).
bool structural_equal(const Expr& a, const Expr& b);
/// A total order that agrees with structural_equal (0 when equal). Symbols
/// sort first by name, constants last.
int structural_compare(const Expr& a, const Expr& b);

/// Names of the symbols (id 0 Vars) in `e`, appended to `out` in order of
/// first appearance, each once (names already in `out` are not repeated).
/// IR variables are not symbols and are not collected.
void collect_vars(const Expr& e, std::vector<std::string>* out);

/// Reference evaluation of an integer shape expression (is_shape_kind) by
/// walking the tree (the call path uses ShapeProgram instead). `lookup`
/// returns a symbol's value. Throws ValueError on division by zero ("division
/// by zero in n // m"), when a value does not fit in int64 ("int64 overflow
/// in m * m"; Note [Integer semantics]) and for any other kind.
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

// ---------------------------------------------------------------------------
// Inline accessors (after the nodes they read).

inline ExprKind Expr::kind() const noexcept { return node_->kind; }
inline DataType Expr::dtype() const noexcept { return node_->dtype; }
inline int64_t Expr::int_value() const noexcept {
  const IntImmNode* n = as<IntImmNode>();
  return n ? n->value : 0;
}
inline double Expr::float_value() const noexcept {
  const FloatImmNode* n = as<FloatImmNode>();
  return n ? n->value : 0.0;
}
inline uint64_t Expr::var_id() const noexcept {
  const VarNode* n = as<VarNode>();
  return n ? n->id : 0;
}

}  // namespace tilejit::ir
