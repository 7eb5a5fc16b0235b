// fold_conditions: comparisons that the loops' ranges decide, folded away.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// Note [Decided conditions] (fold_conditions.cpp): in the tile body of
/// `func`, a select (T.if_then_else) or an if whose condition compares two
/// affine expressions of loop, block and thread variables with constant
/// ranges, and that holds (or fails) over the whole box of those ranges,
/// becomes the branch that runs. `k * 128 + j >= 8192` with k in [0, 64) and
/// j in [0, 128) is false everywhere, so flash attention's key mask of a
/// sequence that is a whole number of blocks costs nothing per element.
ir::PrimFunc fold_conditions(const ir::PrimFunc& func);

}  // namespace tilejit::transform
