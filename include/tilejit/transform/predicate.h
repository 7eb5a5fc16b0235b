// predicate: partial-tile predicates for the scalar accesses of tensors, and
// the user's guards that the ranges prove folded away.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// Guards every scalar access of a global tensor in the tile body of `func`
/// (a verified PrimFunc) so that no element outside the tensor is touched,
/// as TileLang's LegalizeSafeMemoryAccess does:
///  - a store `C[i, j] = v` becomes `if (0 <= i < C.shape[0] && ...) C[i, j] = v`;
///  - a load `A[i, j]` becomes `select(0 <= i < A.shape[0] && ..., A[i, j], 0)`.
/// A bound is left out when it is proven (ir::prove): by the ranges of
/// block, thread and loop variables and of lets (an index of [0, 127] in a
/// dimension of 128; bx * 128 + i in a dimension n with a grid of n // 128),
/// by the symbols of shapes being non-negative, or by a condition already in
/// force (an enclosing `if` of the same comparison, or the store's own guard
/// for the loads of its value).
///
/// The user's own `if` is folded the same way (Note [Folded guards]): one
/// whose condition always holds becomes its then-branch, one that never
/// holds its else-branch or nothing, and the parts of a conjunction that
/// always hold leave its condition. A tile op's regions are left as they are
/// (each op checks its own bounds in the target's lowering), but loads in
/// the expressions of its operands (a gather's row `KV[Idx[i], :]`, a fill
/// value) are guarded as above. A source body is returned unchanged.
ir::PrimFunc predicate(const ir::PrimFunc& func);

}  // namespace tilejit::transform
