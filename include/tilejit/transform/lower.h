// lower: the target-neutral passes of a tile program, in order.
//
// Note [The lowering pipeline]
// A tile-IR PrimFunc reaches a target's printer through two lists of
// passes, each in one function, in the order they run (as Halide's
// Lower.cpp lists its own):
//
//  1. transform::lower (here), on every target:
//       verify                    the IR is well formed (verify.h)
//       hoist_allocations         a loop's T.alloc_shared is the kernel's
//       hoist_shuffles            warp shuffles out of divergent branches
//       predicate                 partial tiles guarded, proven guards folded
//       fold_conditions           conditions the ranges decide, folded
//       split_uniform_conditions  per-block conditions split out of nests
//       select_layouts            each tile's storage for the target
//  2. the target's per-kernel lowering: cuda::lower_kernel
//     (src/backend/cuda/lower_kernel.h) for CUDA, where layouts, thread
//     groups, pipelines, TMA, shared memory and warp specialisation are
//     decided and reported; the CPU target prints after step 1.
//
// Every pass takes and returns a PrimFunc (or, in step 2, a plan of the
// kernel that the printer reads and does not change).
#pragma once

#include "tilejit/ir/prim_func.h"
#include "tilejit/transform/layout_select.h"

namespace tilejit::transform {

/// `func` (a tile-IR PrimFunc whose workspaces plan_workspaces made
/// parameters) through the target-neutral passes of Note [The lowering
/// pipeline], ready for `target`'s lowering. Throws what the passes throw (a
/// ValueError at the user's line for a malformed program); an InternalError
/// for a tile body without a kernel; a ValueError for a T.alloc_global that
/// plan_workspaces did not make a parameter of.
ir::PrimFunc lower(const ir::PrimFunc& func, LayoutTarget target);

}  // namespace tilejit::transform
