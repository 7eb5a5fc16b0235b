// Note [Software pipelining] in pipeline.h.
#include "backend/cuda/pipeline.h"

#include <set>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

// Counts each buffer's writes and accesses, and the variables expressions use.
struct Census : ir::IRVisitor {
  std::map<uint64_t, int> writes, accesses;
  std::map<uint64_t, ir::Span> first_write;
  std::set<uint64_t> vars;
  std::set<uint64_t> let_vars;  // lets and loop variables defined here
  std::set<uint64_t> allocs;    // buffers declared here

  int writes_of(uint64_t id) const {
    auto it = writes.find(id);
    return it == writes.end() ? 0 : it->second;
  }
  void touch(const ir::Region& r, bool write, const ir::Span& span) {
    if (!r.buffer.defined()) return;
    accesses[r.buffer.id()] += 1;
    if (write) wrote(r.buffer.id(), span);
  }
  void wrote(uint64_t id, const ir::Span& span) {
    writes[id] += 1;
    first_write.emplace(id, span);
  }
  void visit_var(const ir::VarNode*, const ir::Expr& e) override { vars.insert(e.var_id()); }
  void visit_load(const ir::LoadNode* op, const ir::Expr& e) override {
    accesses[op->buffer.id()] += 1;
    ir::IRVisitor::visit_load(op, e);
  }
  void visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) override {
    allocs.insert(op->buffer.id());
  }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    accesses[op->buffer.id()] += 1;
    wrote(op->buffer.id(), op->span);
    ir::IRVisitor::visit_store(op, s);
  }
  void visit_let(const ir::LetStmt* op, const ir::Stmt& s) override {
    let_vars.insert(op->var.var_id());
    ir::IRVisitor::visit_let(op, s);
  }
  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    let_vars.insert(op->var.var_id());
    ir::IRVisitor::visit_for(op, s);
  }
  void visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override {
    touch(op->src, false, op->span);
    touch(op->dst, true, op->span);
    ir::IRVisitor::visit_copy(op, s);
  }
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) override {
    touch(op->a, false, op->span);
    touch(op->b, false, op->span);
    touch(op->c, true, op->span);
    ir::IRVisitor::visit_gemm(op, s);
  }
  void visit_fill(const ir::FillOp* op, const ir::Stmt& s) override {
    touch(op->dst, true, op->span);
    ir::IRVisitor::visit_fill(op, s);
  }
  void visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) override {
    touch(op->src, false, op->span);
    touch(op->dst, true, op->span);
    ir::IRVisitor::visit_reduce(op, s);
  }
  void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt& s) override {
    touch(op->src, false, op->span);
    touch(op->dst, true, op->span);
    ir::IRVisitor::visit_atomic_add(op, s);
  }
  void visit_print(const ir::PrintOp* op, const ir::Stmt& s) override {
    touch(op->region, false, op->span);
    ir::IRVisitor::visit_print(op, s);
  }
};

// A pipelined loop's body as the prefetch of a copy in it sees it: rewrites
// an expression read at one of the body's top-level statements into what
// the prefetch computes for a later iteration (Note [Prefetched
// addresses]), or says what prevents it.
class Ahead final : public ir::IRMutator {
 public:
  Ahead(const ir::ForStmt& loop, const std::vector<ir::Stmt>& body, const Census& kernel,
        const Census& inside)
      : loop_var_(loop.var.var_id()), body_(body), kernel_(kernel), inside_(inside) {
    for (size_t i = 0; i < body.size(); ++i) {
      per_stmt_.emplace_back().visit(body[i]);
      if (const auto* let = body[i].as<ir::LetStmt>()) lets_[let->var.var_id()] = i;
    }
  }

  /// `e`, read at body[at], as the prefetch computes it; `e` itself when it
  /// reads nothing the loop computes, undefined when blocked() says why not.
  ir::Expr rewrite(const ir::Expr& e, size_t at) {
    blocked_.clear();
    via_.clear();
    at_ = at;
    ir::Expr out = mutate(e);
    return blocked_.empty() ? out : ir::Expr();
  }
  /// Why the last rewrite() failed; empty when it did not.
  const std::string& blocked() const { return blocked_; }

 protected:
  ir::Expr visit_var(const ir::VarNode*, const ir::Expr& e) override {
    const uint64_t id = e.var_id();
    if (id == loop_var_ || !inside_.let_vars.count(id)) return e;  // bound ahead, or invariant
    auto let = lets_.find(id);
    if (let == lets_.end() || let->second >= at_) {
      block("'" + e.var_name() + "', which the loop defines where the prefetch cannot see it");
      return e;
    }
    const ir::Stmt& def = body_[let->second];
    return recompute(e.var_name(), def.as<ir::LetStmt>()->value, let->second, def.span());
  }

  ir::Expr visit_load(const ir::LoadNode* op, const ir::Expr& e) override {
    const ir::Buffer& b = op->buffer;
    const std::string name = "'" + b.name() + "'";
    if (b.scope() == ir::Scope::kGlobal) {
      if (kernel_.writes_of(b.id()) > 0) block(name + ", which the kernel writes");
      return ir::IRMutator::visit_load(op, e);
    }
    if (inside_.writes_of(b.id()) == 0 && !inside_.allocs.count(b.id())) {
      return ir::IRMutator::visit_load(op, e);  // the same in every iteration
    }
    // The last write of the element before body[at_]: a top-level store of
    // it, which the prefetch recomputes.
    bool constant = b.scope() == ir::Scope::kLocal;
    for (const ir::Expr& i : op->indices) constant = constant && i.is_const();
    for (size_t i = at_; constant && i-- > 0;) {
      if (per_stmt_[i].writes_of(b.id()) == 0) continue;
      const auto* store = body_[i].as<ir::StoreStmt>();
      if (store == nullptr) return loop_write(name, per_stmt_[i].first_write.at(b.id()), e);
      bool same = true, known = true;
      for (size_t d = 0; d < op->indices.size(); ++d) {
        const ir::Expr& x = store->indices[d];
        same = same && x.is_const() && x.int_value() == op->indices[d].int_value();
        known = known && x.is_const();
      }
      if (same) return recompute(b.name(), ir::cast(b.dtype(), store->value), i, store->span);
      if (!known) return loop_write(name, store->span, e);
      // A store of another element: the loaded one is untouched.
    }
    return loop_write(name, inside_.first_write.count(b.id()) ? inside_.first_write.at(b.id())
                                                              : ir::Span{},
                      e);
  }

 private:
  ir::Expr loop_write(const std::string& name, const ir::Span& where, const ir::Expr& e) {
    block(name + ", which the loop writes" + (where.empty() ? "" : " at " + where.str()) +
              " in a way the prefetch cannot recompute for a later iteration (it can recompute "
              "a let or a store to a local buffer at the loop's top level before the copy)");
    return e;
  }
  // `value`, defined at body[at] for `name`, rewritten in its turn.
  ir::Expr recompute(const std::string& name, const ir::Expr& value, size_t at,
                     const ir::Span& where = {}) {
    const size_t saved = at_;
    at_ = at;
    via_.push_back("'" + name + "'" + (where.empty() ? "" : " (" + where.str() + ")"));
    ir::Expr out = mutate(value);
    via_.pop_back();
    at_ = saved;
    return out;
  }
  void block(const std::string& what) {
    if (!blocked_.empty()) return;  // the first reason is the one reported
    blocked_ = "its source address reads ";
    for (const std::string& v : via_) blocked_ += v + ", which reads ";
    blocked_ += what;
  }

  uint64_t loop_var_;
  const std::vector<ir::Stmt>& body_;
  const Census& kernel_;
  const Census& inside_;
  std::vector<Census> per_stmt_;
  std::map<uint64_t, size_t> lets_;  // the body's top-level lets: their statements
  size_t at_ = 0;
  std::vector<std::string> via_;  // the values being recomputed, outermost first
  std::string blocked_;
};

// The pipelined loops (outside T.Parallel nests).
struct Loops : ir::IRVisitor {
  std::vector<const ir::ForStmt*> found;
  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    if (op->for_kind == ir::ForKind::kParallel) return;
    if (op->for_kind == ir::ForKind::kPipelined && op->stages >= 2) found.push_back(op);
    ir::IRVisitor::visit_for(op, s);
  }
};

bool whole(const ir::Region& r) {
  if (r.is_whole()) return true;
  const std::vector<ir::Expr>& shape = r.buffer.shape();
  for (size_t d = 0; d < shape.size() && d < r.ranges.size(); ++d) {
    const ir::Range& x = r.ranges[d];
    if (!x.min.is_const() || x.min.int_value() != 0 || !x.extent.is_const() ||
        !shape[d].is_const() || x.extent.int_value() != shape[d].int_value()) {
      return false;
    }
  }
  return r.ranges.size() == shape.size();
}

}  // namespace

std::vector<ir::Stmt> flatten(const ir::Stmt& body) {
  std::vector<ir::Stmt> out;
  if (!body.defined()) return out;
  if (body.kind() != ir::StmtKind::kSeq) return {body};
  for (const ir::Stmt& s : body.as<ir::SeqStmt>()->stmts) {
    for (ir::Stmt& x : flatten(s)) out.push_back(std::move(x));
  }
  return out;
}

PipelinePlan plan_pipelines(const ir::KernelStmt& kernel) {
  PipelinePlan plan;
  Loops loops;
  loops.visit(kernel.body);
  if (loops.found.empty()) return plan;
  Census all;
  all.visit(kernel.body);
  for (const ir::ForStmt* loop : loops.found) {
    Census inside;
    inside.visit(loop->body);
    std::vector<const ir::CopyOp*> copies;
    const std::vector<ir::Stmt> body = flatten(loop->body);
    Ahead ahead(*loop, body, all, inside);
    for (size_t at = 0; at < body.size(); ++at) {
      if (body[at].kind() != ir::StmtKind::kCopy) continue;
      const auto* copy = body[at].as<ir::CopyOp>();
      const ir::Buffer& dst = copy->dst.buffer;
      if (copy->src.buffer.scope() != ir::Scope::kGlobal || dst.scope() != ir::Scope::kShared ||
          !whole(copy->dst) || plan.stages.count(dst.id())) {
        continue;
      }
      if (all.writes[dst.id()] != 1 || all.accesses[dst.id()] != inside.accesses[dst.id()]) continue;
      // Note [Prefetched addresses].
      std::vector<ir::Range> ranges;
      bool changed = false;
      for (const ir::Range& r : copy->src.ranges) {
        ranges.push_back({ahead.rewrite(r.min, at), {}});
        if (!ahead.blocked().empty()) break;
        ranges.back().extent = ahead.rewrite(r.extent, at);
        if (!ahead.blocked().empty()) break;
        changed = changed || ranges.back().min.get() != r.min.get() ||
                  ranges.back().extent.get() != r.extent.get();
      }
      if (!ahead.blocked().empty()) {
        plan.diagnostics.push_back(
            {"T.copy", copy->span, "not pipelined, copied synchronously in each iteration",
             ahead.blocked()});
        continue;
      }
      if (changed) {
        plan.ahead[copy] = ir::make_stmt<ir::CopyOp>(ir::Region{copy->src.buffer, ranges},
                                                     copy->dst, copy->span, copy->disable_tma);
      }
      copies.push_back(copy);
      plan.stages[dst.id()] = loop->stages;
    }
    if (!copies.empty()) plan.loops[loop] = std::move(copies);
  }
  return plan;
}

}  // namespace tilejit::cuda
