// The nanobind face of the tile-IR builder (ir_builder.cpp).
#pragma once

#include <nanobind/nanobind.h>

#include "tilejit/ir/expr.h"

namespace tilejit::python {

/// Adds the tile-IR operators to the Expr class (floats, comparisons, logic,
/// casts, Load properties). Called by bind_ir after the integer operators.
void bind_expr_ops(nanobind::class_<ir::Expr>& cls);

/// Binds Buffer, Region, TileBuilder and the expression helpers into `m`.
void bind_ir_builder(nanobind::module_& m);

}  // namespace tilejit::python
