// Note [Swizzled store tiles] in store_tiles.h.
#include "backend/cuda/store_tiles.h"

#include "backend/cuda/fragment_uses.h"
#include "backend/cuda/warpgroup_gemms.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

// A tile stays a candidate while every use is a whole copy into it from a
// fragment (its sources recorded) or a whole copy from it to a tensor.
class StoreUses : public TileCandidates {
 public:
  std::map<uint64_t, ir::Buffer> tiles;
  std::map<uint64_t, std::set<uint64_t>> sources;  // tile -> the fragments copied into it

 private:
  int own_ = 0;  // inside T.Parallel or a pipelined loop

  void visit_alloc(const ir::AllocStmt* op, const ir::Stmt& s) override {
    const ir::Buffer& b = op->buffer;
    if (b.scope() == ir::Scope::kShared && b.rank() == 2 && is_16bit_float(b.dtype()) &&
        dim(b, 0) > 0 && dim(b, 1) > 0) {
      const int sw = swizzle_bytes(dim(b, 1), b.dtype().bytes());
      // Each panel keeps the next 1024-aligned (swizzle.h).
      if (sw > 0 && dim(b, 0) * sw % 1024 == 0) {
        candidates.emplace(b.id(), sw);
        tiles.emplace(b.id(), b);
      }
    }
    ir::IRVisitor::visit_alloc(op, s);
  }
  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    const bool own = op->for_kind == ir::ForKind::kParallel || op->for_kind == ir::ForKind::kPipelined;
    own_ += own;
    ir::IRVisitor::visit_for(op, s);
    own_ -= own;
  }
  void visit_copy(const ir::CopyOp* op, const ir::Stmt&) override {
    const ir::Buffer &src = op->src.buffer, &dst = op->dst.buffer;
    // Into the tile: the whole fragment, whole. Out of it: the whole tile
    // to a region of a tensor.
    const bool block = own_ == 0 && is_whole(op->src);
    if (candidates.count(dst.id()) && block && is_whole(op->dst) &&
        src.scope() == ir::Scope::kFragment) {
      sources[dst.id()].insert(src.id());
    } else {
      drop(dst);
    }
    if (!(block && dst.scope() == ir::Scope::kGlobal && dst.param() >= 0)) drop(src);
    ranges(op->src);
    ranges(op->dst);
  }
};

}  // namespace

std::map<uint64_t, int> swizzled_store_tiles(const ir::KernelStmt& kernel,
                                             const std::set<uint64_t>& in_groups,
                                             const std::map<uint64_t, FragmentLayout>& regs) {
  StoreUses uses;
  uses.visit(kernel.body);
  std::map<uint64_t, int> out;
  for (const auto& [id, sw] : uses.candidates) {
    auto from = uses.sources.find(id);
    if (in_groups.count(id) || from == uses.sources.end()) continue;  // no accumulator stored in it
    bool all = true;
    for (uint64_t src : from->second) {
      auto l = regs.find(src);
      all = all && l != regs.end() &&
            stmatrix_layout(l->second, dim(uses.tiles.at(id), 0), dim(uses.tiles.at(id), 1));
    }
    if (all) out.emplace(id, sw);
  }
  return out;
}

}  // namespace tilejit::cuda
