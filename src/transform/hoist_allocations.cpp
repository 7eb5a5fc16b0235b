// Note [Allocations are the kernel's] in hoist_allocations.h.
#include "tilejit/transform/hoist_allocations.h"

#include <utility>
#include <vector>

#include "tilejit/ir/visitor.h"

namespace tilejit::transform {
namespace {

using ir::Stmt;

class Hoister : public ir::IRMutator {
 public:
  bool hoisted_any() const { return any_; }

 private:
  Stmt visit_kernel(const ir::KernelStmt* op, const Stmt& s) override {
    std::vector<Stmt> outer = std::exchange(hoisted_, {});
    const int depth = std::exchange(loop_depth_, 0);
    Stmt out = ir::IRMutator::visit_kernel(op, s);
    loop_depth_ = depth;
    std::vector<Stmt> mine = std::exchange(hoisted_, std::move(outer));
    if (mine.empty()) return out;
    const auto* k = out.as<ir::KernelStmt>();
    mine.push_back(k->body);
    return ir::make_stmt<ir::KernelStmt>(k->grid, k->block_vars, k->threads, k->thread_vars,
                                         ir::seq(std::move(mine), k->body.span()), k->span,
                                         k->raster);
  }
  Stmt visit_for(const ir::ForStmt* op, const Stmt& s) override {
    ++loop_depth_;
    Stmt out = ir::IRMutator::visit_for(op, s);
    --loop_depth_;
    return out;
  }
  Stmt visit_while(const ir::WhileStmt* op, const Stmt& s) override {
    ++loop_depth_;
    Stmt out = ir::IRMutator::visit_while(op, s);
    --loop_depth_;
    return out;
  }
  Stmt visit_seq(const ir::SeqStmt* op, const Stmt& s) override {
    if (loop_depth_ == 0) return ir::IRMutator::visit_seq(op, s);
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& x : op->stmts) {
      const auto* alloc = x.as<ir::AllocStmt>();
      if (alloc != nullptr && alloc->buffer.scope() == ir::Scope::kShared) {
        hoisted_.push_back(x);
        any_ = changed = true;
        continue;
      }
      out.push_back(mutate(x));
      changed = changed || out.back().get() != x.get();
    }
    return changed ? ir::make_stmt<ir::SeqStmt>(std::move(out), op->span) : s;
  }

  std::vector<Stmt> hoisted_;
  int loop_depth_ = 0;
  bool any_ = false;
};

}  // namespace

ir::PrimFunc hoist_allocations(const ir::PrimFunc& func) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr) return func;
  Hoister h;
  Stmt stmt = h.mutate(tile->stmt);
  if (!h.hoisted_any()) return func;
  ir::PrimFunc out = func;
  ir::TileBody body = *tile;
  body.stmt = std::move(stmt);
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::transform
