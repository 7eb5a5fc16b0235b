// The shared memory of a CUDA tile kernel: the tiles' bytes and places, and
// the pipeline stages that fit (tile_memory.h).
#include "backend/cuda/tile_memory.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "backend/cuda/tile_codegen.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {

using ir::Expr;

int64_t scratch_bytes(const FragmentChoice& choice) {
  int64_t bytes = 0;
  for (const auto& [id, l] : choice.registers) {
    bytes = std::max(bytes, 4 * l.scratch_floats());
  }
  return bytes;
}

int64_t tile_elements(const ir::Buffer& b, const FragmentChoice& choice) {
  std::vector<int64_t> shape;
  for (const Expr& d : b.shape()) shape.push_back(d.is_const() ? d.int_value() : 0);
  if (choice.padded.count(b.id()) && !shape.empty() && shape.back() > 0) shape.back() += kOperandPad;
  if (auto r = choice.padded_rows.find(b.id()); r != choice.padded_rows.end() && shape.size() == 2) {
    shape[0] = std::max(shape[0], r->second);
  }
  int64_t elements = 1;
  for (int64_t d : shape) elements *= d;
  return elements;
}

namespace {

int64_t align128(int64_t v) { return (v + 127) / 128 * 128; }

}  // namespace

// The shared-memory tiles of `kernel` with their bytes (padded rows, stages)
// and where they lie (smem_plan.h).
SmemPlan plan_tiles(const ir::KernelStmt& kernel, const FragmentChoice& choice,
                    const PipelinePlan& pipelines) {
  struct Allocs : ir::IRVisitor {
    std::vector<ir::Buffer> buffers;
    void visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) override {
      buffers.push_back(op->buffer);
    }
  } allocs;
  allocs.visit(kernel.body);
  std::vector<SmemRequest> requests;
  for (const ir::Buffer& b : allocs.buffers) {
    if (b.scope() == ir::Scope::kLocal || choice.registers.count(b.id())) continue;
    const int64_t elements = tile_elements(b, choice);
    auto st = pipelines.stages.find(b.id());
    const int64_t bytes = elements * b.dtype().bytes();
    requests.push_back({b, st == pipelines.stages.end() ? bytes : align128(bytes) * st->second});
  }
  return plan_shared_memory(kernel.body, requests);
}

int64_t planned_shared_bytes(const ir::KernelStmt& kernel, const FragmentChoice& choice,
                             const PipelinePlan& pipelines) {
  return align128(plan_tiles(kernel, choice, pipelines).total) + scratch_bytes(choice);
}

void fit_pipelines(const ir::KernelStmt& kernel, const FragmentChoice& choice,
                   PipelinePlan& plan) {
  while (!plan.stages.empty() && planned_shared_bytes(kernel, choice, plan) > kMaxSharedBytes) {
    for (auto& [id, s] : plan.stages) s -= 1;
    for (auto it = plan.stages.begin(); it != plan.stages.end();) {
      it = it->second < 2 ? plan.stages.erase(it) : std::next(it);
    }
    for (auto it = plan.loops.begin(); it != plan.loops.end();) {
      std::vector<const ir::CopyOp*>& copies = it->second;
      std::erase_if(copies, [&](const ir::CopyOp* c) { return !plan.stages.count(c->dst.buffer.id()); });
      it = copies.empty() ? plan.loops.erase(it) : std::next(it);
    }
  }
}

}  // namespace tilejit::cuda
