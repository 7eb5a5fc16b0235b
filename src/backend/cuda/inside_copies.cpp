// Note [Copies inside their tensor] (inside_copies.h).
#include "backend/cuda/inside_copies.h"

#include <string>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

using ir::Expr;

class Inside : public ir::IRVisitor {
 public:
  explicit Inside(const ir::PrimFunc& f) {
    // Shapes are sizes: their symbols are never negative.
    std::vector<std::string> names;
    for (const ir::Param& p : f.params) {
      if (!p.is_scalar) {
        for (const Expr& d : p.tensor.shape) ir::collect_vars(d, &names);
      }
    }
    ctx_.nonneg_symbols.insert(names.begin(), names.end());
  }

  std::set<const ir::CopyOp*> found;

  // The kernel's block and thread indices range over its grid and block.
  void run(const ir::KernelStmt& k) {
    for (size_t d = 0; d < k.block_vars.size(); ++d) {
      ctx_.vars[k.block_vars[d].var_id()] = {Expr(0), ir::simplify(k.grid[d] - 1)};
    }
    for (size_t d = 0; d < k.thread_vars.size() && d < k.threads.size(); ++d) {
      ctx_.vars[k.thread_vars[d].var_id()] = {Expr(0), Expr(int64_t{k.threads[d]} - 1)};
    }
    visit(k.body);
  }

 private:
  bool proven(const Expr& cond) const { return ir::prove(cond, ctx_) == true; }

  // Every range of `r` lies in its buffer's dimension (a region of a
  // shared tile always does: verify checked its constant bounds).
  bool inside(const ir::Region& r) const {
    if (r.buffer.scope() != ir::Scope::kGlobal) return true;
    if (r.is_whole()) return true;
    const std::vector<Expr>& shape = r.buffer.shape();
    if (r.ranges.size() != shape.size()) return false;
    for (size_t d = 0; d < shape.size(); ++d) {
      const ir::Range& range = r.ranges[d];
      if (!proven(ir::ge(range.min, ir::make_int(0, range.min.dtype()))) ||
          !proven(ir::le(range.min + range.extent, shape[d]))) {
        return false;
      }
    }
    return true;
  }

  void visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override {
    if (inside(op->src) && inside(op->dst)) found.insert(op);
    ir::IRVisitor::visit_copy(op, s);
  }
  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    ctx_.vars[op->var.var_id()] = {op->min, ir::simplify(op->min + op->extent - 1)};
    ir::IRVisitor::visit_for(op, s);
  }
  void visit_let(const ir::LetStmt* op, const ir::Stmt& s) override {
    ir::IRVisitor::visit_let(op, s);
    if (op->var.dtype().is_int()) ctx_.vars[op->var.var_id()] = {op->value, op->value};
  }

  ir::ProofContext ctx_;
};

}  // namespace

std::set<const ir::CopyOp*> copies_inside(const ir::PrimFunc& func, const ir::KernelStmt& kernel) {
  Inside v(func);
  v.run(kernel);
  return v.found;
}

}  // namespace tilejit::cuda
