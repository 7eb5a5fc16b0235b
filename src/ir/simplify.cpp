#include "tilejit/ir/simplify.h"

#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "tilejit/ir/visitor.h"

namespace tilejit::ir {

// Note [Canonical polynomial form]
// simplify() reads an expression as a polynomial: a sum of monomials, each an
// int64 coefficient times a product of atoms. An atom is a symbol or a
// subterm that is not a polynomial (floordiv, floormod, ceildiv, min, max),
// whose operands are simplified first. Sums, differences and products of
// polynomials are computed exactly (coefficients follow Note [Integer
// semantics] in expr.cpp), which combines like terms, folds constants and
// applies x + 0, x * 1, x * 0 and x - x for free. Writing the polynomial back
// in one fixed order (TermOrder, then compare() within a monomial) is what
// makes equal polynomials print the same.
//
// Value is preserved wherever the original evaluates without dividing by
// zero; dropping a term (x * 0, x - x) may also drop a division by zero that
// the original would have reported, never the other way round.
//
// Coefficients are exact (Note [Integer semantics]): where combining them
// would overflow int64 ((s * 2^62) * 4), simplify() returns the expression
// as written rather than a polynomial with a wrapped coefficient, which would
// have another value. Evaluating that expression then overflows for every
// symbol value that makes the product overflow, and not for the others.

namespace {

// Thrown by the coefficient arithmetic below when a result does not fit;
// caught by simplify() and as_single_var_affine() (Note [Canonical
// polynomial form]).
struct CoefficientOverflow {};

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw CoefficientOverflow{};
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw CoefficientOverflow{};
  return r;
}

// The order of atoms: structural_compare's (symbols first by name, then the
// non-polynomial kinds, constants last, so a min or max prints its symbolic
// operand first: "min(s, 4)").
int compare(const Expr& x, const Expr& y) { return structural_compare(x, y); }

// Atoms sorted by compare(), repeated for powers; empty for the constant term.
using Monomial = std::vector<Expr>;

// Higher degree first, so products come before single atoms and the
// constant comes last; equal degrees compare atom by atom.
struct TermOrder {
  bool operator()(const Monomial& x, const Monomial& y) const {
    if (x.size() != y.size()) return x.size() > y.size();
    for (size_t i = 0; i < x.size(); ++i) {
      int c = compare(x[i], y[i]);
      if (c != 0) return c < 0;
    }
    return false;
  }
};

// Invariant: no coefficient is zero (the zero polynomial is empty).
using Poly = std::map<Monomial, int64_t, TermOrder>;

void add_term(Poly* p, const Monomial& m, int64_t coeff) {
  if (coeff == 0) return;
  auto [it, inserted] = p->emplace(m, coeff);
  if (inserted) return;
  it->second = checked_add(it->second, coeff);
  if (it->second == 0) p->erase(it);
}

Poly constant(int64_t c) {
  Poly p;
  add_term(&p, {}, c);
  return p;
}

Poly atom(Expr e) {
  Poly p;
  p.emplace(Monomial{std::move(e)}, 1);
  return p;
}

// x + sign * y, sign being 1 or -1.
Poly add(Poly x, const Poly& y, int64_t sign) {
  for (const auto& [m, c] : y) add_term(&x, m, checked_mul(sign, c));
  return x;
}

Monomial multiply(const Monomial& x, const Monomial& y) {
  Monomial m;
  m.reserve(x.size() + y.size());
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (j == y.size() || (i < x.size() && compare(x[i], y[j]) <= 0)) {
      m.push_back(x[i++]);
    } else {
      m.push_back(y[j++]);
    }
  }
  return m;
}

Poly mul(const Poly& x, const Poly& y) {
  Poly p;
  for (const auto& [mx, cx] : x) {
    for (const auto& [my, cy] : y) add_term(&p, multiply(mx, my), checked_mul(cx, cy));
  }
  return p;
}

// True when `p` is a constant (the zero polynomial included); sets *value.
bool const_value(const Poly& p, int64_t* value) {
  if (p.empty()) {
    *value = 0;
    return true;
  }
  if (p.size() == 1 && p.begin()->first.empty()) {
    *value = p.begin()->second;
    return true;
  }
  return false;
}

// Writes the polynomial back in TermOrder: the first term carries its sign
// in its coefficient ("-1 * s + t"); later negative terms become
// subtractions ("s - 1", "x - 2 * y") so the result reads as written.
Expr to_expr(const Poly& p) {
  if (p.empty()) return Expr(0);
  Expr result;
  for (const auto& [m, c] : p) {
    bool first = !result.defined();
    // INT64_MIN has no positive counterpart; it stays an added negative.
    bool subtract = !first && c < 0 && c != std::numeric_limits<int64_t>::min();
    int64_t magnitude = subtract ? -c : c;
    Expr term;
    if (m.empty()) {
      term = Expr(magnitude);
    } else {
      term = magnitude == 1 ? m[0] : Expr(magnitude) * m[0];
      for (size_t i = 1; i < m.size(); ++i) term = term * m[i];
    }
    result = first ? term : (subtract ? result - term : result + term);
  }
  return result;
}

Poly to_poly(const Expr& e);

Poly division_to_poly(const Expr& e) {
  Poly x = to_poly(e.a());
  Poly y = to_poly(e.b());
  int64_t divisor = 0;
  if (const_value(y, &divisor)) {
    // The divisor simplified to zero although it was not written as a
    // constant ("n // (s - s)"). make_binary would reject the rewritten
    // node, and the division must still fail when evaluated, so the
    // original subterm stays, unsimplified, as an atom.
    if (divisor == 0) return atom(e);
    int64_t dividend = 0;
    if (const_value(x, &dividend)) {
      int64_t quotient = 0;
      if (!apply_int(e.kind(), dividend, divisor, &quotient)) throw CoefficientOverflow{};
      return constant(quotient);
    }
    // (INT64_MIN % -1 traps, so -1 is answered without dividing.)
    bool exact = true;
    for (const auto& [m, c] : x) exact = exact && (divisor == -1 || c % divisor == 0);
    // Exact: every term divides evenly, so the quotient is exact for every
    // value of the atoms, and the remainder is zero. This covers x // 1,
    // x % 1, ceildiv(x, 1) and (4 * s) // 2.
    if (exact) {
      if (e.kind() == ExprKind::kFloorMod) return Poly{};
      Poly q;
      for (const auto& [m, c] : x) {
        add_term(&q, m, divisor == -1 ? checked_mul(c, -1) : c / divisor);
      }
      return q;
    }
  }
  return atom(make_binary(e.kind(), to_expr(x), to_expr(y)));
}

Poly min_max_to_poly(const Expr& e) {
  Poly x = to_poly(e.a());
  Poly y = to_poly(e.b());
  Expr ex = to_expr(x);
  Expr ey = to_expr(y);
  if (ex.is_const() && ey.is_const()) {
    return constant(make_binary(e.kind(), ex, ey).int_value());
  }
  if (structural_equal(ex, ey)) return x;
  // min and max commute; one operand order makes min(a, b) and min(b, a)
  // the same atom.
  if (compare(ex, ey) > 0) std::swap(ex, ey);
  return atom(make_binary(e.kind(), ex, ey));
}

// Integer expressions become polynomials; anything else (floats, compares,
// loads, casts, ...) is an atom left as written: simplify() canonicalises
// integer index and shape arithmetic only.
class ToPoly : public ExprFunctor<Poly> {
 protected:
  const char* walk_name() const override { return "simplify"; }
  Poly visit_int_imm(const IntImmNode* op, const Expr& e) override {
    return op->dtype.is_int() ? constant(op->value) : atom(e);
  }
  Poly visit_float_imm(const FloatImmNode*, const Expr& e) override { return atom(e); }
  Poly visit_var(const VarNode*, const Expr& e) override { return atom(e); }
  Poly visit_binary(const BinaryNode* op, const Expr& e) override {
    // Integer arithmetic only (coefficients are computed on int64, Note
    // [Integer semantics]); compares, logic and floats are atoms.
    if (!op->dtype.is_int() || !op->a.dtype().is_int() || !op->b.dtype().is_int()) {
      return atom(e);
    }
    switch (op->kind) {
      case ExprKind::kAdd: return add(to_poly(op->a), to_poly(op->b), 1);
      case ExprKind::kSub: return add(to_poly(op->a), to_poly(op->b), -1);
      case ExprKind::kMul: return mul(to_poly(op->a), to_poly(op->b));
      case ExprKind::kFloorDiv:
      case ExprKind::kFloorMod:
      case ExprKind::kCeilDiv: return division_to_poly(e);
      case ExprKind::kMin:
      case ExprKind::kMax: return min_max_to_poly(e);
      default: return atom(e);
    }
  }
  Poly visit_not(const NotNode*, const Expr& e) override { return atom(e); }
  Poly visit_select(const SelectNode*, const Expr& e) override { return atom(e); }
  Poly visit_cast(const CastNode*, const Expr& e) override { return atom(e); }
  Poly visit_call(const CallNode*, const Expr& e) override { return atom(e); }
  Poly visit_load(const LoadNode*, const Expr& e) override { return atom(e); }
};

Poly to_poly(const Expr& e) { return ToPoly().visit_expr(e); }

}  // namespace

Expr simplify(const Expr& e) {
  if (!e.defined()) return e;
  Expr out;
  try {
    out = to_expr(to_poly(e));
  } catch (const CoefficientOverflow&) {
    return e;  // Note [Canonical polynomial form]: as written
  }
  // A constant result keeps the expression's dtype (int32 index arithmetic
  // stays int32); non-constant terms carry their own dtypes.
  if (out.is_const() && out.dtype() != e.dtype() && e.dtype().is_int()) {
    out = make_int(out.int_value(), e.dtype());
  }
  return out;
}

bool as_single_var_affine(const Expr& e, AffineForm* out) {
  if (!e.defined()) return false;
  Poly p;
  try {
    p = to_poly(e);
  } catch (const CoefficientOverflow&) {
    return false;
  }
  const Monomial* linear = nullptr;
  int64_t coeff = 0, offset = 0;
  for (const auto& [m, c] : p) {
    if (m.empty()) {
      offset = c;
    } else if (linear == nullptr && m.size() == 1 && m[0].is_var()) {
      linear = &m;
      coeff = c;
    } else {
      return false;  // a second term, a product, or a non-polynomial atom
    }
  }
  if (linear == nullptr) return false;  // a constant
  out->var = (*linear)[0].var_name();
  out->coeff = coeff;
  out->offset = offset;
  return true;
}

}  // namespace tilejit::ir
