// The shared memory of a CUDA tile kernel, decided before its code is
// written: every shared and fragment tile that is not in registers, with its
// padding (Notes [Padded gemm operands] and [Short accumulators]) and its pipeline stages (Note
// [Software pipelining]), placed by liveness (Note [Shared-memory liveness]),
// then the row reductions' scratch.
#pragma once

#include <cstdint>

#include "backend/cuda/fragments.h"
#include "backend/cuda/pipeline.h"
#include "backend/cuda/smem_plan.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

/// The elements a shared tile's allocation holds: its shape, or its shared
/// layout's rows of its pitch (padded gemm operands: fragments.h).
int64_t tile_elements(const ir::Buffer& b);

/// The bytes of one pipeline stage of a tile of `bytes`: whole 128-byte
/// lines, or 1024 for a swizzled tile (Note [Warpgroup gemms]).
int64_t stage_bytes(int64_t bytes, bool swizzled);

/// The shared memory the row reductions across warps of the register
/// fragments of `kernel` need, in whole 16-byte lines: one scratch's.
int64_t scratch_bytes(const ir::KernelStmt& kernel);

/// The row reductions in `body` whose warps meet in a scratch
/// (scratch_layout).
int scratch_reductions(const ir::Stmt& body);

/// Note [Alternating reduction scratch] (tile_memory.cpp): 2 where the row
/// reductions take two scratches in turn beside `tiles` (plan_tiles's), else 1.
int scratch_copies(const ir::KernelStmt& kernel, const SmemPlan& tiles);

/// Where each tile of `kernel` lies, and the bytes the block needs for them.
SmemPlan plan_tiles(const ir::KernelStmt& kernel, const PipelinePlan& pipelines);

/// The block's shared memory: the tiles, then the scratch.
int64_t planned_shared_bytes(const ir::KernelStmt& kernel, const PipelinePlan& pipelines);

/// Fewer stages (down to none) where the tiles would not fit with them
/// (Note [Fitting the stages] in tile_memory.cpp).
void fit_pipelines(const ir::KernelStmt& kernel, PipelinePlan& plan);

}  // namespace tilejit::cuda
