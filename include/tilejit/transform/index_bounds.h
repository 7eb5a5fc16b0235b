// index_bounds: loads and stores of tile buffers whose index provably leaves
// its dimension.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// Checks every load and store of a shared, fragment or local buffer in the
/// tile body of `func` whose index in a dimension of constant extent is
/// affine in loop variables of constant bounds (T.Parallel, T.serial,
/// T.unroll, ... with constant min and extent, nested, narrowed by the
/// conditions of the ifs around the access): a ValueError at the access's
/// statement ("<span>: store: index i takes the values 0 to 63, but
/// dimension 0 of f [32] has extent 32") when some iteration computes an
/// index outside [0, extent). Accesses it cannot decide pass (Note [Index
/// bounds] in index_bounds.cpp); a source body passes. verify() runs it.
void check_index_bounds(const ir::PrimFunc& func);

}  // namespace tilejit::transform
