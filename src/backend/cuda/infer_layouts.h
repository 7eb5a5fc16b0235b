// infer_layouts: the CUDA backend's layout pass (Note [Layouts] in
// tilejit/ir/layout.h). It chooses where each tile of one kernel lives
// (choose_fragments, fragments.h: registers, padded or swizzled shared
// tiles) and writes the choice into the IR: every later step of the
// lowering reads a buffer's layout from the buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/fragments.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/diagnostic.h"

namespace tilejit::cuda {

/// The kernel of a function whose tiles carry their CUDA layouts, and what
/// the lowering report says of the choices.
struct LaidOutKernel {
  ir::PrimFunc func;
  /// The kernel, in `func`.
  const ir::KernelStmt* kernel = nullptr;
  LayoutReasons reasons;
};

/// Kernel `index` of `f` (as select_layouts leaves it: every tile row-major)
/// with each register fragment in its FragmentLayout, each padded or
/// swizzled shared tile in its SharedLayout and each local buffer local,
/// run with `threads` threads. `in_groups` and `warpgroups` are
/// choose_fragments'.
LaidOutKernel infer_layouts(const ir::PrimFunc& f, size_t index, int threads,
                            const std::set<uint64_t>& in_groups, bool warpgroups);

/// The tiles (shared, fragment and local buffers) a kernel allocates, in
/// the order of their allocations.
std::vector<ir::Buffer> kernel_tiles(const ir::KernelStmt& kernel);

}  // namespace tilejit::cuda
