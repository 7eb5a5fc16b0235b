// The CUDA lowering's lowering report (tilejit/runtime/lowering_report.h):
// each buffer's placement and each tile op's path, from the decisions the
// lowering made (fragments.h, pipeline.h, tile_memory.h) and the rules of
// the device library it calls (tilejit/cuda/copy.h, gemm.h), which choose
// between paths by the template arguments the lowering prints.
#pragma once

#include "backend/cuda/fragments.h"
#include "backend/cuda/pipeline.h"
#include "backend/cuda/tma_copies.h"
#include "backend/cuda/cluster_multicast.h"
#include "backend/cuda/coarse_k_steps.h"
#include "backend/cuda/staged_epilogue.h"
#include "backend/cuda/warp_specialize.h"
#include "tilejit/runtime/lowering_report.h"

namespace tilejit::cuda {

/// The path of the tile op `s`, run by `threads` threads (1: a thread's
/// own op, Note [Thread semantics]), its buffers laid out (infer_layouts.h),
/// with what `reasons` says of their layouts.
/// `prefetched`: a T.Pipelined loop's copy that a prologue issues ahead.
runtime::Diagnostic op_record(const ir::Stmt& s, const LayoutReasons& reasons, int threads,
                              bool prefetched);

/// The buffers the laid-out `kernel` (run by `threads` threads) allocates,
/// placed as their layouts and `pipelines` decided (and why, from `reasons`), and its T.Pipelined loops with the stages they kept (a loop's
/// stages dropped to fit shared memory, or a copy left synchronous, says
/// why), and each tile op's path (op_record; "tma_load" for the copies `tma`
/// performs, Note [TMA copies]; "warp_specialized" for the loop `ws`
/// splits, Note [Warp specialisation], or why a TMA loop is not;
/// "tma_load_multicast" and a "2-block cluster" for `cluster`'s, Note
/// [Cluster multicast]), in program order; appended to `report`.
void report_kernel(const ir::KernelStmt& kernel, int threads, const LayoutReasons& reasons,
                   const PipelinePlan& pipelines, const TmaPlan& tma,
                   const WarpSpecialization& ws, const ClusterPlan& cluster,
                   const CoarseKSteps& coarse, const StagedEpilogue& epilogue,
                   runtime::LoweringReport* report);

}  // namespace tilejit::cuda
