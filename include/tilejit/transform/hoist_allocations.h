// hoist_allocations: shared buffers allocated inside a loop, declared once at
// the top of their kernel.
//
// Note [Allocations are the kernel's]
// TileLang allocates every T.alloc_shared of a T.Kernel once for the whole
// kernel, wherever the program writes it (its blocks' alloc_buffers), so a
// shared tile allocated inside a loop is one tile that every iteration
// reuses, not a new one per iteration. tilejit's IR declares a buffer where
// its AllocStmt stands (Note [Declarations in a sequence]); this pass moves
// the AllocStmt of each shared buffer under a loop to the front of its
// kernel's body. Besides giving the program TileLang's meaning, it lets a
// software pipeline prefetch into such a tile: the prefetch of a later
// iteration, emitted before the loop, sees its declaration
// (TileLang's examples/gemv gemv_alloc_reducer allocates its tile inside its
// T.Pipelined loop). Fragments and locals stay where they are declared:
// registers are per iteration on every target, and a pipeline never
// prefetches into them.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// `func` with the shared allocations inside its loops moved to the front of
/// their kernels (Note [Allocations are the kernel's]); unchanged when it has
/// none.
ir::PrimFunc hoist_allocations(const ir::PrimFunc& func);

}  // namespace tilejit::transform
