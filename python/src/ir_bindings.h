// Bindings of the IR: Expr, PrimFunc, and make_prim_func() (ir_bindings.cpp).
#pragma once

#include <nanobind/nanobind.h>

namespace tilejit::python {

/// Binds Expr, the expression helpers and PrimFunc into `m`.
void bind_ir(nanobind::module_& m);

}  // namespace tilejit::python
