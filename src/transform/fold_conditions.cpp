// Note [Decided conditions] in tilejit/transform/fold_conditions.h.
//
// The ranges are those of variables whose every value in the box may occur
// (a loop with a constant min and extent, a block index over a constant
// grid, a thread index over the block), so a comparison true at every corner
// of the box (Note [Exact affine ranges]) is true at every iteration that
// runs, whatever ifs, breaks or continues leave out. A condition that is not
// a comparison of affine forms, or that the box does not decide, stays.
#include "tilejit/transform/fold_conditions.h"

#include <map>

#include "tilejit/ir/affine.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::transform {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::IntRange;
using ir::LinearForm;
using ir::Stmt;

class Folder : public ir::IRMutator {
 public:
  Stmt visit_kernel(const ir::KernelStmt* op, const Stmt& s) override {
    for (size_t d = 0; d < op->block_vars.size() && d < op->grid.size(); ++d) {
      if (op->grid[d].is_const() && op->grid[d].int_value() > 0) {
        ranges_[op->block_vars[d].var_id()] = {0, op->grid[d].int_value() - 1};
      }
    }
    for (size_t d = 0; d < op->thread_vars.size() && d < op->threads.size(); ++d) {
      if (op->threads[d] > 0) ranges_[op->thread_vars[d].var_id()] = {0, op->threads[d] - 1};
    }
    Stmt out = ir::IRMutator::visit_kernel(op, s);
    ranges_.clear();
    return out;
  }
  Stmt visit_for(const ir::ForStmt* op, const Stmt& s) override {
    int64_t last = 0;
    const bool known = op->min.is_const() && op->extent.is_const() && op->extent.int_value() > 0 &&
                       !__builtin_add_overflow(op->min.int_value(), op->extent.int_value() - 1,
                                               &last);
    if (known) ranges_[op->var.var_id()] = {op->min.int_value(), last};
    Stmt out = ir::IRMutator::visit_for(op, s);
    ranges_.erase(op->var.var_id());
    return out;
  }
  Stmt visit_let(const ir::LetStmt* op, const Stmt& s) override {
    Stmt out = ir::IRMutator::visit_let(op, s);
    LinearForm f;
    if (ir::as_affine(op->value, [&](uint64_t v) { return let_form(v); }, &f)) {
      lets_[op->var.var_id()] = f;
    }
    return out;
  }
  Expr visit_select(const ir::SelectNode* op, const Expr& e) override {
    Expr out = ir::IRMutator::visit_select(op, e);
    const auto* sel = out.as<ir::SelectNode>();
    if (sel == nullptr) return out;
    const int decided = decide(sel->cond);
    return decided < 0 ? out : decided ? sel->true_value : sel->false_value;
  }
  Stmt visit_if(const ir::IfStmt* op, const Stmt& s) override {
    const int decided = decide(op->cond);
    if (decided == 1) return mutate(op->then_case);
    if (decided == 0) {
      return op->else_case.defined() ? mutate(op->else_case)
                                     : ir::make_stmt<ir::SeqStmt>(std::vector<Stmt>{}, op->span);
    }
    return ir::IRMutator::visit_if(op, s);
  }

 private:
  const LinearForm* let_form(uint64_t v) const {
    auto it = lets_.find(v);
    return it == lets_.end() ? nullptr : &it->second;
  }
  // 1: `cond` holds over the whole box; 0: it fails over it; -1: unknown.
  int decide(const Expr& cond) const {
    LinearForm x;  // a - b
    if (!ir::comparison_difference(cond, [&](uint64_t v) { return let_form(v); }, &x)) return -1;
    const ExprKind kind = cond.kind();
    IntRange r;  // of a - b
    if (!ir::affine_range(x, ranges_, &r) || r.empty()) return -1;
    switch (kind) {
      case ExprKind::kLT: return r.hi < 0 ? 1 : r.lo >= 0 ? 0 : -1;
      case ExprKind::kLE: return r.hi <= 0 ? 1 : r.lo > 0 ? 0 : -1;
      case ExprKind::kGT: return r.lo > 0 ? 1 : r.hi <= 0 ? 0 : -1;
      case ExprKind::kGE: return r.lo >= 0 ? 1 : r.hi < 0 ? 0 : -1;
      case ExprKind::kEQ: return r.lo == 0 && r.hi == 0 ? 1 : (r.hi < 0 || r.lo > 0) ? 0 : -1;
      default: return r.lo == 0 && r.hi == 0 ? 0 : (r.hi < 0 || r.lo > 0) ? 1 : -1;  // kNE
    }
  }

  std::map<uint64_t, IntRange> ranges_;
  std::map<uint64_t, LinearForm> lets_;
};

}  // namespace

ir::PrimFunc fold_conditions(const ir::PrimFunc& func) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr) return func;
  ir::PrimFunc out = func;
  ir::TileBody body = *tile;
  body.stmt = Folder().mutate(tile->stmt);
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::transform
