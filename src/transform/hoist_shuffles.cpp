// hoist_shuffles: see Note [Warp shuffles] in hoist_shuffles.h.
#include "tilejit/transform/hoist_shuffles.h"

#include <string>
#include <utility>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::transform {
namespace {

using ir::Expr;
using ir::Stmt;

struct Finder : ir::IRVisitor {
  bool found = false;
  void visit_call(const ir::CallNode* op, const Expr& e) override {
    if (ir::is_shuffle(op->op)) found = true;
    ir::IRVisitor::visit_call(op, e);
  }
};

class Hoister : public ir::IRMutator {
 public:
  explicit Hoister(std::string func) : func_(std::move(func)) {}

 private:
  // A shuffle, its arguments hoisted first, becomes a let's variable.
  Expr visit_call(const ir::CallNode* op, const Expr& e) override {
    Expr call = ir::IRMutator::visit_call(op, e);
    if (!ir::is_shuffle(op->op)) return call;
    const Expr var = ir::make_var(std::string("shfl"), call.dtype());
    pending_.push_back(ir::make_stmt<ir::LetStmt>(var, call, span_));
    return var;
  }

  // `s` preceded by the lets of the shuffles that mutating it made.
  Stmt with_lets(std::vector<Stmt> lets, Stmt s) {
    if (lets.empty()) return s;
    const ir::Span span = s.span();
    lets.push_back(std::move(s));
    return ir::seq(std::move(lets), span);
  }

  std::vector<Stmt> take() { return std::exchange(pending_, {}); }

  // A statement whose expressions are evaluated once, before it acts.
  template <typename Base>
  Stmt leaf(const Stmt& s, Base base) {
    span_ = s.span();
    Stmt out = base();
    return with_lets(take(), std::move(out));
  }

  Stmt visit_store(const ir::StoreStmt* op, const Stmt& s) override {
    return leaf(s, [&] { return ir::IRMutator::visit_store(op, s); });
  }
  Stmt visit_evaluate(const ir::EvaluateStmt* op, const Stmt& s) override {
    return leaf(s, [&] { return ir::IRMutator::visit_evaluate(op, s); });
  }
  Stmt visit_copy(const ir::CopyOp* op, const Stmt& s) override {
    return leaf(s, [&] { return ir::IRMutator::visit_copy(op, s); });
  }
  Stmt visit_gemm(const ir::GemmOp* op, const Stmt& s) override {
    return leaf(s, [&] { return ir::IRMutator::visit_gemm(op, s); });
  }
  Stmt visit_fill(const ir::FillOp* op, const Stmt& s) override {
    return leaf(s, [&] { return ir::IRMutator::visit_fill(op, s); });
  }
  Stmt visit_reduce(const ir::ReduceOp* op, const Stmt& s) override {
    return leaf(s, [&] { return ir::IRMutator::visit_reduce(op, s); });
  }
  Stmt visit_atomic_add(const ir::AtomicAddOp* op, const Stmt& s) override {
    return leaf(s, [&] { return ir::IRMutator::visit_atomic_add(op, s); });
  }
  Stmt visit_print(const ir::PrintOp* op, const Stmt& s) override {
    return leaf(s, [&] { return ir::IRMutator::visit_print(op, s); });
  }

  Stmt visit_let(const ir::LetStmt* op, const Stmt& s) override {
    span_ = s.span();
    const auto* call = op->value.as<ir::CallNode>();
    if (call == nullptr || !ir::is_shuffle(call->op)) {
      return leaf(s, [&] { return ir::IRMutator::visit_let(op, s); });
    }
    // Already a shuffle's own let: only its arguments' shuffles move.
    bool changed = false;
    std::vector<Expr> args = mutate_all(call->args, &changed);
    if (!changed) return s;
    return with_lets(take(), ir::make_stmt<ir::LetStmt>(
                                 op->var, ir::call_intrinsic(call->op, std::move(args)), s.span()));
  }

  Stmt visit_if(const ir::IfStmt* op, const Stmt& s) override {
    if (!holds_shuffle(op->cond)) return ir::IRMutator::visit_if(op, s);
    span_ = s.span();
    const Expr cond = mutate(op->cond);
    std::vector<Stmt> lets = take();
    const Stmt then_case = mutate(op->then_case);
    const Stmt else_case = mutate(op->else_case);
    if (cond.get() == op->cond.get() && then_case.get() == op->then_case.get() &&
        else_case.get() == op->else_case.get()) {
      return s;
    }
    return with_lets(std::move(lets),
                     ir::make_stmt<ir::IfStmt>(cond, then_case, else_case, s.span()));
  }

  Stmt visit_for(const ir::ForStmt* op, const Stmt& s) override {
    if (!holds_shuffle(op->min) && !holds_shuffle(op->extent)) {
      return ir::IRMutator::visit_for(op, s);
    }
    // The bounds' shuffles, evaluated once before the loop, as the bounds are.
    span_ = s.span();
    const Expr min = mutate(op->min);
    const Expr extent = mutate(op->extent);
    std::vector<Stmt> lets = take();
    const Stmt body = mutate(op->body);
    return with_lets(std::move(lets), ir::make_stmt<ir::ForStmt>(op->var, min, extent, op->for_kind,
                                                                 op->stages, body, s.span(),
                                                                 op->schedule, op->origin));
  }

  Stmt visit_while(const ir::WhileStmt* op, const Stmt& s) override {
    if (holds_shuffle(op->cond)) {
      struct Name : ir::IRVisitor {
        const char* name = nullptr;
        void visit_call(const ir::CallNode* c, const Expr& e) override {
          if (name == nullptr && ir::is_shuffle(c->op)) name = ir::intrinsic_name(c->op);
          ir::IRVisitor::visit_call(c, e);
        }
      } n;
      n.visit(op->cond);
      TILEJIT_THROW(kValueError)
          << ir::diagnostic_prefix(s.span(), func_, "while") << "the condition holds T."
          << n.name << ", a warp shuffle, which every lane must run together "
             "at each test; assign the shuffle's result to a T.alloc_var before the loop and at "
             "the end of its body, and test that";
    }
    return ir::IRMutator::visit_while(op, s);
  }

  Stmt visit_seq(const ir::SeqStmt* op, const Stmt& s) override {
    // Lets made here join the enclosing sequence (Note [Declarations in a
    // sequence]): a user's let whose value held a shuffle stays in scope.
    bool changed = false;
    std::vector<Stmt> out;
    for (const Stmt& x : op->stmts) {
      Stmt y = mutate(x);
      if (y.get() != x.get()) changed = true;
      if (y.get() != x.get() && y.defined() && y.kind() == ir::StmtKind::kSeq &&
          x.kind() != ir::StmtKind::kSeq) {
        for (const Stmt& z : y.as<ir::SeqStmt>()->stmts) out.push_back(z);
      } else {
        out.push_back(std::move(y));
      }
    }
    return changed ? ir::seq(std::move(out), s.span()) : s;
  }

  std::string func_;
  ir::Span span_;
  std::vector<Stmt> pending_;
};

}  // namespace

bool holds_shuffle(const Expr& e) {
  Finder f;
  f.visit(e);
  return f.found;
}

bool holds_shuffle(const Stmt& s) {
  Finder f;
  f.visit(s);
  return f.found;
}

const ir::CallNode* shuffle_of(const ir::LetStmt& let) {
  const auto* call = let.value.as<ir::CallNode>();
  return call != nullptr && ir::is_shuffle(call->op) ? call : nullptr;
}

Stmt first_shuffle(const Stmt& s) {
  struct First : ir::IRVisitor {
    Stmt found;
    void visit_let(const ir::LetStmt* op, const Stmt& st) override {
      if (!found.defined() && shuffle_of(*op) != nullptr) found = st;
      ir::IRVisitor::visit_let(op, st);
    }
  } f;
  f.visit(s);
  return f.found;
}

ir::PrimFunc hoist_shuffles(const ir::PrimFunc& func) {
  const ir::TileBody* tile = func.tile();
  if (tile == nullptr || !holds_shuffle(tile->stmt)) return func;
  ir::PrimFunc out = func;
  ir::TileBody body = *tile;
  body.stmt = Hoister(func.name).mutate(tile->stmt);
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::transform
