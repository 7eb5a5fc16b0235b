// Which T.copy of a CUDA kernel provably moves a rectangle inside its tensor.
//
// Note [Copies inside their tensor]
// copy.h serves a tile at a tensor's edge with a checked walk beside the
// unchecked one of the tiles inside it, chosen at run time. Inlined at
// every copy of a kernel, the checked walk costs code, NVRTC time and
// registers even where no tile ever reaches an edge, and it changes how
// ptxas schedules the main loop (flash attention, causal: 249 registers
// and 4.3 ms with the check out of line, 174 registers and 5.2 ms with it
// inline, on an H200). Where the ranges of the block indices, the loops and
// the lets prove that every tensor side of a copy lies inside its tensor
// (the same proofs transform::predicate makes for scalar accesses:
// `by * 128 + 127 < 1024` for a grid of 8), the copy is lowered with
// INSIDE = true and has the unchecked walk alone. A prefetched copy
// (pipeline.h) is the copy of a later iteration of the loop, which its
// guard keeps inside the loop's range, so it inherits the copy's verdict.
#pragma once

#include <set>

#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

/// The copies of `kernel` (in `func`, for its shape symbols) whose tensor
/// sides are proven inside their tensors.
std::set<const ir::CopyOp*> copies_inside(const ir::PrimFunc& func, const ir::KernelStmt& kernel);

}  // namespace tilejit::cuda
