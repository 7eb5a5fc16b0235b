#include "tilejit/transform/workspace_plan.h"

#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"

namespace tilejit::transform {

ir::PrimFunc plan_workspaces(const ir::PrimFunc& func) {
  const ir::TileBody* body = func.tile();
  if (body == nullptr || body->globals.empty() || !body->global_params.empty()) return func;
  ir::PrimFunc out = func;
  ir::TileBody planned = *body;
  for (const ir::Buffer& g : body->globals) {
    const int clash = out.param_index(g.name());
    if (TILEJIT_UNLIKELY(clash >= 0)) {
      const bool is_param = clash < int(func.params.size());
      TILEJIT_THROW(kValueError) << ir::diagnostic_prefix(g->span, func.name, "T.alloc_global")
                                 << "workspace '" << g.name() << "' has the name of "
                                 << (is_param ? "parameter #" + std::to_string(clash)
                                              : std::string("another T.alloc_global buffer"));
    }
    ir::Param p;
    p.name = g.name();
    p.tensor = ir::TensorType{g.shape(), g.dtype()};
    planned.global_params.push_back(int(out.params.size()));
    planned.params.push_back(g);
    planned.scalars.emplace_back();
    out.params.push_back(std::move(p));
  }
  out.body = std::move(planned);
  return out;
}

}  // namespace tilejit::transform
