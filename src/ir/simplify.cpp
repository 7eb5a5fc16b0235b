#include "tilejit/ir/simplify.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
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
    // Note [Unsigned constants] (expr.cpp): unsigned values wrap, polynomials don't.
    return op->dtype.code == DataType::kInt ? constant(op->value) : atom(e);
  }
  Poly visit_float_imm(const FloatImmNode*, const Expr& e) override { return atom(e); }
  Poly visit_var(const VarNode*, const Expr& e) override { return atom(e); }
  Poly visit_binary(const BinaryNode* op, const Expr& e) override {
    // Integer arithmetic only (coefficients are computed on int64, Note
    // [Integer semantics]); compares, logic, bitwise operators and floats
    // are atoms.
    if (op->dtype.code != DataType::kInt || op->a.dtype().code != DataType::kInt ||
        op->b.dtype().code != DataType::kInt) {
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
  Poly visit_bit_not(const BitNotNode*, const Expr& e) override { return atom(e); }
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
  if (out.is_const() && out.dtype() != e.dtype() && e.dtype().code == DataType::kInt) {
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

// Note [Proving conditions]
// prove() decides a comparison a < b (and the others) from bounds of the
// polynomial d = a - b over the values the context allows: a < b always
// holds when max(d) <= -1 and never when min(d) >= 0 (min(d) is -max(-d)).
// max(d) comes in two steps.
//  1. Symbolic. A term c * v, v an IR variable with a range, becomes
//     c * hi (c > 0) or c * lo (c < 0): a bound for every value of v,
//     whatever the other terms do. A term q * k * (x // k) becomes
//     q * x - q * (x % k), exactly, and q * k * ceildiv(x, k) becomes
//     q * x + q * ((-x) % k), so that a block index whose grid is `n // 128`
//     cancels against n: bx * 128 + i - n <= 128 * (n // 128 - 1) + 127 - n
//     = -(n % 128) - 1 <= -1. Repeated while anything changes (a range's
//     ends may name other variables), for a few rounds at most. The bound is
//     found with and without the division rewrite, and the lower kept: the
//     rewrite loses what the atom's own interval knows (128 * (i // 128) is
//     0 for i in [0, 127], i - i % 128 only at most 127).
//  2. Constant. Each remaining term is bounded by interval arithmetic over
//     its atoms: a variable's range, a dimension's >= 0, x % k in
//     [0, k - 1], x // k from x's interval. max(d) is the sum of the terms'
//     bounds, unknown as soon as one term is unbounded.
// A range whose hi is below its lo (a loop that never runs, a grid of no
// blocks) makes either answer right: nothing under it runs.

namespace {

using Bound = std::optional<int64_t>;  // nullopt: unbounded or unknown

struct Interval {
  Bound lo, hi;
};

Bound bound_add(Bound a, Bound b) {
  int64_t r;
  if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}
Bound bound_mul(Bound a, Bound b) {
  int64_t r;
  if (!a || !b || __builtin_mul_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}
Bound bound_neg(Bound a) {
  if (!a || *a == std::numeric_limits<int64_t>::min()) return std::nullopt;
  return -*a;
}

Interval interval_mul(const Interval& x, const Interval& y) {
  if (x.lo && x.hi && y.lo && y.hi) {
    const Bound p[] = {bound_mul(x.lo, y.lo), bound_mul(x.lo, y.hi), bound_mul(x.hi, y.lo),
                       bound_mul(x.hi, y.hi)};
    Interval r{p[0], p[0]};
    for (const Bound& v : p) {
      if (!v) return {};
      r.lo = std::min(*r.lo, *v);
      r.hi = std::max(*r.hi, *v);
    }
    return r;
  }
  // Both non-negative: the ends multiply (an unbounded one stays so).
  if (x.lo && *x.lo >= 0 && y.lo && *y.lo >= 0) return {bound_mul(x.lo, y.lo), bound_mul(x.hi, y.hi)};
  return {};
}

class Prover {
 public:
  explicit Prover(const ProofContext& ctx) : ctx_(ctx) {}

  std::optional<bool> decide(const Expr& c) {
    switch (c.kind()) {
      case ExprKind::kIntImm:
        if (c.dtype() == DataType::boolean()) return c.int_value() != 0;
        return std::nullopt;
      case ExprKind::kNot: {
        const std::optional<bool> v = decide(c.as<NotNode>()->a);
        return v ? std::optional<bool>(!*v) : v;
      }
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        const bool is_and = c.kind() == ExprKind::kAnd;
        const std::optional<bool> x = decide(c.a()), y = decide(c.b());
        // One side settles it (false for &&, true for ||), or both do.
        if ((x && *x != is_and) || (y && *y != is_and)) return !is_and;
        if (x && y) return is_and;
        return std::nullopt;
      }
      default: break;
    }
    // Signed operands only: unsigned ones wrap (Note [Unsigned constants]).
    if (!is_compare_kind(c.kind()) || c.a().dtype().code != DataType::kInt ||
        c.b().dtype().code != DataType::kInt) {
      return std::nullopt;
    }
    // a > b is b < a, a >= b is b <= a: d is the left side minus the right.
    const bool swap = c.kind() == ExprKind::kGT || c.kind() == ExprKind::kGE;
    const Poly d = add(to_poly(swap ? c.b() : c.a()), to_poly(swap ? c.a() : c.b()), -1);
    const Bound hi = best_max(d);
    auto lo = [&] { return bound_neg(best_max(add(Poly{}, d, -1))); };
    switch (c.kind()) {
      case ExprKind::kLT:
      case ExprKind::kGT: {
        if (hi && *hi <= -1) return true;
        const Bound l = lo();
        if (l && *l >= 0) return false;
        return std::nullopt;
      }
      case ExprKind::kLE:
      case ExprKind::kGE: {
        if (hi && *hi <= 0) return true;
        const Bound l = lo();
        if (l && *l >= 1) return false;
        return std::nullopt;
      }
      default: {  // EQ, NE
        const Bound l = lo();
        std::optional<bool> equal;
        if (hi && l && *hi <= 0 && *l >= 0) equal = true;
        if ((hi && *hi <= -1) || (l && *l >= 1)) equal = false;
        if (!equal) return std::nullopt;
        return c.kind() == ExprKind::kEQ ? *equal : !*equal;
      }
    }
  }

 private:
  static constexpr int kRounds = 8;     // Note [Proving conditions], step 1
  static constexpr int kMaxDepth = 64;  // ranges that name each other

  // The lower of the upper bounds with divisions rewritten and without
  // (Note [Proving conditions]).
  Bound best_max(const Poly& p) {
    const Bound a = max_of(p, false), b = max_of(p, true);
    if (a && b) return std::min(*a, *b);
    return a ? a : b;
  }

  // An upper bound of p's value (Note [Proving conditions]).
  Bound max_of(Poly p, bool divisions) {
    for (int round = 0; round < kRounds; ++round) {
      bool changed = false;
      Poly next;
      for (const auto& [m, c] : p) {
        if (m.size() == 1 && rewrite(m[0], c, divisions, &next)) {
          changed = true;
        } else {
          add_term(&next, m, c);
        }
      }
      p = std::move(next);
      if (!changed) break;
    }
    Bound sum = 0;
    for (const auto& [m, c] : p) {
      Interval t{1, 1};
      for (const Expr& a : m) t = interval_mul(t, interval(a, 0));
      sum = bound_add(sum, bound_mul(c, c > 0 ? t.hi : t.lo));
      if (!sum) break;
    }
    return sum;
  }

  // Step 1 for the term c * a: adds its replacement to *out, or returns
  // false to keep the term.
  bool rewrite(const Expr& a, int64_t c, bool divisions, Poly* out) {
    if (a.is_var() && a.var_id() != 0) {
      auto it = ctx_.vars.find(a.var_id());
      if (it == ctx_.vars.end()) return false;
      const Expr& end = c > 0 ? it->second.hi : it->second.lo;
      if (!end.defined()) return false;
      *out = add(std::move(*out), mul(constant(c), to_poly(end)), 1);
      return true;
    }
    const bool floor = a.kind() == ExprKind::kFloorDiv;
    if (!divisions || (!floor && a.kind() != ExprKind::kCeilDiv)) return false;
    const int64_t k = a.b().is_const() ? a.b().int_value() : 0;
    if (k <= 0 || c % k != 0) return false;
    const int64_t q = c / k;
    // k * (x // k) = x - x % k;  k * ceildiv(x, k) = x + (-x) % k.
    const Expr remainder = floormod(floor ? a.a() : neg(a.a()), a.b());
    *out = add(std::move(*out), mul(constant(q), to_poly(a.a())), 1);
    add_term(out, {remainder}, floor ? checked_mul(q, -1) : q);
    return true;
  }

  // Step 2: the constant interval of an integer expression.
  Interval interval(const Expr& e, int depth) {
    if (depth > kMaxDepth) return {};
    switch (e.kind()) {
      case ExprKind::kIntImm: return {e.int_value(), e.int_value()};
      case ExprKind::kVar: {
        if (e.var_id() == 0) {
          return ctx_.nonneg_symbols.count(e.var_name()) ? Interval{0, std::nullopt} : Interval{};
        }
        auto it = ctx_.vars.find(e.var_id());
        if (it == ctx_.vars.end()) return {};
        Interval r;
        if (it->second.lo.defined()) r.lo = interval(it->second.lo, depth + 1).lo;
        if (it->second.hi.defined()) r.hi = interval(it->second.hi, depth + 1).hi;
        return r;
      }
      case ExprKind::kCast: {
        const Expr& v = e.as<CastNode>()->value;
        const bool signed_ints =
            v.dtype().code == DataType::kInt && e.dtype().code == DataType::kInt;
        return signed_ints ? interval(v, depth + 1) : Interval{};
      }
      default: break;
    }
    if (e.as<BinaryNode>() == nullptr || e.dtype().code != DataType::kInt) return {};
    const Interval x = interval(e.a(), depth + 1), y = interval(e.b(), depth + 1);
    const int64_t k = e.b().is_const() ? e.b().int_value() : 0;
    auto each = [&x](int64_t (*f)(int64_t, int64_t), int64_t k) {
      return Interval{x.lo ? Bound(f(*x.lo, k)) : std::nullopt,
                      x.hi ? Bound(f(*x.hi, k)) : std::nullopt};
    };
    switch (e.kind()) {
      case ExprKind::kAdd: return {bound_add(x.lo, y.lo), bound_add(x.hi, y.hi)};
      case ExprKind::kSub: return {bound_add(x.lo, bound_neg(y.hi)), bound_add(x.hi, bound_neg(y.lo))};
      case ExprKind::kMul: return interval_mul(x, y);
      case ExprKind::kFloorDiv: return k > 0 ? each(floordiv_int, k) : Interval{};
      case ExprKind::kCeilDiv: return k > 0 ? each(ceildiv_int, k) : Interval{};
      case ExprKind::kFloorMod:
        if (k <= 0) return {};
        if (x.lo && *x.lo >= 0 && x.hi && *x.hi < k) return x;
        return {0, k - 1};
      case ExprKind::kMin:
        return {x.lo && y.lo ? Bound(std::min(*x.lo, *y.lo)) : std::nullopt,
                x.hi && y.hi ? Bound(std::min(*x.hi, *y.hi)) : (x.hi ? x.hi : y.hi)};
      case ExprKind::kMax:
        return {x.lo && y.lo ? Bound(std::max(*x.lo, *y.lo)) : (x.lo ? x.lo : y.lo),
                x.hi && y.hi ? Bound(std::max(*x.hi, *y.hi)) : std::nullopt};
      default: return {};
    }
  }

  const ProofContext& ctx_;
};

}  // namespace

std::optional<bool> prove(const Expr& cond, const ProofContext& ctx) {
  if (!cond.defined()) return std::nullopt;
  try {
    return Prover(ctx).decide(cond);
  } catch (const CoefficientOverflow&) {
    return std::nullopt;  // a bound beyond int64: nothing proven
  }
}

}  // namespace tilejit::ir
