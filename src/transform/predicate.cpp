// predicate: see predicate.h.
#include "tilejit/transform/predicate.h"

#include <optional>
#include <string>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::transform {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;

class Predicator : public ir::IRMutator {
 public:
  explicit Predicator(const ir::PrimFunc& f) {
    // Shapes are sizes: their symbols are never negative.
    std::vector<std::string> names;
    for (const ir::Param& p : f.params) {
      if (!p.is_scalar) {
        for (const Expr& d : p.tensor.shape) ir::collect_vars(d, &names);
      }
    }
    ctx_.nonneg_symbols.insert(names.begin(), names.end());
  }

 private:
  bool proven(const Expr& cond) const { return ir::prove(cond, ctx_) == true; }

  bool known(const Expr& cond) const {
    for (const Expr& k : known_) {
      if (ir::structural_equal(k, cond)) return true;
    }
    return false;
  }

  // The comparisons an access of `buffer` at `indices` needs, each not
  // already proven or in force.
  std::vector<Expr> needed(const ir::Buffer& buffer, const std::vector<Expr>& indices) {
    std::vector<Expr> conds;
    for (size_t d = 0; d < indices.size(); ++d) {
      const Expr& i = indices[d];
      const Expr& extent = buffer.shape()[d];
      const Expr lower = ir::ge(i, ir::make_int(0, i.dtype()));
      if (!known(lower) && !proven(lower)) conds.push_back(lower);
      const Expr upper = ir::lt(i, extent);
      if (!known(upper) && !proven(upper)) conds.push_back(upper);
    }
    return conds;
  }

  static Expr all_of(const std::vector<Expr>& conds) {
    Expr c = conds[0];
    for (size_t k = 1; k < conds.size(); ++k) c = ir::logical_and(c, conds[k]);
    return c;
  }

  static bool is_tensor(const ir::Buffer& b) { return b.scope() == ir::Scope::kGlobal; }

  Expr visit_load(const ir::LoadNode* op, const Expr& e) override {
    Expr loaded = ir::IRMutator::visit_load(op, e);
    if (!is_tensor(op->buffer)) return loaded;
    const auto* node = loaded.as<ir::LoadNode>();
    const std::vector<Expr> conds = needed(node->buffer, node->indices);
    if (conds.empty()) return loaded;
    const DataType t = loaded.dtype();
    const Expr zero = t.is_float()                   ? ir::make_float(0.0, t)
                      : t == DataType::boolean()     ? ir::make_bool(false)
                                                     : ir::make_int(0, t);
    return ir::select(all_of(conds), loaded, zero);
  }

  Stmt visit_store(const ir::StoreStmt* op, const Stmt& s) override {
    if (!is_tensor(op->buffer)) return ir::IRMutator::visit_store(op, s);
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    const std::vector<Expr> conds = needed(op->buffer, indices);
    // The value's loads at the same indices are covered by the guard.
    known_.insert(known_.end(), conds.begin(), conds.end());
    Expr value = mutate(op->value);
    known_.resize(known_.size() - conds.size());
    Stmt store = (changed || value.get() != op->value.get())
                     ? ir::make_stmt<ir::StoreStmt>(op->buffer, std::move(indices), value, s.span())
                     : s;
    if (conds.empty()) return store;
    return ir::make_stmt<ir::IfStmt>(all_of(conds), store, Stmt(), s.span());
  }

  // Note [Folded guards]
  // A user's guard that the ranges prove (`if bx * 128 + i < N` with N a
  // multiple of 128 and a grid of N / 128 blocks) costs a compare and a
  // branch per element of the hottest loop, and keeps a target from
  // vectorising it. So an `if` whose condition always holds becomes its
  // then-branch, one that never holds its else-branch (or nothing), and a
  // conjunction loses the parts that always hold. The kept branch's
  // declarations join the enclosing sequence; their variables and buffers
  // are unique, so nothing there can clash with them.
  Stmt visit_if(const ir::IfStmt* op, const Stmt& s) override {
    if (const std::optional<bool> holds = ir::prove(op->cond, ctx_)) {
      if (*holds) return mutate(op->then_case);
      return op->else_case.defined() ? mutate(op->else_case) : ir::seq({}, s.span());
    }
    // A conjunction's parts are each in force inside; those that always
    // hold are dropped from the condition.
    std::vector<Expr> parts, kept;
    std::vector<Expr> todo = {op->cond};
    while (!todo.empty()) {
      Expr c = todo.back();
      todo.pop_back();
      if (const auto* b = c.as<ir::BinaryNode>(); b && c.kind() == ExprKind::kAnd) {
        todo.push_back(b->b);
        todo.push_back(b->a);
      } else {
        parts.push_back(c);
        if (!proven(c)) kept.push_back(c);
      }
    }
    Expr cond = mutate(kept.size() == parts.size() ? op->cond : all_of(kept));
    known_.insert(known_.end(), parts.begin(), parts.end());
    Stmt then_case = mutate(op->then_case);
    known_.resize(known_.size() - parts.size());
    Stmt else_case = mutate(op->else_case);
    if (cond.get() == op->cond.get() && then_case.get() == op->then_case.get() &&
        else_case.get() == op->else_case.get()) {
      return s;
    }
    return ir::make_stmt<ir::IfStmt>(cond, then_case, else_case, s.span());
  }

  Stmt visit_kernel(const ir::KernelStmt* op, const Stmt& s) override {
    for (size_t d = 0; d < op->block_vars.size(); ++d) {
      const Expr& g = op->grid[d];
      ctx_.vars[op->block_vars[d].var_id()] = {Expr(0), ir::simplify(g - 1)};
    }
    for (size_t d = 0; d < op->thread_vars.size() && d < op->threads.size(); ++d) {
      ctx_.vars[op->thread_vars[d].var_id()] = {Expr(0), Expr(int64_t{op->threads[d]} - 1)};
    }
    return ir::IRMutator::visit_kernel(op, s);
  }

  Stmt visit_for(const ir::ForStmt* op, const Stmt& s) override {
    ctx_.vars[op->var.var_id()] = {op->min, ir::simplify(op->min + op->extent - 1)};
    return ir::IRMutator::visit_for(op, s);
  }

  Stmt visit_let(const ir::LetStmt* op, const Stmt& s) override {
    Stmt out = ir::IRMutator::visit_let(op, s);
    if (op->var.dtype().is_int()) ctx_.vars[op->var.var_id()] = {op->value, op->value};
    return out;
  }

  // Tile ops check their own regions' bounds (predicate.h), but the
  // expressions inside them are scalar code: a region's start read from a
  // tensor (the row of a gather, KV[Idx[i], :]) or a fill value loads like
  // any other, so the base mutator visits them and their loads are guarded
  // here.

  ir::ProofContext ctx_;  // ranges of the variables in scope, and the shape symbols
  std::vector<Expr> known_;
};

}  // namespace

ir::PrimFunc predicate(const ir::PrimFunc& func) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr) return func;
  ir::PrimFunc out = func;
  ir::TileBody body = *tile;
  body.stmt = Predicator(func).mutate(tile->stmt);
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::transform
