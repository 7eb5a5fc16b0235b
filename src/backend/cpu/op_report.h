// The CPU lowering's lowering report (tilejit/runtime/lowering_report.h):
// each tile on the block's stack or in the entry's arena, and each tile op's
// path through the CPU library (tilejit/cpu/copy.h, gemm.h): copies by rows
// or by elements, the gemm's float32 micro-kernel.
#pragma once

#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/lowering_report.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cpu {

/// The buffers `kernel` allocates and its tile ops, in program order,
/// appended to `report`; `uniformity` says which local buffers get a slot per
/// thread (Note [CPU lowering of tile IR]).
void report_kernel(const ir::KernelStmt& kernel, const transform::ThreadUniformity& uniformity,
                   runtime::LoweringReport* report);

}  // namespace tilejit::cpu
