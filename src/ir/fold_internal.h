// Constant folding of binary nodes (fold.cpp), for make_binary and
// evaluate() in expr.cpp. Private to src/ir.
#pragma once

#include "tilejit/ir/expr.h"

namespace tilejit::ir::fold_detail {

/// floordiv, floormod and ceildiv: integer operands, a nonzero divisor.
bool is_division(ExprKind kind);

/// The constant a binary node `e` (just built by make_binary, constant
/// adoption done) folds to, or an undefined Expr when it does not fold.
/// `operand_type` is promote() of its operands' dtypes. Throws ValueError on
/// an int64 overflow (Note [Integer semantics] in expr.cpp). The caller has
/// rejected a constant zero divisor.
Expr fold_binary(const Expr& e, DataType operand_type);

}  // namespace tilejit::ir::fold_detail
