// workspace_plan: T.alloc_global buffers become workspaces of the call.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// Gives every T.alloc_global buffer of a tile body a place in the signature,
/// so that the call plan leases it like a declared workspace: buffer i of
/// TileBody::globals becomes a trailing tensor parameter of its name, shape
/// (over the kernel's symbols) and dtype, recorded in TileBody::global_params
/// (its index); build_call_plan makes each a workspace slot with the buffer's
/// init policy, in the same arena as the workspace_idx parameters and after
/// them, and Kernel::workspace_bytes() / workspace_layout() list it. The
/// appended parameters are never inputs or outputs: out_idx and
/// workspace_idx are legalised against the author's signature first.
/// A source body, or a tile body without globals, is returned unchanged.
/// Throws ValueError when a global has the name of a parameter (or of another
/// global), naming both and the span.
ir::PrimFunc plan_workspaces(const ir::PrimFunc& func);

}  // namespace tilejit::transform
