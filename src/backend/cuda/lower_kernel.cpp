// The CUDA lowering of one T.Kernel (lower_kernel.h), its passes in order.
#include "backend/cuda/lower_kernel.h"

#include <optional>
#include <utility>

#include "backend/common/accesses.h"
#include "backend/cuda/coarse_k_steps.h"
#include "backend/cuda/inside_copies.h"
#include "backend/cuda/op_report.h"
#include "backend/cuda/tile_memory.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

// The buffers the ops of a thread range (not the whole block) touch.
std::set<uint64_t> group_buffers(const ir::KernelStmt& kernel,
                                 const transform::ThreadUniformity& u) {
  struct Finder : ir::IRVisitor {
    const transform::ThreadUniformity* u = nullptr;
    std::set<uint64_t> out;
    void visit_if(const ir::IfStmt* op, const ir::Stmt& s) override {
      for (bool then_branch : {true, false}) {
        const auto r = u->branch_range(op, then_branch);
        const ir::Stmt& branch = then_branch ? op->then_case : op->else_case;
        if (r && r->count != u->threads() && branch.defined()) {
          backend::Accessed a;
          a.visit(branch);
          out.insert(a.ids.begin(), a.ids.end());
          out.insert(a.reads.begin(), a.reads.end());
          out.insert(a.writes.begin(), a.writes.end());
        }
      }
      ir::IRVisitor::visit_if(op, s);
    }
  } finder;
  finder.u = &u;
  finder.visit(kernel.body);
  return finder.out;
}

// The passes of lower_kernel up to the report, with the tensor maps they
// add to `maps` and what the pipelines' planner warns of in `diagnostics`.
LoweredKernel plan_kernel(const ir::PrimFunc& f, size_t index, int threads,
                          const std::vector<std::string>& symbols, const KernelTarget& target,
                          TensorMaps* maps, std::vector<runtime::Diagnostic>* diagnostics) {
  LoweredKernel out;
  out.threads = threads;
  const ir::KernelStmt& row_major = *f.tile()->kernels()[index];
  // Note [Layouts]: from here on, every buffer carries its layout.
  out.laid_out = infer_layouts(
      f, index, threads, group_buffers(row_major, transform::thread_uniformity(row_major, f.name)),
      target.warpgroups);
  const ir::KernelStmt& kernel = *out.laid_out.kernel;
  out.uniformity = transform::thread_uniformity(kernel, f.name);
  out.pipelines = plan_pipelines(kernel);
  diagnostics->insert(diagnostics->end(), out.pipelines.diagnostics.begin(),
                      out.pipelines.diagnostics.end());
  fit_pipelines(kernel, out.pipelines);
  // Note [TMA copies]: where the target is sm_90a, as wgmma.
  out.tma = plan_tma(kernel, symbols, out.pipelines, out.uniformity,
                     target.warpgroups && target.tma, maps);
  out.tiles = plan_tiles(kernel, out.pipelines);
  out.scratch_copies = scratch_copies(kernel, out.tiles);
  out.ws = plan_warp_specialization(kernel, symbols, threads, out.pipelines, out.tma, out.tiles,
                                    out.uniformity, target.warp_specialize);
  out.cluster = plan_cluster(kernel, out.ws, out.pipelines, out.tma, target.cluster, maps);
  out.inside_copies = copies_inside(out.laid_out.func, kernel);
  return out;
}

// The stages a warp-specialised loop keeps.
int ws_stages(const LoweredKernel& k) {
  const auto loop = k.pipelines.loops.find(k.ws.loop);
  return k.pipelines.stages.at(loop->second.front()->dst.buffer.id());
}

}  // namespace

LoweredKernel lower_kernel(const ir::PrimFunc& f, size_t index, int threads,
                           const std::vector<std::string>& symbols, const KernelTarget& target,
                           TensorMaps* maps, std::vector<runtime::Diagnostic>* diagnostics,
                           runtime::LoweringReport* report) {
  TensorMaps planned = *maps;
  std::vector<runtime::Diagnostic> notes;
  LoweredKernel out = plan_kernel(f, index, threads, symbols, target, &planned, &notes);
  // Note [Coarser K steps]: the warp-specialised loop planned again with
  // wider steps, kept where it is still warp-specialised as before.
  if (out.ws.loop != nullptr && target.coarse_k_steps) {
    CoarseKSteps coarse;
    if (std::optional<ir::PrimFunc> wide = coarsen_k_steps(f, index, out.ws.loop->var, &coarse)) {
      TensorMaps wide_maps = *maps;
      std::vector<runtime::Diagnostic> wide_notes;
      LoweredKernel w = plan_kernel(*wide, index, threads, symbols, target, &wide_maps, &wide_notes);
      if (w.ws.loop == nullptr || ws_stages(w) != ws_stages(out) || w.ws.blocks < out.ws.blocks) {
        coarse.factor = 1;
        coarse.refused = "K steps of " + std::to_string(coarse.k_step) +
                         " kept: wider stages would not keep " + std::to_string(ws_stages(out)) +
                         " stages at " + std::to_string(out.ws.blocks) +
                         " blocks per multiprocessor";
      } else {
        out = std::move(w);
        planned = std::move(wide_maps);
        notes = std::move(wide_notes);
      }
    }
    out.coarse = coarse;
  }
  *maps = std::move(planned);
  diagnostics->insert(diagnostics->end(), notes.begin(), notes.end());
  report_kernel(*out.laid_out.kernel, threads, out.laid_out.reasons, out.pipelines, out.tma, out.ws,
                out.cluster, out.coarse, report);
  return out;
}

}  // namespace tilejit::cuda
