// Note [The lowering pipeline] in tilejit/transform/lower.h.
#include "tilejit/transform/lower.h"

#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/transform/fold_conditions.h"
#include "tilejit/transform/hoist_allocations.h"
#include "tilejit/transform/hoist_shuffles.h"
#include "tilejit/transform/predicate.h"
#include "tilejit/transform/split_uniform_conditions.h"
#include "tilejit/transform/verify.h"

namespace tilejit::transform {

ir::PrimFunc lower(const ir::PrimFunc& func, LayoutTarget target) {
  ir::PrimFunc f = verify(func);
  f = hoist_allocations(f);         // Note [Allocations are the kernel's]
  f = hoist_shuffles(f);            // Note [Warp shuffles]
  f = predicate(f);                 // Note [Folded guards]
  f = fold_conditions(f);           // Note [Decided conditions]
  f = split_uniform_conditions(f);  // Note [Conditions decided per block]
  f = select_layouts(f, target);
  const ir::TileBody& tile = *f.tile();
  TILEJIT_ICHECK(!tile.kernels().empty()) << f.name << ": a tile body without a kernel";
  if (tile.globals.size() != tile.global_params.size()) {
    throw Error(ErrorKind::kValueError,
                ir::diagnostic_prefix(tile.globals[0]->span, f.name, "T.alloc_global") +
                    "buffer " + tile.globals[0].name() +
                    " has no workspace: run transform::plan_workspaces first (jit() does)");
  }
  return f;
}

}  // namespace tilejit::transform
