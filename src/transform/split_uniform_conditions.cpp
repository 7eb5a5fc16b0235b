// Note [Conditions decided per block] in
// tilejit/transform/split_uniform_conditions.h.
#include "tilejit/transform/split_uniform_conditions.h"

#include <map>
#include <set>
#include <vector>

#include "tilejit/ir/affine.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::transform {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::IntRange;
using ir::LinearForm;
using ir::Stmt;

// The selects of a nest's body, each replaced by its true (or false) value
// where its condition is in `conds`.
class Take : public ir::IRMutator {
 public:
  Take(const std::set<const ir::ExprNode*>& conds, bool value) : conds_(conds), value_(value) {}
  Expr visit_select(const ir::SelectNode* op, const Expr& e) override {
    if (conds_.count(op->cond.get())) return mutate(value_ ? op->true_value : op->false_value);
    return ir::IRMutator::visit_select(op, e);
  }

 private:
  const std::set<const ir::ExprNode*>& conds_;
  bool value_;
};

// The selects of an expression tree or statement, in order.
struct Selects : ir::IRVisitor {
  std::vector<const ir::SelectNode*> found;
  void visit_select(const ir::SelectNode* op, const Expr& e) override {
    found.push_back(op);
    ir::IRVisitor::visit_select(op, e);
  }
};

// The IR variables an expression reads.
struct Vars : ir::IRVisitor {
  std::set<uint64_t> ids;
  void visit_var(const ir::VarNode* op, const Expr&) override { ids.insert(op->id); }
};

class Splitter : public ir::IRMutator {
 public:
  Stmt visit_kernel(const ir::KernelStmt* op, const Stmt& s) override {
    for (const Expr& v : op->block_vars) outer_[v.var_id()] = v;
    for (const Expr& v : op->thread_vars) threads_.insert(v.var_id());
    Stmt out = ir::IRMutator::visit_kernel(op, s);
    outer_.clear();
    lets_.clear();
    threads_.clear();
    return out;
  }
  Stmt visit_let(const ir::LetStmt* op, const Stmt& s) override {
    LinearForm f;
    if (ir::as_affine(op->value, [&](uint64_t v) { return let_form(v); }, &f) && only_outer(f)) {
      lets_[op->var.var_id()] = f;
    }
    return ir::IRMutator::visit_let(op, s);
  }
  Stmt visit_for(const ir::ForStmt* op, const Stmt& s) override {
    if (op->for_kind != ir::ForKind::kParallel) {
      // The variable of a loop around a nest is one value through the nest,
      // the same in every thread where the loop's range is.
      Vars range;
      range.visit(op->min);
      range.visit(op->extent);
      bool uniform = true;
      for (uint64_t v : range.ids) uniform = uniform && !threads_.count(v);
      if (uniform) outer_[op->var.var_id()] = op->var;
      Stmt out = ir::IRMutator::visit_for(op, s);
      outer_.erase(op->var.var_id());
      return out;
    }
    return split_nest(op, s);
  }

 private:
  const LinearForm* let_form(uint64_t v) const {
    auto it = lets_.find(v);
    return it == lets_.end() ? nullptr : &it->second;
  }
  bool only_outer(const LinearForm& f) const {
    for (const auto& [v, k] : f.terms) {
      if (!outer_.count(v)) return false;
    }
    return true;
  }

  // `op`, a T.Parallel nest, as `if (every condition holds over the nest)
  // <the nest with each select its true value> else <the nest>`; with one
  // condition, `else if (it fails over the nest) <its false values>` too.
  Stmt split_nest(const ir::ForStmt* op, const Stmt& s) {
    std::map<uint64_t, IntRange> box;
    const ir::ForStmt* inner = op;
    for (const ir::ForStmt* f = op; f != nullptr;) {
      if (!f->min.is_const() || !f->extent.is_const() || f->extent.int_value() <= 0) return s;
      box[f->var.var_id()] = {f->min.int_value(), f->min.int_value() + f->extent.int_value() - 1};
      inner = f;
      const ir::Stmt* next = &f->body;
      if (const auto* seq = next->as<ir::SeqStmt>(); seq != nullptr && seq->stmts.size() == 1) {
        next = &seq->stmts[0];
      }
      const auto* child = next->as<ir::ForStmt>();
      f = child != nullptr && child->for_kind == ir::ForKind::kParallel ? child : nullptr;
    }
    Selects selects;
    selects.visit(inner->body);
    std::set<const ir::ExprNode*> conds;
    Expr holds, fails;
    for (const ir::SelectNode* sel : selects.found) {
      if (conds.count(sel->cond.get())) continue;
      Expr h = over_box(sel->cond, box, true);
      if (!h.defined()) continue;
      conds.insert(sel->cond.get());
      holds = holds.defined() ? ir::logical_and(holds, h) : h;
      fails = conds.size() == 1 ? over_box(sel->cond, box, false) : Expr();
    }
    if (!holds.defined()) return s;
    Stmt otherwise = s;
    if (fails.defined()) {  // one condition: where it fails everywhere too
      otherwise = ir::make_stmt<ir::IfStmt>(fails, Take(conds, false).mutate(s), s, s.span());
    }
    return ir::make_stmt<ir::IfStmt>(holds, Take(conds, true).mutate(s), otherwise, s.span());
  }

  // A condition on the variables around the nest that holds exactly where
  // `cond` holds (`value`; or fails) at every point of `box`, or undefined.
  Expr over_box(const Expr& cond, const std::map<uint64_t, IntRange>& box, bool value) const {
    const ExprKind kind = cond.kind();
    LinearForm x;  // a - b
    if (kind == ExprKind::kEQ || kind == ExprKind::kNE ||
        !ir::comparison_difference(cond, [&](uint64_t v) { return let_form(v); }, &x)) {
      return {};
    }
    // a - b = (the nest's part) + (the part around it) + constant.
    LinearForm in_nest;
    Expr around;
    for (const auto& [v, k] : x.terms) {
      if (box.count(v)) {
        in_nest.terms[v] = k;
      } else if (auto o = outer_.find(v); o != outer_.end()) {
        const Expr term = ir::cast(DataType::int64(), o->second) *
                          ir::make_int(k, DataType::int64());
        around = around.defined() ? around + term : term;
      } else {
        return {};  // a thread index, a symbol, a variable of the nest's body
      }
    }
    IntRange r;
    if (!around.defined() || in_nest.terms.empty() || !ir::affine_range(in_nest, box, &r) ||
        r.empty()) {
      return {};  // decided without the nest (fold_conditions) or not affine in it
    }
    // a - b > 0 everywhere: at its least; fails everywhere: at its greatest
    // (and the other way round for < and <=).
    const bool greater = kind == ExprKind::kGT || kind == ExprKind::kGE;
    int64_t bound = 0;
    if (__builtin_add_overflow(x.constant, greater == value ? r.lo : r.hi, &bound)) return {};
    const Expr at = around + ir::make_int(bound, DataType::int64());
    const Expr zero = ir::make_int(0, DataType::int64());
    if (value) {
      switch (kind) {
        case ExprKind::kGT: return ir::gt(at, zero);
        case ExprKind::kGE: return ir::ge(at, zero);
        case ExprKind::kLT: return ir::lt(at, zero);
        default: return ir::le(at, zero);
      }
    }
    switch (kind) {  // the negation, at every point
      case ExprKind::kGT: return ir::le(at, zero);
      case ExprKind::kGE: return ir::lt(at, zero);
      case ExprKind::kLT: return ir::ge(at, zero);
      default: return ir::gt(at, zero);
    }
  }

  std::map<uint64_t, Expr> outer_;  // block indices, loops around: one value through a nest
  std::map<uint64_t, LinearForm> lets_;
  std::set<uint64_t> threads_;
};

}  // namespace

ir::PrimFunc split_uniform_conditions(const ir::PrimFunc& func) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr) return func;
  ir::PrimFunc out = func;
  ir::TileBody body = *tile;
  body.stmt = Splitter().mutate(tile->stmt);
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::transform
