// TileLang's T.Pipelined(order=, stage=, group=) on a warp-specialised loop.
//
// Note [Scheduled pipelines]
// T.Pipelined(n, num_stages=2, order=[-1, 0, 3, 1, -1, 2],
// stage=[-1, 0, 0, 1, -1, 1], group=[[0], [1, 2], [3..10], [11], [12],
// [13]]) is flash attention's schedule from TileLang's
// example_mha_fwd_bshd_wgmma_pipelined.py: the body's statements in six
// groups; the two of stage -1 are the prefetched copies of K and V (the
// producer warpgroup's, Note [Warp specialisation]); iteration t of the
// consumers runs the gemm Q K^T of t (order 0), the rescale and the gemm
// P V of t - 1 (stage 1, orders 1 and 2), then the softmax of t (order 3).
// The loop becomes
//
//   if (n > 0) {
//     the stage-0 groups of iteration 0, in order     (prologue)
//     for t in [1, n): every group, in order, a stage-s group for t - s
//     the stage-1 groups of iteration n - 1, in order (epilogue)
//   }
//
// (one stage behind at most). A group's statements see the loop variable
// and the stages of their own iteration. Each stage's "landed" barrier is
// waited for before the first group that reads it, in the order, and its
// "free" barrier arrived at after the last one.
//
// The reordering keeps the program's meaning, or is refused: for every two
// groups whose accesses conflict (one writes a buffer the other reads or
// writes; the prefetched stages, which the barriers order, aside), and
// for the same iteration or consecutive ones, the schedule must run them in
// program order. The gemms of a scheduled loop are left running until a
// statement touches their registers (Note [Gemms left running] in
// tile_codegen.h), so flash attention's softmax of t runs while the gemm
// P V of t - 1 does, as FlashAttention-3's intra-warpgroup overlap.
//
// A schedule that cannot be applied (a loop not warp-specialised, a stage
// past 1, copies and compute in one group, a reordering that changes the
// meaning) leaves the loop in program order, which is what the program
// computes, and the lowering report's T.Pipelined entry says why.
//
// Note [Inferred schedules]
// A T.Pipelined loop without order/stage whose consumers' body is flash
// attention's (TileLang's example_mha_fwd_bshd.py as written: gemms into a
// score tile, statements that read it, a run of statements that write only
// the output accumulator O, and last a gemm that accumulates into O) gets
// the schedule the pipelined example spells out by hand: the first part of
// iteration t (through its last gemm before the final one) at order 0, the
// run into O and the final gemm for t - 1 at orders 1 and 2, the rest of t
// (the softmax) at order 3. It goes through the same check as a written
// schedule; where the check refuses it the loop keeps program order, which
// is what the program asked for, and the report says why. It is inferred only where it
// pays (measured on the H200, pipeline_schedule.cpp): gemms of 256
// multiply-adds or more per score (head dim 128: 601 TFLOP/s against 558
// in program order, 1.00x cuDNN; head dim 64 loses 3-7%), loops of 16
// iterations or more and bodies without a branch (the prologue and epilogue
// repeat part of the body, which NVRTC compiles again: a first call's
// time). The lowering report's T.Pipelined path says "scheduled
// (inferred)".
#pragma once

#include <set>
#include <string>
#include <vector>

#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

struct ScheduledGroup {
  int stage = 0;               ///< 0: this iteration; 1: the one before
  std::vector<size_t> stmts;   ///< indices into the loop's body without its prefetches
  /// The warp-specialised loop's copy groups (StageGroup indices) its
  /// statements read; set by plan_warp_specialization.
  std::set<size_t> stages_read;
};

struct PipelineScheduling {
  /// The groups that are not prefetches, in their order; empty: program order.
  std::vector<ScheduledGroup> groups;
  /// Why the loop's T.Pipelined schedule (written or inferred) is not
  /// applied; empty when it is or there is none.
  std::string refused;
};

/// How a refusal of a written schedule, and of an inferred one, begins.
inline constexpr const char* kNotApplied = "order/stage not applied";
inline constexpr const char* kNotInferred = "FlashAttention-3's order not inferred";

/// Note [Scheduled pipelines]: `sched` (the loop's T.Pipelined schedule, or
/// an inferred one) for a loop whose body without its prefetched copies is
/// `body` (in program order) and whose flattened body is `all`; a refusal
/// reads "<refusal>: <why>".
PipelineScheduling plan_schedule(const ir::PipelineSchedule& sched,
                                 const std::vector<ir::Stmt>& all,
                                 const std::vector<ir::Stmt>& body,
                                 const std::vector<const ir::CopyOp*>& prefetched,
                                 const std::string& refusal);

struct InferredSchedule {
  ir::PipelineSchedule schedule;  ///< empty: program order
  /// Why a body of flash attention's shape keeps program order; "" where
  /// the schedule is inferred or the body has another shape.
  std::string declined;
};

/// Note [Inferred schedules]: FlashAttention-3's schedule for `loop`, whose
/// flattened body is `all`, where it has that shape and the schedule pays.
InferredSchedule infer_schedule(const ir::ForStmt& loop, const std::vector<ir::Stmt>& all,
                                const std::vector<const ir::CopyOp*>& prefetched);

}  // namespace tilejit::cuda
