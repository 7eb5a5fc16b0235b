// T.Pipelined(num_stages=S) on the GPU: the loop's tile loads become a ring
// of S shared-memory stages filled by cp.async ahead of the compute.
//
// Note [Software pipelining]
// In a T.Pipelined loop with S >= 2 stages, a "prefetched copy" is a T.copy
// at the top level of the loop's body (macros inlined) from a global tensor
// into a whole shared buffer that nothing else in the kernel writes or
// reads outside the loop, whose source region the prefetch can compute
// ahead (Note [Prefetched addresses]). Each such buffer gets S stages; the
// loop is emitted as
//
//   for s in [0, S - 1): if (lo + s < end) copies of iteration lo + s
//                        into stage s; commit                  (the prologue)
//   for k in [lo, end):
//     wait until iteration k's group has landed; barrier
//     if (k + S - 1 < end) copies of iteration k + S - 1 into stage
//     (k - lo + S - 1) % S; commit
//     the rest of the body, reading stage (k - lo) % S
//
// The barrier at the top of iteration k also orders the previous
// iteration's reads of the stage the new copies overwrite. The body's own
// barriers do not wait for the prefetches (only for cp.async copies the
// body itself issued), so the loads of iterations k + 1 .. k + S - 1
// overlap the compute of iteration k.
//
// Note [Prefetched addresses]
// The prefetch issues iteration j's copy (j = k + S - 1, or lo + s in the
// prologue) before iteration j runs, so every value its source region
// reads must be known there with the value it will have at the copy in
// iteration j. The planner proves it for each value the region reads:
//  - the loop variable: the prefetch binds it to j;
//  - variables defined outside the loop (block and thread indices,
//    symbols, outer loops and lets), loads of global tensors the kernel
//    never writes, and loads of other buffers declared outside the loop
//    that the loop never writes: the same in every iteration;
//  - a let at the loop's top level before the copy: its value, recomputed
//    (TileLang does the same);
//  - a load of a local buffer's element (constant indices) whose last
//    write before the copy is a store of that element at the loop's top
//    level, with no other write of the buffer between the two: the stored
//    value (converted to the buffer's dtype), recomputed.
// A recomputed value must itself pass, at its own statement. The prefetch
// then issues the copy with the region rewritten, `blk[0] = Idx[k]; T.copy(
// A[blk[0] * 64, 0], A_s)` prefetching A[Idx[j] * 64, 0] under the
// prefetch's guard j < end. A copy whose region reads anything else (a
// store under a condition, a tensor the kernel writes, a shared tile the
// loop fills) is not prefetched: it stays a synchronous copy in the body,
// and the plan carries a Diagnostic at the copy's line naming the buffer
// (or variable) whose write prevents it.
#pragma once

#include <map>
#include <vector>

#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/diagnostic.h"

namespace tilejit::cuda {

struct PipelinePlan {
  /// Each pipelined loop's prefetched copies, in program order.
  std::map<const ir::ForStmt*, std::vector<const ir::CopyOp*>> loops;
  /// Each prefetched buffer's stage count.
  std::map<uint64_t, int> stages;
  /// The copy each prefetched copy whose region reads values computed in
  /// the loop issues instead (Note [Prefetched addresses]); absent: the
  /// copy itself.
  std::map<const ir::CopyOp*, ir::Stmt> ahead;
  /// The copies of pipelined loops left synchronous, and why, in program
  /// order.
  std::vector<runtime::Diagnostic> diagnostics;
  /// The copy the prefetch of `copy` issues (Note [Prefetched addresses]):
  /// ahead's, or `copy` itself.
  const ir::CopyOp& issued(const ir::CopyOp* copy) const {
    const auto it = ahead.find(copy);
    return it == ahead.end() ? *copy : *it->second.as<ir::CopyOp>();
  }
};

PipelinePlan plan_pipelines(const ir::KernelStmt& kernel);

/// The top-level statements of `body`, nested sequences flattened.
std::vector<ir::Stmt> flatten(const ir::Stmt& body);

}  // namespace tilejit::cuda
