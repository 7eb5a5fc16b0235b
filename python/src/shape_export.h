// Kernel.shape_program: the call plan's shape logic as plain Python data,
// for code that must compute a call's output shapes without calling it
// (tilejit.torch's fake implementation, over torch's symbolic integers).
//
// Note [Shape program in Python]
// The dict mirrors the CallPlan (Note [Call plan] in call_plan.h), nothing
// re-derived:
//   symbols:    the symbol names, in slot order;
//   inputs:     per input in call order: name, scalar (bool), dtype (the
//               DataType name), dims (per dimension its static extent, or
//               None when symbolic; [] for a scalar);
//   bindings:   per symbol, where the call reads it: symbol, input, dim
//               (None: the input is the scalar itself), coeff and offset
//               (the dimension is coeff * symbol + offset);
//   checks:     the input dimensions that must equal a computed value
//               (a symbol bound by an earlier dimension, or an expression):
//               input, dim, value;
//   outputs, workspaces: per buffer in out_idx / workspace order: name,
//               dtype, shape (one value per dimension).
// A value is an expression tree read back from the compiled ShapeProgram:
// an int (a constant), a str (a symbol), or a tuple (op, a, b) with op one of
// "add", "sub", "mul", "floordiv", "floormod", "ceildiv", "min", "max" and
// a, b values again. floordiv and floormod round towards negative infinity
// (Python's // and %); a quotient by zero fails the call.
#pragma once

#include <nanobind/nanobind.h>

#include "tilejit/jit/kernel.h"

namespace tilejit::python {

/// Note [Shape program in Python]; built on each access (not on a call path).
nanobind::dict shape_program_dict(const Kernel& kernel);

}  // namespace tilejit::python
