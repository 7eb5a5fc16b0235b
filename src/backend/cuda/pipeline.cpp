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
  std::set<uint64_t> vars;
  std::set<uint64_t> let_vars;

  void touch(const ir::Region& r, bool write) {
    if (!r.buffer.defined()) return;
    accesses[r.buffer.id()] += 1;
    if (write) writes[r.buffer.id()] += 1;
  }
  void visit_var(const ir::VarNode*, const ir::Expr& e) override { vars.insert(e.var_id()); }
  void visit_load(const ir::LoadNode* op, const ir::Expr& e) override {
    accesses[op->buffer.id()] += 1;
    ir::IRVisitor::visit_load(op, e);
  }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    accesses[op->buffer.id()] += 1;
    writes[op->buffer.id()] += 1;
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
    touch(op->src, false);
    touch(op->dst, true);
    ir::IRVisitor::visit_copy(op, s);
  }
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) override {
    touch(op->a, false);
    touch(op->b, false);
    touch(op->c, true);
    ir::IRVisitor::visit_gemm(op, s);
  }
  void visit_fill(const ir::FillOp* op, const ir::Stmt& s) override {
    touch(op->dst, true);
    ir::IRVisitor::visit_fill(op, s);
  }
  void visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) override {
    touch(op->src, false);
    touch(op->dst, true);
    ir::IRVisitor::visit_reduce(op, s);
  }
  void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt& s) override {
    touch(op->src, false);
    touch(op->dst, true);
    ir::IRVisitor::visit_atomic_add(op, s);
  }
  void visit_print(const ir::PrintOp* op, const ir::Stmt& s) override {
    touch(op->region, false);
    ir::IRVisitor::visit_print(op, s);
  }
};

// The pipelined loops (outside T.Parallel nests).
struct Loops : ir::IRVisitor {
  std::vector<const ir::ForStmt*> found;
  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    if (op->for_kind == ir::ForKind::kParallel || op->for_kind == ir::ForKind::kVectorized) return;
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
    for (const ir::Stmt& s : flatten(loop->body)) {
      if (s.kind() != ir::StmtKind::kCopy) continue;
      const auto* copy = s.as<ir::CopyOp>();
      const ir::Buffer& dst = copy->dst.buffer;
      if (copy->src.buffer.scope() != ir::Scope::kGlobal || dst.scope() != ir::Scope::kShared ||
          !whole(copy->dst) || plan.stages.count(dst.id())) {
        continue;
      }
      if (all.writes[dst.id()] != 1 || all.accesses[dst.id()] != inside.accesses[dst.id()]) continue;
      Census src;
      for (const ir::Range& r : copy->src.ranges) {
        src.visit(r.min);
        src.visit(r.extent);
      }
      bool uses_body_var = false;
      for (uint64_t v : src.vars) uses_body_var = uses_body_var || inside.let_vars.count(v);
      if (uses_body_var) continue;
      copies.push_back(copy);
      plan.stages[dst.id()] = loop->stages;
    }
    if (!copies.empty()) plan.loops[loop] = std::move(copies);
  }
  return plan;
}

}  // namespace tilejit::cuda
