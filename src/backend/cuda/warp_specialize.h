// Warp specialisation of a pipelined loop whose tiles TMA loads.
//
// Note [Warp specialisation]
// On sm_90a, a kernel whose one pipelined loop prefetches all its tiles
// through TMA (Note [TMA copies]) runs with a producer warpgroup beside its
// threads: the block is launched with threads + 128 threads, and threads
// [threads, threads + 128) do nothing but issue the loop's TMA copies, so
// that the kernel's own threads (the consumers) never stop at a barrier for
// a load. As TileLang and FlashAttention-3 do:
//
//   before the body: thread 0 initialises, per group of TMA copies
//     (StageGroup: those the body first reads at one statement) and stage, a
//     "landed" mbarrier (1 arrival plus the tile's bytes) and a "free" one
//     (an arrival from each consumer); a block barrier;
//   the producer: setmaxnreg.dec to kProducerRegisters; one thread runs the
//     loop's iterations: for each copy, wait until the stage is free (the
//     consumers read it S iterations ago; parity ^ 1 passes at once the
//     first time), expect_tx on its landed barrier, the TMA instructions;
//     then the producer's threads leave the kernel;
//   the consumers: setmaxnreg.inc to the registers the producer gave up
//     (the block's share of the register file at `blocks` blocks per
//     multiprocessor, the most that shared memory allows while the
//     consumers keep room for their register fragments and 64 more),
//     then the kernel's body, whose pipelined loop has no prologue and no
//     barrier at its top: each copy's stage is waited for (landed) before
//     the first statement that reads it and handed back (free) after the
//     last one. Every barrier of the consumers is `bar.sync 0, threads`, so
//     the producer never takes part in one (tile.h's block_sync, also inside
//     the device library's reductions).
//   a GEMM's main loop (the consumers' body is one wgmma gemm from shared
//     tiles, which reads every stage): the gemm of iteration k is committed
//     and left running; the consumers wait until only it runs, which means
//     the gemm of k - 1 has read its stage, and hand that stage back. So the
//     tensor cores are never idle between iterations (CUTLASS's mainloop
//     keeps its gemms in flight so); the loop's last gemm is waited for
//     after it. A stage then comes back one gemm later, so the loads run one
//     stage less ahead: it is done only where the stages left cover a load
//     (a gemm of 2 x 128 x 256 x 64 flops per iteration times the stages
//     past 2, kInFlightFlops). The report's path says "gemm kept in flight".
//
// The planner (plan_warp_specialization) takes a kernel only where that
// split is the program's meaning:
//  - sm_90a with TMA and warp specialisation on (TileLang's
//    tl.disable_warp_specialized turns it off), whole warpgroups of threads
//    and at most 896 of them;
//  - exactly one T.Pipelined loop prefetches, every one of its prefetches
//    is a TMA copy, and the loop is a statement of the kernel's body (not
//    inside another loop or a branch), so it runs once per block;
//  - the producer can compute the loop's bounds and every copy's region
//    (as prefetched, Note [Prefetched addresses]) on its own: they read only
//    the loop variable, the block indices, the symbols, constants and
//    tensors the kernel never writes;
//  - no tile the body uses before the loop shares bytes with the stages,
//    which the producer fills from the block's start.
// Otherwise the loop keeps the prefetch of Note [Software pipelining], and
// the lowering report's T.Pipelined entry says why.
#pragma once

#include <string>
#include <vector>

#include "backend/cuda/pipeline.h"
#include "backend/cuda/pipeline_schedule.h"
#include "backend/cuda/smem_plan.h"
#include "backend/cuda/tma_copies.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cuda {

/// Copies that the consumers first read at one statement of the loop's body
/// share a pair of barriers per stage: they wait once for all of them, and
/// hand them back after the last statement that reads any.
struct StageGroup {
  std::vector<const ir::CopyOp*> copies;  ///< in program order
  /// The statements of the body (its copies left out) before which the
  /// group is waited for and after which it is handed back; body.size()
  /// for a group no statement reads (both at the end).
  size_t first = 0, last = 0;
  int64_t bytes = 0;  ///< what the landed barrier waits for
};

struct WarpSpecialization {
  static constexpr int kProducerThreads = 128;
  static constexpr int kProducerRegisters = 24;
  /// The warp-specialised loop; null when none.
  const ir::ForStmt* loop = nullptr;
  /// The blocks a multiprocessor holds at once, __launch_bounds__'s second
  /// argument.
  int blocks = 1;
  /// The consumers' registers per thread after setmaxnreg.
  int consumer_registers = 0;
  /// The loop's body without its prefetched copies, and their groups.
  std::vector<ir::Stmt> body;
  std::vector<StageGroup> groups;
  /// The body is one wgmma gemm from the stages, left running across
  /// iterations (above).
  bool gemm_in_flight = false;
  /// Note [Scheduled pipelines]: the loop's T.Pipelined(order=, stage=,
  /// group=), applied when schedule.groups is not empty.
  PipelineScheduling schedule;
  /// Note [Warpgroup ping-pong]: the scheduled loop's two consumer
  /// warpgroups take turns at issuing their gemms.
  bool pingpong = false;
  /// Why the kernel's TMA loop is not warp-specialised (empty when it is,
  /// or when no loop has TMA copies).
  std::string refused;
  /// The block's threads at launch.
  int launch_threads(int threads) const { return loop ? threads + kProducerThreads : threads; }
};

/// Note [Warp specialisation] for `kernel`, run by `threads` threads;
/// `enabled`: the target is sm_90a and warp specialisation is not off.
WarpSpecialization plan_warp_specialization(const ir::KernelStmt& kernel,
                                            const std::vector<std::string>& symbols, int threads,
                                            const PipelinePlan& pipelines, const TmaPlan& tma,
                                            const SmemPlan& tiles,
                                            const transform::ThreadUniformity& uniformity,
                                            bool enabled);

}  // namespace tilejit::cuda
