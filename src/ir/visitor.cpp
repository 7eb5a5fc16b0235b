#include "tilejit/ir/visitor.h"

#include "tilejit/core/error.h"

namespace tilejit::ir {

void unhandled_expr(const char* walk, const Expr& e) {
  TILEJIT_THROW(kInternalError) << walk << ": expression kind " << expr_kind_name(e.kind())
                                << " is not handled (" << to_string(e) << ")";
}

void unhandled_stmt(const char* walk, const Stmt& s) {
  TILEJIT_THROW(kInternalError) << walk << ": statement kind " << stmt_kind_name(s.kind())
                                << " is not handled";
}

// ---------------------------------------------------------------------------
// IRVisitor

void IRVisitor::visit_region(const Region& r) {
  for (const Range& range : r.ranges) {
    visit(range.min);
    visit(range.extent);
  }
}

void IRVisitor::visit_binary(const BinaryNode* op, const Expr&) {
  visit(op->a);
  visit(op->b);
}
void IRVisitor::visit_not(const NotNode* op, const Expr&) { visit(op->a); }
void IRVisitor::visit_bit_not(const BitNotNode* op, const Expr&) { visit(op->a); }
void IRVisitor::visit_select(const SelectNode* op, const Expr&) {
  visit(op->cond);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit_cast(const CastNode* op, const Expr&) { visit(op->value); }
void IRVisitor::visit_call(const CallNode* op, const Expr&) {
  for (const Expr& a : op->args) visit(a);
}
void IRVisitor::visit_load(const LoadNode* op, const Expr&) {
  for (const Expr& i : op->indices) visit(i);
}

void IRVisitor::visit_kernel(const KernelStmt* op, const Stmt&) {
  for (const Expr& g : op->grid) visit(g);
  visit(op->body);
}
void IRVisitor::visit_seq(const SeqStmt* op, const Stmt&) {
  for (const Stmt& s : op->stmts) visit(s);
}
void IRVisitor::visit_for(const ForStmt* op, const Stmt&) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_if(const IfStmt* op, const Stmt&) {
  visit(op->cond);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit_while(const WhileStmt* op, const Stmt&) {
  visit(op->cond);
  visit(op->body);
}
void IRVisitor::visit_store(const StoreStmt* op, const Stmt&) {
  for (const Expr& i : op->indices) visit(i);
  visit(op->value);
}
void IRVisitor::visit_let(const LetStmt* op, const Stmt&) { visit(op->value); }
void IRVisitor::visit_evaluate(const EvaluateStmt* op, const Stmt&) { visit(op->value); }
void IRVisitor::visit_copy(const CopyOp* op, const Stmt&) {
  visit_region(op->src);
  visit_region(op->dst);
}
void IRVisitor::visit_gemm(const GemmOp* op, const Stmt&) {
  visit_region(op->a);
  visit_region(op->b);
  visit_region(op->c);
}
void IRVisitor::visit_fill(const FillOp* op, const Stmt&) {
  visit_region(op->dst);
  visit(op->value);
}
void IRVisitor::visit_reduce(const ReduceOp* op, const Stmt&) {
  visit_region(op->src);
  visit_region(op->dst);
}
void IRVisitor::visit_atomic_add(const AtomicAddOp* op, const Stmt&) {
  visit_region(op->dst);
  if (op->src.buffer.defined()) visit_region(op->src);
  visit(op->value);
}
void IRVisitor::visit_print(const PrintOp* op, const Stmt&) {
  visit(op->value);
  if (op->region.buffer.defined()) visit_region(op->region);
}

// ---------------------------------------------------------------------------
// IRMutator

std::vector<Expr> IRMutator::mutate_all(const std::vector<Expr>& es, bool* changed) {
  std::vector<Expr> out;
  out.reserve(es.size());
  for (const Expr& e : es) {
    out.push_back(mutate(e));
    if (out.back().get() != e.get()) *changed = true;
  }
  return out;
}

Region IRMutator::mutate_region(const Region& r) {
  Region out{r.buffer, {}};
  out.ranges.reserve(r.ranges.size());
  for (const Range& range : r.ranges) out.ranges.push_back({mutate(range.min), mutate(range.extent)});
  return out;
}

namespace {

bool same(const Expr& a, const Expr& b) { return a.get() == b.get(); }
bool same(const Stmt& a, const Stmt& b) { return a.get() == b.get(); }
bool same(const Region& a, const Region& b) {
  // The node, not the id: a mutation may swap a buffer for the same buffer
  // with more set (Buffer::with_layout), and the op must then be rebuilt.
  if (a.buffer.get() != b.buffer.get() || a.ranges.size() != b.ranges.size()) return false;
  for (size_t i = 0; i < a.ranges.size(); ++i) {
    if (!same(a.ranges[i].min, b.ranges[i].min) || !same(a.ranges[i].extent, b.ranges[i].extent)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Expr IRMutator::visit_binary(const BinaryNode* op, const Expr& e) {
  Expr a = mutate(op->a), b = mutate(op->b);
  if (same(a, op->a) && same(b, op->b)) return e;
  return make_binary(op->kind, std::move(a), std::move(b));
}
Expr IRMutator::visit_not(const NotNode* op, const Expr& e) {
  Expr a = mutate(op->a);
  return same(a, op->a) ? e : logical_not(a);
}
Expr IRMutator::visit_bit_not(const BitNotNode* op, const Expr& e) {
  Expr a = mutate(op->a);
  return same(a, op->a) ? e : bitwise_not(a);
}
Expr IRMutator::visit_select(const SelectNode* op, const Expr& e) {
  Expr c = mutate(op->cond), t = mutate(op->true_value), f = mutate(op->false_value);
  if (same(c, op->cond) && same(t, op->true_value) && same(f, op->false_value)) return e;
  return select(c, t, f);
}
Expr IRMutator::visit_cast(const CastNode* op, const Expr& e) {
  Expr v = mutate(op->value);
  return same(v, op->value) ? e : cast(op->dtype, v);
}
Expr IRMutator::visit_call(const CallNode* op, const Expr& e) {
  bool changed = false;
  std::vector<Expr> args = mutate_all(op->args, &changed);
  return changed ? call_intrinsic(op->op, std::move(args)) : e;
}
Expr IRMutator::visit_load(const LoadNode* op, const Expr& e) {
  bool changed = false;
  std::vector<Expr> idx = mutate_all(op->indices, &changed);
  return changed ? load(op->buffer, std::move(idx)) : e;
}

Stmt IRMutator::visit_kernel(const KernelStmt* op, const Stmt& s) {
  bool changed = false;
  std::vector<Expr> grid = mutate_all(op->grid, &changed);
  Stmt body = mutate(op->body);
  if (!changed && same(body, op->body)) return s;
  return make_stmt<KernelStmt>(std::move(grid), op->block_vars, op->threads, op->thread_vars,
                               std::move(body), op->span, op->raster);
}
Stmt IRMutator::visit_seq(const SeqStmt* op, const Stmt& s) {
  std::vector<Stmt> out;
  out.reserve(op->stmts.size());
  bool changed = false;
  for (const Stmt& x : op->stmts) {
    out.push_back(mutate(x));
    if (!same(out.back(), x)) changed = true;
  }
  return changed ? make_stmt<SeqStmt>(std::move(out), op->span) : s;
}
Stmt IRMutator::visit_for(const ForStmt* op, const Stmt& s) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  Stmt body = mutate(op->body);
  if (same(mn, op->min) && same(ext, op->extent) && same(body, op->body)) return s;
  return make_stmt<ForStmt>(op->var, std::move(mn), std::move(ext), op->for_kind, op->stages,
                            std::move(body), op->span, op->schedule, op->origin);
}
Stmt IRMutator::visit_if(const IfStmt* op, const Stmt& s) {
  Expr c = mutate(op->cond);
  Stmt t = mutate(op->then_case), f = mutate(op->else_case);
  if (same(c, op->cond) && same(t, op->then_case) && same(f, op->else_case)) return s;
  return make_stmt<IfStmt>(std::move(c), std::move(t), std::move(f), op->span);
}
Stmt IRMutator::visit_while(const WhileStmt* op, const Stmt& s) {
  Expr c = mutate(op->cond);
  Stmt body = mutate(op->body);
  if (same(c, op->cond) && same(body, op->body)) return s;
  return make_stmt<WhileStmt>(std::move(c), std::move(body), op->span);
}
Stmt IRMutator::visit_store(const StoreStmt* op, const Stmt& s) {
  bool changed = false;
  std::vector<Expr> idx = mutate_all(op->indices, &changed);
  Expr v = mutate(op->value);
  if (!changed && same(v, op->value)) return s;
  return make_stmt<StoreStmt>(op->buffer, std::move(idx), std::move(v), op->span);
}
Stmt IRMutator::visit_let(const LetStmt* op, const Stmt& s) {
  Expr v = mutate(op->value);
  return same(v, op->value) ? s : make_stmt<LetStmt>(op->var, std::move(v), op->span);
}
Stmt IRMutator::visit_evaluate(const EvaluateStmt* op, const Stmt& s) {
  Expr v = mutate(op->value);
  return same(v, op->value) ? s : make_stmt<EvaluateStmt>(std::move(v), op->span);
}
Stmt IRMutator::visit_copy(const CopyOp* op, const Stmt& s) {
  Region src = mutate_region(op->src), dst = mutate_region(op->dst);
  if (same(src, op->src) && same(dst, op->dst)) return s;
  return make_stmt<CopyOp>(std::move(src), std::move(dst), op->span, op->disable_tma);
}
Stmt IRMutator::visit_gemm(const GemmOp* op, const Stmt& s) {
  Region a = mutate_region(op->a), b = mutate_region(op->b), c = mutate_region(op->c);
  if (same(a, op->a) && same(b, op->b) && same(c, op->c)) return s;
  return make_stmt<GemmOp>(std::move(a), std::move(b), std::move(c), op->trans_a, op->trans_b,
                           op->clear_accum, op->policy, op->span);
}
Stmt IRMutator::visit_fill(const FillOp* op, const Stmt& s) {
  Region dst = mutate_region(op->dst);
  Expr v = mutate(op->value);
  if (same(dst, op->dst) && same(v, op->value)) return s;
  return make_stmt<FillOp>(std::move(dst), std::move(v), op->span);
}
Stmt IRMutator::visit_reduce(const ReduceOp* op, const Stmt& s) {
  Region src = mutate_region(op->src), dst = mutate_region(op->dst);
  if (same(src, op->src) && same(dst, op->dst)) return s;
  return make_stmt<ReduceOp>(op->reduce_kind, std::move(src), std::move(dst), op->dim, op->clear,
                             op->span);
}
Stmt IRMutator::visit_atomic_add(const AtomicAddOp* op, const Stmt& s) {
  Region dst = mutate_region(op->dst);
  Region src = op->src.buffer.defined() ? mutate_region(op->src) : op->src;
  Expr v = mutate(op->value);
  if (same(dst, op->dst) && same(src, op->src) && same(v, op->value)) return s;
  return make_stmt<AtomicAddOp>(std::move(dst), std::move(src), std::move(v), op->span);
}
Stmt IRMutator::visit_print(const PrintOp* op, const Stmt& s) {
  Expr v = mutate(op->value);
  Region r = op->region.buffer.defined() ? mutate_region(op->region) : op->region;
  if (same(v, op->value) && same(r, op->region)) return s;
  return make_stmt<PrintOp>(std::move(v), std::move(r), op->message, op->span);
}

bool reads_var(const Expr& e, uint64_t var) {
  struct Finder : IRVisitor {
    uint64_t var = 0;
    bool found = false;
    void visit_var(const VarNode*, const Expr& v) override { found = found || v.var_id() == var; }
  } f;
  f.var = var;
  f.visit(e);
  return f.found;
}

bool reads_var(const Region& r, uint64_t var) {
  for (const Range& x : r.ranges) {
    if (reads_var(x.min, var) || reads_var(x.extent, var)) return true;
  }
  return false;
}

}  // namespace tilejit::ir
