// Note [Thread-exclusive writes] in exclusive_writes.h.
#include "backend/cuda/exclusive_writes.h"

#include <set>

#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {

std::optional<int64_t> ExclusiveWrites::key(const ir::StoreStmt& op,
                                            const std::map<uint64_t, ir::IntRange>& loops) const {
  if (!uniformity->variant(&op)) return kOneThread;
  if (thread_var == 0) return std::nullopt;
  const std::vector<ir::Expr>& shape = op.buffer.shape();
  if (shape.size() != op.indices.size()) return std::nullopt;
  ir::Expr flat;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d].is_const()) return std::nullopt;
    flat = d == 0 ? op.indices[0] : flat * shape[d] + op.indices[d];
  }
  ir::LinearForm form;
  if (!ir::as_affine(flat, [](uint64_t) { return nullptr; }, &form)) return std::nullopt;
  auto t = form.terms.find(thread_var);
  if (t == form.terms.end() || t->second <= 0) return std::nullopt;
  const int64_t c = t->second;
  form.terms.erase(t);
  ir::IntRange rest;
  if (!ir::affine_range(form, loops, &rest) || rest.lo < 0 || rest.hi >= c) return std::nullopt;
  return c;
}

std::map<uint64_t, int64_t> ExclusiveWrites::keys(
    const ir::Stmt& body, const std::map<uint64_t, ir::IntRange>& loops) const {
  struct Walk : ir::IRVisitor {
    const ExclusiveWrites* self = nullptr;
    std::map<uint64_t, ir::IntRange> loops;
    std::map<uint64_t, int64_t> keys;
    std::set<uint64_t> mixed;
    int parallel = 0, divergent = 0;
    void no_key(const ir::Region& r) {
      if (!r.buffer.defined()) return;
      mixed.insert(r.buffer.id());
      keys.erase(r.buffer.id());
    }
    // A tile op's writes are every thread's.
    void visit_copy(const ir::CopyOp* op, const ir::Stmt&) override { no_key(op->dst); }
    void visit_gemm(const ir::GemmOp* op, const ir::Stmt&) override { no_key(op->c); }
    void visit_fill(const ir::FillOp* op, const ir::Stmt&) override { no_key(op->dst); }
    void visit_reduce(const ir::ReduceOp* op, const ir::Stmt&) override { no_key(op->dst); }
    void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt&) override { no_key(op->dst); }
    // Under a condition some threads take and others not, a store no
    // thread's value changes is made by each thread that takes it.
    void visit_if(const ir::IfStmt* op, const ir::Stmt& s) override {
      const int d = self->uniformity->divergent(s) ? 1 : 0;
      divergent += d;
      ir::IRVisitor::visit_if(op, s);
      divergent -= d;
    }
    void visit_while(const ir::WhileStmt* op, const ir::Stmt& s) override {
      const int d = self->uniformity->divergent(s) ? 1 : 0;
      divergent += d;
      ir::IRVisitor::visit_while(op, s);
      divergent -= d;
    }
    void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
      // A T.Parallel nest spreads its iterations over the threads: its
      // stores' elements are no one thread's.
      parallel += op->for_kind == ir::ForKind::kParallel;
      const int d = self->uniformity->divergent(s) ? 1 : 0;
      divergent += d;
      const bool known = op->min.is_const() && op->extent.is_const();
      if (known) {
        loops[op->var.var_id()] = {op->min.int_value(),
                                   op->min.int_value() + op->extent.int_value() - 1};
      }
      ir::IRVisitor::visit_for(op, s);
      if (known) loops.erase(op->var.var_id());
      parallel -= op->for_kind == ir::ForKind::kParallel;
      divergent -= d;
    }
    void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
      const uint64_t id = op->buffer.id();
      std::optional<int64_t> k = parallel > 0 ? std::nullopt : self->key(*op, loops);
      if (divergent > 0 && k == kOneThread) k = std::nullopt;
      if (!k || mixed.count(id)) {
        mixed.insert(id);
        keys.erase(id);
      } else if (auto [it, added] = keys.emplace(id, *k); !added && it->second != *k) {
        mixed.insert(id);
        keys.erase(it);
      }
      ir::IRVisitor::visit_store(op, s);
    }
  } walk;
  walk.self = this;
  walk.loops = loops;
  walk.visit(body);
  return walk.keys;
}

}  // namespace tilejit::cuda
