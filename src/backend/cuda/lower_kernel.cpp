// The CUDA lowering of one T.Kernel (lower_kernel.h), its passes in order.
#include "backend/cuda/lower_kernel.h"

#include <optional>
#include <utility>

#include "backend/common/accesses.h"
#include "backend/cuda/coarse_k_steps.h"
#include "backend/cuda/inside_copies.h"
#include "backend/cuda/staged_epilogue.h"
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

// A kernel planned from one version of its function, with the tensor maps
// and warnings of that plan.
struct Planned {
  ir::PrimFunc func;
  LoweredKernel kernel;
  TensorMaps maps;
  std::vector<runtime::Diagnostic> notes;
};

// Whether the plan of a rewritten kernel keeps what its plan before had: a
// warp-specialised loop, its stages, its blocks per multiprocessor.
bool keeps(const LoweredKernel& rewritten, const LoweredKernel& before) {
  return rewritten.ws.loop != nullptr && ws_stages(rewritten) == ws_stages(before) &&
         rewritten.ws.blocks >= before.ws.blocks;
}

// What a rewrite refused with `keeps` would have lost.
std::string not_kept(const LoweredKernel& before) {
  return std::to_string(ws_stages(before)) + " stages at " + std::to_string(before.ws.blocks) +
         " blocks per multiprocessor";
}

// The accumulator of a warp-specialised loop that is one gemm; 0 else.
uint64_t main_loop_accumulator(const WarpSpecialization& ws) {
  if (ws.loop == nullptr || ws.body.size() != 1) return 0;
  const auto* gemm = ws.body[0].as<ir::GemmOp>();
  return gemm != nullptr ? gemm->c.buffer.id() : 0;
}

}  // namespace

LoweredKernel lower_kernel(const ir::PrimFunc& f, size_t index, int threads,
                           const std::vector<std::string>& symbols, const KernelTarget& target,
                           TensorMaps* maps, std::vector<runtime::Diagnostic>* diagnostics,
                           runtime::LoweringReport* report) {
  auto plan = [&](const ir::PrimFunc& func) {
    Planned p{func, {}, *maps, {}};
    p.kernel = plan_kernel(func, index, threads, symbols, target, &p.maps, &p.notes);
    return p;
  };
  Planned best = plan(f);
  // Rewrites of the kernel's IR that its plan calls for, each kept where
  // the kernel planned again keeps what it had.
  // Note [Coarser K steps]: the warp-specialised loop with wider steps.
  if (best.kernel.ws.loop != nullptr && target.coarse_k_steps) {
    CoarseKSteps coarse;
    if (std::optional<ir::PrimFunc> wide =
            coarsen_k_steps(best.func, index, best.kernel.ws.loop->var, &coarse)) {
      Planned w = plan(*wide);
      if (keeps(w.kernel, best.kernel)) {
        best = std::move(w);
      } else {
        coarse.refused = "K steps of " + std::to_string(coarse.k_step) +
                         " kept: wider stages would not keep " + not_kept(best.kernel);
        coarse.factor = 1;
      }
    }
    best.kernel.coarse = coarse;
  }
  // Note [Staged epilogues]: the main loop's accumulator stored through a
  // shared tile and TMA.
  const uint64_t acc = main_loop_accumulator(best.kernel.ws);
  if (acc != 0 && target.staged_epilogue) {
    StagedEpilogue epilogue{acc, 0, ""};
    if (std::optional<ir::PrimFunc> staged = stage_epilogue(best.func, index, &epilogue)) {
      Planned s = plan(*staged);
      if (!keeps(s.kernel, best.kernel)) {
        epilogue.refused = "not staged: a shared tile would not keep " + not_kept(best.kernel);
      } else if (s.kernel.tma.stores.size() <= best.kernel.tma.stores.size()) {
        epilogue.refused = "not staged: the tile's store would not take TMA";
        for (const auto& [copy, why] : s.kernel.tma.refused) {
          if (copy->src.buffer.id() == epilogue.tile) epilogue.refused += " (" + why + ")";
        }
      } else {
        s.kernel.coarse = best.kernel.coarse;
        best = std::move(s);
      }
    }
    best.kernel.epilogue = epilogue;
  }
  *maps = std::move(best.maps);
  diagnostics->insert(diagnostics->end(), best.notes.begin(), best.notes.end());
  const LoweredKernel& k = best.kernel;
  report_kernel(*k.laid_out.kernel, threads, k.laid_out.reasons, k.pipelines, k.tma, k.ws,
                k.cluster, k.coarse, k.epilogue, report);
  return std::move(best.kernel);
}

}  // namespace tilejit::cuda
