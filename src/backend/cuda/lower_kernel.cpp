// The CUDA lowering of one T.Kernel (lower_kernel.h), its passes in order.
#include "backend/cuda/lower_kernel.h"

#include <utility>

#include "backend/common/accesses.h"
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

}  // namespace

LoweredKernel lower_kernel(const ir::PrimFunc& f, size_t index, int threads,
                           const std::vector<std::string>& symbols, const KernelTarget& target,
                           TensorMaps* maps, std::vector<runtime::Diagnostic>* diagnostics,
                           runtime::LoweringReport* report) {
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
  report_kernel(kernel, threads, out.laid_out.reasons, out.pipelines, out.tma, out.ws, out.cluster,
                report);
  return out;
}

}  // namespace tilejit::cuda
