// The CUDA lowering of one T.Kernel: the passes of step 2 of Note [The
// lowering pipeline] (tilejit/transform/lower.h), in order. The printer
// (tile_unit.cpp, tile_codegen.h) prints what they decided and decides
// nothing of its own about layouts, pipelines, TMA, shared memory or the
// split into producer and consumers.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "backend/cuda/cluster_multicast.h"
#include "backend/cuda/coarse_k_steps.h"
#include "backend/cuda/infer_layouts.h"
#include "backend/cuda/pipeline.h"
#include "backend/cuda/smem_plan.h"
#include "backend/cuda/staged_epilogue.h"
#include "backend/cuda/tma_copies.h"
#include "backend/cuda/warp_specialize.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/runtime/lowering_report.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cuda {

/// What the target allows the lowering of a kernel.
struct KernelTarget {
  bool warpgroups = false;       ///< sm_90a: wgmma (Note [Warpgroup gemms])
  bool tma = false;              ///< TMA loads and stores (Note [TMA copies])
  bool warp_specialize = false;  ///< a producer warpgroup (Note [Warp specialisation])
  bool cluster = false;          ///< pairs of blocks (Note [Cluster multicast])
  bool coarse_k_steps = false;   ///< Note [Coarser K steps]
  bool staged_epilogue = false;  ///< Note [Staged epilogues]
};

/// One kernel, lowered: the PrimFunc with every buffer in its layout, and
/// the plans the printer follows.
struct LoweredKernel {
  LaidOutKernel laid_out;  ///< Note [Layouts]: `laid_out.kernel` is the kernel
  int threads = 0;         ///< the kernel's own threads (T.Kernel's)
  transform::ThreadUniformity uniformity;
  PipelinePlan pipelines;
  TmaPlan tma;
  SmemPlan tiles;
  WarpSpecialization ws;
  ClusterPlan cluster;
  /// Note [Coarser K steps]: `laid_out` is the wider loop's when factor > 1.
  CoarseKSteps coarse;
  /// Note [Staged epilogues].
  StagedEpilogue epilogue;
  /// Note [Alternating reduction scratch]: 1 or 2.
  int scratch_copies = 1;
  /// Note [Copies inside their tensor]: no edge walk for these.
  std::set<const ir::CopyOp*> inside_copies;
};

/// Kernel `index` of `f` (as transform::lower returns it), run by `threads`
/// threads, through:
///   thread_uniformity (of the row-major kernel: which buffers thread ranges touch)
///   infer_layouts             a register layout for every fragment, shared layouts
///   thread_uniformity         of the laid-out kernel
///   plan_pipelines, fit_pipelines   the T.Pipelined loops' stages, within shared memory
///   plan_tma                  the prefetches TMA performs (their tensor maps to `maps`)
///   plan_tiles                the shared tiles' offsets and aliases
///   scratch_copies            one reduction scratch or two in turn
///   plan_warp_specialization  the producer warpgroup and the consumers
///   plan_cluster              pairs of blocks that share tiles (their maps to `maps`)
///   copies_inside             the copies proven inside their tensors
///   coarsen_k_steps           a GEMM main loop's short K steps, two per stage,
///                             and the passes above again on the wider loop
///   stage_epilogue            its accumulator's store through a shared tile,
///                             and the passes above again
///   report_kernel             the lowering report's entries, appended to `report`
/// What the pipelines' planner warns of goes to `diagnostics`.
LoweredKernel lower_kernel(const ir::PrimFunc& f, size_t index, int threads,
                           const std::vector<std::string>& symbols, const KernelTarget& target,
                           TensorMaps* maps, std::vector<runtime::Diagnostic>* diagnostics,
                           runtime::LoweringReport* report);

}  // namespace tilejit::cuda
