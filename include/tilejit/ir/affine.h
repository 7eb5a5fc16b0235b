// Affine forms of integer index expressions and their exact ranges.
//
// Note [Exact affine ranges]
// An expression c + sum(k_v * v) in which each variable appears once, with
// every variable ranging over its own interval independently of the others
// (the constant bounds of nested loops), takes its least and greatest values
// at corners of that box: k_v * lo_v or k_v * hi_v by the sign of k_v. Both
// are attained, so the interval affine_range() returns is exact, not an
// over-approximation: a value outside a buffer's dimension in it is a value
// some iteration really computes. That is what lets a compile-time check
// reject an access on it without false positives. Anything that is not
// affine (products of variables, divisions, min / max, loads, symbols) has no
// form here, and a check then says nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "tilejit/ir/expr.h"

namespace tilejit::ir {

/// constant + sum of coeff * variable over IR variables (by id, Note
/// [Variables] in expr.h). Invariant: no coefficient is zero.
struct LinearForm {
  int64_t constant = 0;
  std::map<uint64_t, int64_t> terms;
};

/// A closed interval [lo, hi] of int64; empty when lo > hi.
struct IntRange {
  int64_t lo = 0;
  int64_t hi = -1;
  bool empty() const noexcept { return lo > hi; }
};

/// `e` as a LinearForm: integer constants, IR variables, +, -, and * where
/// one side is constant, and casts that widen a signed integer (the value is
/// unchanged). `lookup` gives an IR variable's own form (a let's value) or
/// nullptr to keep the variable as a term. False for anything else (a
/// symbol, a product of variables, a division, a load, ...) and where a
/// coefficient would overflow int64.
bool as_affine(const Expr& e, const std::function<const LinearForm*(uint64_t)>& lookup,
               LinearForm* out);

/// The exact range of `a` over the box `ranges` (Note [Exact affine ranges]):
/// false when a variable of `a` has no range, when a range is empty, or
/// where a bound overflows int64.
bool affine_range(const LinearForm& a, const std::map<uint64_t, IntRange>& ranges,
                  IntRange* out);

/// For a comparison `a OP b` (<, <=, >, >=, ==, !=) of affine forms, a - b
/// as a LinearForm (zero terms dropped); false for any other condition, a
/// side that is not affine, or an overflow. `lookup` is as_affine's.
bool comparison_difference(const Expr& cond,
                           const std::function<const LinearForm*(uint64_t)>& lookup,
                           LinearForm* out);

}  // namespace tilejit::ir
