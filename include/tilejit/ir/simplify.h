// The simplifier: canonical forms for shape expressions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tilejit/ir/expr.h"

namespace tilejit::ir {

/// Returns an equivalent expression in canonical form: constants folded,
/// identities applied (x + 0, x * 1, x * 0, x // 1, x % 1, ceildiv(x, 1),
/// min(x, x), max(x, x), x - x), like terms and constants combined
/// (s + s + 1 + 2 -> 2 * s + 3), exact divisions by constants resolved
/// ((4 * s) // 2 -> 2 * s, (4 * s) % 2 -> 0), and sums and products put in
/// a canonical order so that equal polynomials print the same:
/// products before constants, symbols in name order, a constant factor
/// first ("2 * s + 1", "b * s * 4" -> "4 * b * s").
Expr simplify(const Expr& e);

/// An expression of one symbol of the form coeff * var + offset (coeff != 0),
/// the kind of input dimension from which a symbol's value can be solved.
struct AffineForm {
  std::string var;
  int64_t coeff = 1;
  int64_t offset = 0;
};

/// Decomposes `e` (after simplification) into an AffineForm; false when `e`
/// is not affine in exactly one symbol (a constant, b * s, s // 2, ...).
bool as_single_var_affine(const Expr& e, AffineForm* out);

/// The values an IR variable takes: lo <= v <= hi, each end an integer
/// expression over symbols and other IR variables (`n // 128 - 1`), or
/// undefined where nothing is known.
struct VarRange {
  Expr lo, hi;
};

/// What prove() may assume: the ranges of IR variables by id (loop
/// variables, block and thread indices, lets), and the symbols that are
/// never negative (tensor dimensions).
struct ProofContext {
  std::map<uint64_t, VarRange> vars;
  std::set<std::string> nonneg_symbols;
};

/// Decides `cond` (a bool expression) for every value `ctx` allows: true
/// when it always holds, false when it never does, nullopt when neither is
/// proven (Note [Proving conditions] in simplify.cpp). Understands
/// comparisons of integer expressions and &&, || and ! over them; anything
/// else (a load, a float) is unknown. Sound, not complete: a nullopt says
/// nothing about the condition.
std::optional<bool> prove(const Expr& cond, const ProofContext& ctx);

}  // namespace tilejit::ir
