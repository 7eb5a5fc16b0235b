// T.Pipelined(num_stages=S) on the GPU: the loop's tile loads become a ring
// of S shared-memory stages filled by cp.async ahead of the compute.
//
// Note [Software pipelining]
// In a T.Pipelined loop with S >= 2 stages, a "prefetched copy" is a T.copy
// at the top level of the loop's body (macros inlined) from a global tensor
// into a whole shared buffer that nothing else in the kernel writes or
// reads outside the loop, whose source region depends on no variable the
// body itself defines. Each such buffer gets S stages; the loop is emitted
// as
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
#pragma once

#include <map>
#include <vector>

#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

struct PipelinePlan {
  /// Each pipelined loop's prefetched copies, in program order.
  std::map<const ir::ForStmt*, std::vector<const ir::CopyOp*>> loops;
  /// Each prefetched buffer's stage count.
  std::map<uint64_t, int> stages;
};

PipelinePlan plan_pipelines(const ir::KernelStmt& kernel);

/// The top-level statements of `body`, nested sequences flattened.
std::vector<ir::Stmt> flatten(const ir::Stmt& body);

}  // namespace tilejit::cuda
