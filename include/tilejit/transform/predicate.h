// predicate: partial-tile predicates for the scalar accesses of tensors.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// Guards every scalar access of a global tensor in the tile body of `func`
/// (a verified PrimFunc) so that no element outside the tensor is touched,
/// as TileLang's LegalizeSafeMemoryAccess does:
///  - a store `C[i, j] = v` becomes `if (0 <= i < C.shape[0] && ...) C[i, j] = v`;
///  - a load `A[i, j]` becomes `select(0 <= i < A.shape[0] && ..., A[i, j], 0)`.
/// A bound is left out when it is proven: by constant ranges of block and
/// loop variables and of lets (an index of [0, 127] in a dimension of 128),
/// by the symbols of shapes being non-negative, or by a condition already in
/// force (an enclosing `if` of the same comparison, or the store's own guard
/// for the loads of its value). A tile op's regions are left as they are
/// (each op checks its own bounds in the target's lowering), but loads in
/// the expressions of its operands (a gather's row `KV[Idx[i], :]`, a fill
/// value) are guarded as above. A source body is returned unchanged.
ir::PrimFunc predicate(const ir::PrimFunc& func);

}  // namespace tilejit::transform
