// infer_layouts: see infer_layouts.h.
#include "backend/cuda/infer_layouts.h"

#include <algorithm>

#include "backend/cuda/fragment_uses.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"

namespace tilejit::cuda {

std::vector<ir::Buffer> kernel_tiles(const ir::KernelStmt& kernel) {
  struct Allocs : ir::IRVisitor {
    std::vector<ir::Buffer> buffers;
    void visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) override {
      buffers.push_back(op->buffer);
    }
  } allocs;
  allocs.visit(kernel.body);
  return std::move(allocs.buffers);
}

LaidOutKernel infer_layouts(const ir::PrimFunc& f, size_t index, int threads,
                            const std::set<uint64_t>& in_groups, bool warpgroups) {
  const std::vector<const ir::KernelStmt*> kernels = f.tile()->kernels();
  TILEJIT_ICHECK(index < kernels.size()) << f.name << ": no kernel " << index;
  const ir::KernelStmt& kernel = *kernels[index];
  FragmentChoice choice = choose_fragments(kernel, threads, in_groups, warpgroups);
  std::map<uint64_t, ir::Layout> layouts;
  for (const ir::Buffer& b : kernel_tiles(kernel)) {
    if (auto r = choice.registers.find(b.id()); r != choice.registers.end()) {
      layouts.emplace(b.id(), ir::Layout::fragment(r->second));
      continue;
    }
    if (b.scope() == ir::Scope::kLocal) {
      layouts.emplace(b.id(), ir::Layout::local());
      continue;
    }
    const bool padded = choice.padded.count(b.id()) != 0;
    auto rows = choice.padded_rows.find(b.id());
    auto sw = choice.swizzled.find(b.id());
    if (!padded && rows == choice.padded_rows.end() && sw == choice.swizzled.end()) continue;
    // Note [Padded gemm operands], Note [Short accumulators], Note
    // [Warpgroup gemms]: each is a 2-D tile of constant shape.
    TILEJIT_ICHECK(b.rank() == 2 && dim(b, 0) > 0 && dim(b, 1) > 0)
        << b.name() << ": a padded or swizzled tile of shape " << ir::shape_string(b.shape());
    ir::SharedLayout s;
    s.pitch = dim(b, 1) + (padded ? kOperandPad : 0);
    s.rows = rows == choice.padded_rows.end() ? dim(b, 0) : std::max(dim(b, 0), rows->second);
    s.swizzle = sw == choice.swizzled.end() ? 0 : sw->second;
    layouts.emplace(b.id(), ir::Layout::shared(s));
  }
  LaidOutKernel out;
  out.func = transform::apply_layouts(f, layouts);
  out.kernel = out.func.tile()->kernels()[index];
  out.reasons = std::move(choice.reasons);
  return out;
}

}  // namespace tilejit::cuda
