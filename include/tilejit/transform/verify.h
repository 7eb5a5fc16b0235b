// verify: checks and normalises a tile body.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// Checks the tile body of `func` and returns it normalised: every Region
/// operand resolved to a full slice (Note [Region operands]; a start corner
/// takes its extents from the other operand). Checks: scopes (tile ops
/// between the scopes each op allows, allocations inside kernels), dtypes
/// (integer indices, bool conditions), copy / gemm / reduce shape agreement,
/// regions inside their buffers when the bounds are static, and the indices
/// of loads and stores of tile buffers inside their dimensions (constant
/// ones here, those affine in loop variables by check_index_bounds). Errors are
/// Errors whose message names the span, the op and the buffer (Note
/// [Diagnostics], tile_builder.h). A source body is returned unchanged.
ir::PrimFunc verify(const ir::PrimFunc& func);

}  // namespace tilejit::transform
