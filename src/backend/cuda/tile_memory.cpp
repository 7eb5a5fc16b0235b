// The shared memory of a CUDA tile kernel: the tiles' bytes and places, and
// the pipeline stages that fit (tile_memory.h).
#include "backend/cuda/tile_memory.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "backend/cuda/infer_layouts.h"
#include "backend/cuda/tile_codegen.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {

using ir::Expr;

int64_t scratch_bytes(const ir::KernelStmt& kernel) {
  int64_t bytes = 0;
  for (const ir::Buffer& b : kernel_tiles(kernel)) {
    if (const FragmentLayout* l = register_layout(b)) bytes = std::max(bytes, 4 * l->scratch_floats());
  }
  return (bytes + 15) / 16 * 16;
}

int scratch_reductions(const ir::Stmt& body) {
  struct Count : ir::IRVisitor {
    int n = 0;
    void visit_reduce(const ir::ReduceOp* op, const ir::Stmt&) override {
      n += scratch_layout(*op) != nullptr;
    }
  } count;
  count.visit(body);
  return count.n;
}

int64_t tile_elements(const ir::Buffer& b) {
  if (const ir::SharedLayout* s = b->layout.shared()) return s->pitch * s->rows;
  int64_t elements = 1;
  for (const Expr& d : b.shape()) elements *= d.is_const() ? d.int_value() : 0;
  return elements;
}

namespace {

int64_t align128(int64_t v) { return (v + 127) / 128 * 128; }

}  // namespace

int64_t stage_bytes(int64_t bytes, bool swizzled) {
  const int64_t align = swizzled ? 1024 : 128;
  return (bytes + align - 1) / align * align;
}

// The shared-memory tiles of `kernel` with their bytes (padded rows, stages)
// and where they lie (smem_plan.h).
SmemPlan plan_tiles(const ir::KernelStmt& kernel, const PipelinePlan& pipelines) {
  std::vector<SmemRequest> requests;
  for (const ir::Buffer& b : kernel_tiles(kernel)) {
    if (b.scope() == ir::Scope::kLocal || b->layout.fragment() != nullptr) continue;
    const int64_t elements = tile_elements(b);
    auto st = pipelines.stages.find(b.id());
    const int64_t bytes = elements * b.dtype().bytes();
    const bool swizzled = swizzle_of(b) != 0;
    requests.push_back({b, st == pipelines.stages.end() ? bytes : stage_bytes(bytes, swizzled) * st->second,
                        swizzled ? 1024 : 128});
  }
  return plan_shared_memory(kernel.body, requests);
}

int64_t planned_shared_bytes(const ir::KernelStmt& kernel, const PipelinePlan& pipelines) {
  return align128(plan_tiles(kernel, pipelines).total) + scratch_bytes(kernel);
}

namespace {

// The dynamic shared memory a block may take. Static shared memory (the
// stages' mbarriers, Note [TMA copies]) sits below the dynamic tiles, which
// start 1024-aligned where a tile is swizzled: it takes 1024 bytes then.
int64_t dynamic_limit(const ir::KernelStmt& kernel) {
  const std::vector<ir::Buffer> tiles = kernel_tiles(kernel);
  const bool swizzles =
      std::any_of(tiles.begin(), tiles.end(), [](const ir::Buffer& b) { return swizzle_of(b) != 0; });
  return kMaxSharedBytes - (swizzles ? 1024 : 0);
}

}  // namespace

// Note [Alternating reduction scratch]
// A row reduction across warps writes each warp's partial rows to the
// scratch, waits at a barrier, and reads every warp's (mma_acc.h,
// part_tile.h). A second reduction through the same scratch must wait until
// every thread has read it, so the lowering put a barrier before it: MLA
// decoding's reduce_max and reduce_sum had three barriers between them,
// where TileLang's program needs two. With two scratches taken in turn, a
// reduction writes the other scratch than the one before it, and no barrier
// goes between them. The hazard tracker sees each scratch as a buffer of its
// own (kScratchIds in tile_codegen.h), so a scratch written again still
// waits for a barrier after its last reads: where none came between (a
// third reduction right after, a loop's back edge), the tracker puts one. It
// is taken where a kernel has two reductions through the scratch or more and
// the second scratch fits beside the tiles and the stages as fitted.
//
// The reduction's own barrier is also one for the tracker
// (CudaTileCodegen::barrier_inside) where it is the barrier the tracker
// would have placed: a softmax's store of its result into the shared tile
// it read its input from then needs no barrier of its own, the reductions'
// having ordered the reads before it.
int scratch_copies(const ir::KernelStmt& kernel, const SmemPlan& tiles) {
  if (scratch_reductions(kernel.body) < 2) return 1;
  return align128(tiles.total) + 2 * scratch_bytes(kernel) <= dynamic_limit(kernel) ? 2 : 1;
}

// Note [Fitting the stages]
// Stages that do not fit in the block's shared memory are cut: first every
// ring deeper than two stages loses one (the prefetch distance shrinks for
// all copies alike), and once every ring has two, the smallest ring goes
// (its copy becomes a synchronous one in each iteration) before a larger
// one, since a large tile's prefetch hides the most latency per byte of
// shared memory. TileLang's MLA decoding shows why: its K and V tiles'
// second stage fits beside the queries' tiles once the small rotary tile's
// does not, where dropping every stage would leave the loop unpipelined.
// Each copy that loses its prefetch says so in the lowering report.
void fit_pipelines(const ir::KernelStmt& kernel, PipelinePlan& plan) {
  std::map<uint64_t, const ir::CopyOp*> copy_of;
  for (const auto& [loop, copies] : plan.loops) {
    for (const ir::CopyOp* c : copies) copy_of[c->dst.buffer.id()] = c;
  }
  auto ring_bytes = [&](uint64_t id) {
    const ir::Buffer& b = copy_of.at(id)->dst.buffer;
    return tile_elements(b) * b.dtype().bytes();
  };
  std::vector<uint64_t> dropped;
  const int64_t limit = dynamic_limit(kernel);
  while (!plan.stages.empty() && planned_shared_bytes(kernel, plan) > limit) {
    int deepest = 0;
    for (const auto& [id, s] : plan.stages) deepest = std::max(deepest, s);
    if (deepest > 2) {
      for (auto& [id, s] : plan.stages) s = std::max(2, s - 1);
      continue;
    }
    uint64_t smallest = plan.stages.begin()->first;
    for (const auto& [id, s] : plan.stages) {
      if (ring_bytes(id) < ring_bytes(smallest)) smallest = id;
    }
    plan.stages.erase(smallest);
    dropped.push_back(smallest);
  }
  for (auto it = plan.loops.begin(); it != plan.loops.end();) {
    std::vector<const ir::CopyOp*>& copies = it->second;
    std::erase_if(copies, [&](const ir::CopyOp* c) { return !plan.stages.count(c->dst.buffer.id()); });
    it = copies.empty() ? plan.loops.erase(it) : std::next(it);
  }
  for (uint64_t id : dropped) {
    const ir::CopyOp* c = copy_of.at(id);
    plan.diagnostics.push_back(
        {"T.copy", c->span, "not pipelined, copied synchronously in each iteration",
         "its stages (" + std::to_string(ring_bytes(id)) + " bytes each) did not fit in the " +
             std::to_string(kMaxSharedBytes) +
             " bytes of shared memory with the other tiles (Note [Fitting the stages])"});
  }
}

}  // namespace tilejit::cuda
