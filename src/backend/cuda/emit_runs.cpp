// The runs of consecutive elements whose memory accesses move as vectors
// (Note [Vectorised runs] in vector_runs.h): a partitioned tile's register
// loop as runs of its V columns, and the arrays a run stages.
#include <string>
#include <vector>

#include "backend/cuda/tile_codegen.h"

namespace tilejit::cuda {

std::vector<StagedAccess> CudaTileCodegen::plan_run(const ir::Stmt& body, const ir::Expr& lane,
                                                    bool stage_writes) {
  if (debug_bounds) return {};
  auto memory = [&](const ir::Buffer& b) {
    return register_layout(b) == nullptr && !locals_.count(b.id()) &&
           b.scope() != ir::Scope::kLocal;
  };
  return plan_vector_run(body, lane.var_id(), memory, stage_writes);
}

// The template arguments of load_run / store_run for `s`: V, and whether
// the address is proved aligned to the run's widest piece: a buffer whose
// start is so aligned (a tile, at a 128-byte boundary; a T.alloc_global
// workspace, at a 256-byte one), indexed by the lane alone in its last
// dimension, whose rows are whole runs (every stride a multiple of the
// last extent, a multiple of V), at a run that starts at a multiple of V.
// A tensor parameter's start is the caller's, and its runs stay unproven.
std::string CudaTileCodegen::run_args(const StagedAccess& s, const ir::Expr& lane, int64_t v,
                                      bool first_aligned) {
  const backend::BufferAccess& a = access(s.buffer, {}, "load");
  const ir::Expr& last = s.indices.back();
  const bool start_aligned = !a.global || a.base_align >= 16;
  const bool aligned = first_aligned && start_aligned && !a.static_shape.empty() &&
                       a.static_shape.back() > 0 && a.static_shape.back() % v == 0 &&
                       last.is_var() && last.var_id() == lane.var_id();
  return std::to_string(v) + (aligned ? ", true" : "");
}

std::vector<std::string> CudaTileCodegen::begin_run(const std::vector<StagedAccess>& staged,
                                                    const ir::Expr& lane, int64_t v,
                                                    const std::string& first,
                                                    const std::string& lane_text,
                                                    bool first_aligned) {
  std::vector<std::string> arrays;
  bind_var(lane, first);
  for (const StagedAccess& s : staged) {
    const backend::BufferAccess& a = access(s.buffer, {}, "load");
    const std::string array = fresh(a.name + "_run");
    line(std::string("alignas(16) ") + storage_type(a.dtype, {}, "load") + " " + array + "[" +
         std::to_string(v) + "];");
    if (s.read) {
      line("tilejit::cuda::load_run<" + run_args(s, lane, v, first_aligned) + ">(" + array + ", &" +
           element(a, s.indices) + ");");
    }
    arrays.push_back(array);
  }
  unbind_var(lane);
  for (size_t k = 0; k < staged.size(); ++k) {
    run_elements_.push_back(
        {access(staged[k].buffer, {}, "load").name, staged[k].indices, arrays[k], lane_text});
  }
  return arrays;
}

void CudaTileCodegen::end_run(const std::vector<StagedAccess>& staged,
                              const std::vector<std::string>& arrays, const ir::Expr& lane,
                              int64_t v, const std::string& first, bool first_aligned) {
  run_elements_.clear();
  bind_var(lane, first);
  for (size_t k = 0; k < staged.size(); ++k) {
    if (!staged[k].written) continue;
    const backend::BufferAccess& a = access(staged[k].buffer, {}, "store");
    line("tilejit::cuda::store_run<" + run_args(staged[k], lane, v, first_aligned) + ">(&" +
         element(a, staged[k].indices) +
         ", " + arrays[k] + ");");
  }
  unbind_var(lane);
}

// Registers r = run * V + k, k < V, are V consecutive columns of one row
// (part_tile.h): the row and the run's first column once per run, then the
// lanes.
void CudaTileCodegen::emit_register_runs(const std::vector<const ir::ForStmt*>& nest,
                                         const FragmentLayout& layout,
                                         const std::vector<StagedAccess>& staged) {
  const std::string v = std::to_string(layout.v);
  const std::string type = layout_type(layout);
  line("#pragma unroll");
  line("for (int tilejit_run = 0; tilejit_run < " + std::to_string(layout.registers() / layout.v) +
       "; ++tilejit_run) {");
  indent();
  // A 1-D tile's nest has its column alone (Note [1-D and replicated
  // fragments]).
  if (!layout.flat) {
    line("const int64_t " + var_name(nest[0]->var) + " = " + type + "::row(tilejit_run * " + v +
         ");");
  }
  const std::string first = fresh("tilejit_c");
  line("const int64_t " + first + " = " + type + "::col(tilejit_run * " + v + ");");
  const ir::Expr& lane = nest.back()->var;
  const std::vector<std::string> arrays = begin_run(staged, lane, layout.v, first, "tilejit_v", true);
  line("#pragma unroll");
  line("for (int tilejit_v = 0; tilejit_v < " + v + "; ++tilejit_v) {");
  indent();
  line("const int tilejit_r = tilejit_run * " + v + " + tilejit_v;");
  line("const int64_t " + var_name(lane) + " = " + first + " + tilejit_v;");
  emit_register_body(nest, layout, !layout.flat);
  dedent();
  line("}");
  end_run(staged, arrays, lane, layout.v, first, true);
  dedent();
  line("}");
}

}  // namespace tilejit::cuda
