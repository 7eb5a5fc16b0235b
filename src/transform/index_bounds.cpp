#include "tilejit/transform/index_bounds.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/ir/affine.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::transform {
namespace {

using ir::Expr;
using ir::ExprKind;
using ir::IntRange;
using ir::LinearForm;

// Note [Index bounds]
// `for i in T.Parallel(64): f[i] = X[i]` with f a 32-element fragment writes
// past f in 32 of its iterations, which on the CPU overwrites the block's
// stack and on CUDA another tile. An error needs certainty that the access
// happens with an index out of range, so the check keeps to what it can
// decide exactly:
// - the index is affine in IR variables (Note [Exact affine ranges]); a
//   let's variable stands for its value;
// - every variable is a loop's with a constant min and extent, so all of
//   its values are reached; the loop runs them all, unless its body can
//   break or continue, whose accesses are then not checked (a `break` on
//   `i >= 32` guards what follows it); a thread index is such a variable,
//   over [0, threads): every thread runs every statement;
// - an if (a while, a select, the right side of && and ||) whose condition
//   is a comparison of one such variable with a constant, or a conjunction
//   of them, narrows that variable's range in the branch it guards (the
//   other branch takes the negation where it is again of that form); any
//   other condition may be what keeps the access in bounds (`bx * 64 + i <
//   n`, `tx % 2 == 0`), and the branch is not checked;
// - a loop with a symbolic extent, such as a K loop, is taken to run: an
//   access in it is checked over the variables it does know.
// Indices that are constants are the verifier's (its own message); anything
// else may be checked at run time with TILEJIT_DEBUG_BOUNDS.

// How a condition bears on the variables' ranges in the branch it guards.
enum class Narrowed { kRanges, kDead, kUnknown };

bool has_jump(const ir::Stmt& s) {
  struct Finder : ir::IRVisitor {
    bool found = false;
    void visit_break(const ir::BreakStmt*, const ir::Stmt&) override { found = true; }
    void visit_continue(const ir::ContinueStmt*, const ir::Stmt&) override { found = true; }
  } f;
  f.visit(s);
  return f.found;
}

// The comparison that holds when `kind` does not.
ExprKind negate(ExprKind kind) {
  switch (kind) {
    case ExprKind::kLT: return ExprKind::kGE;
    case ExprKind::kLE: return ExprKind::kGT;
    case ExprKind::kGT: return ExprKind::kLE;
    case ExprKind::kGE: return ExprKind::kLT;
    case ExprKind::kEQ: return ExprKind::kNE;
    default: return ExprKind::kEQ;  // kNE
  }
}

class BoundsChecker : public ir::IRVisitor {
 public:
  explicit BoundsChecker(const ir::PrimFunc& f) : func_(f) {}

 private:
  // --- the accesses
  void check(const ir::Buffer& b, const std::vector<Expr>& indices) {
    if (b.scope() == ir::Scope::kGlobal) return;  // predicated (transform::predicate)
    for (size_t d = 0; d < indices.size() && d < b.shape().size(); ++d) {
      const Expr& dim = b.shape()[d];
      LinearForm form;
      IntRange r;
      if (!dim.is_const() || !as_affine(indices[d], &form) || form.terms.empty() ||
          !ir::affine_range(form, ranges_, &r)) {
        continue;
      }
      if (TILEJIT_LIKELY(r.lo >= 0 && r.hi < dim.int_value())) continue;
      TILEJIT_THROW(kValueError)
          << ir::diagnostic_prefix(span_, func_.name, op_) << "index " << ir::to_string(indices[d])
          << (r.lo == r.hi ? " takes the value " + std::to_string(r.lo)
                           : " takes the values " + std::to_string(r.lo) + " to " +
                                 std::to_string(r.hi))
          << ", but dimension " << d << " of " << b.name() << " " << ir::shape_string(b.shape())
          << " has extent " << dim.int_value();
    }
  }

  bool as_affine(const Expr& e, LinearForm* out) const {
    return ir::as_affine(
        e,
        [this](uint64_t id) -> const LinearForm* {
          auto it = lets_.find(id);
          return it == lets_.end() ? nullptr : &it->second;
        },
        out);
  }

  // --- conditions
  // Narrows ranges_ by `cond` (or by its negation when !holds).
  Narrowed narrow(const Expr& cond, bool holds) {
    switch (cond.kind()) {
      case ExprKind::kNot: return narrow(cond.as<ir::NotNode>()->a, !holds);
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        // a && b holds, or a || b fails: both sides are facts.
        if ((cond.kind() == ExprKind::kAnd) != holds) return Narrowed::kUnknown;
        const Narrowed a = narrow(cond.a(), holds);
        if (a != Narrowed::kRanges) return a;
        return narrow(cond.b(), holds);
      }
      case ExprKind::kLT:
      case ExprKind::kLE:
      case ExprKind::kGT:
      case ExprKind::kGE:
      case ExprKind::kEQ:
      case ExprKind::kNE: return compare(holds ? cond.kind() : negate(cond.kind()), cond.a(), cond.b());
      default: return Narrowed::kUnknown;
    }
  }

  // `a kind b` as a fact about one variable: k * v + c kind 0.
  Narrowed compare(ExprKind kind, const Expr& a, const Expr& b) {
    LinearForm x, y;
    if (!as_affine(a, &x) || !as_affine(b, &y)) return Narrowed::kUnknown;
    if (__builtin_sub_overflow(x.constant, y.constant, &x.constant)) return Narrowed::kUnknown;
    for (const auto& [v, k] : y.terms) {
      int64_t& t = x.terms[v];
      if (__builtin_sub_overflow(t, k, &t)) return Narrowed::kUnknown;
      if (t == 0) x.terms.erase(v);
    }
    const int64_t c = x.constant;
    if (x.terms.empty()) {
      const bool holds = kind == ExprKind::kLT   ? c < 0
                         : kind == ExprKind::kLE ? c <= 0
                         : kind == ExprKind::kGT ? c > 0
                         : kind == ExprKind::kGE ? c >= 0
                         : kind == ExprKind::kEQ ? c == 0
                                                 : c != 0;
      return holds ? Narrowed::kRanges : Narrowed::kDead;
    }
    if (x.terms.size() != 1 || kind == ExprKind::kNE) return Narrowed::kUnknown;
    // Not a structured binding: lambdas below capture k (clang before 16
    // refuses to capture a binding).
    const uint64_t v = x.terms.begin()->first;
    const int64_t k = x.terms.begin()->second;
    auto it = ranges_.find(v);
    if (it == ranges_.end()) return Narrowed::kUnknown;
    IntRange& r = it->second;
    // k * v + c <= bound, as a bound on v (floor or ceil by the sign of k).
    auto at_most = [&](int64_t bound) {
      int64_t rhs;
      if (__builtin_sub_overflow(bound, c, &rhs)) return false;
      if (k > 0) {
        r.hi = std::min(r.hi, ir::floordiv_int(rhs, k));
      } else {
        r.lo = std::max(r.lo, ir::ceildiv_int(rhs, k));
      }
      return true;
    };
    auto at_least = [&](int64_t bound) {
      int64_t rhs;
      if (__builtin_sub_overflow(bound, c, &rhs)) return false;
      if (k > 0) {
        r.lo = std::max(r.lo, ir::ceildiv_int(rhs, k));
      } else {
        r.hi = std::min(r.hi, ir::floordiv_int(rhs, k));
      }
      return true;
    };
    bool ok = true;
    switch (kind) {
      case ExprKind::kLT: ok = at_most(-1); break;
      case ExprKind::kLE: ok = at_most(0); break;
      case ExprKind::kGT: ok = at_least(1); break;
      case ExprKind::kGE: ok = at_least(0); break;
      default: ok = at_most(0) && at_least(0); break;  // kEQ
    }
    if (!ok) return Narrowed::kUnknown;
    return r.empty() ? Narrowed::kDead : Narrowed::kRanges;
  }

  // Visits what `cond` (or its negation) guards, with the ranges it implies;
  // nothing when the branch cannot run or the condition is not understood.
  template <typename Visit>
  void guarded(const Expr& cond, bool holds, Visit&& visit) {
    const std::map<uint64_t, IntRange> saved = ranges_;
    if (narrow(cond, holds) == Narrowed::kRanges) visit();
    ranges_ = saved;
  }

  // --- expressions
  void visit_load(const ir::LoadNode* op, const Expr& e) override {
    check(op->buffer, op->indices);
    IRVisitor::visit_load(op, e);
  }
  void visit_select(const ir::SelectNode* op, const Expr&) override {
    visit(op->cond);
    guarded(op->cond, true, [&] { visit(op->true_value); });
    guarded(op->cond, false, [&] { visit(op->false_value); });
  }
  void visit_binary(const ir::BinaryNode* op, const Expr& e) override {
    if (op->kind != ExprKind::kAnd && op->kind != ExprKind::kOr) {
      IRVisitor::visit_binary(op, e);
      return;
    }
    // The right side runs only where the left did not decide (C++'s && and ||).
    visit(op->a);
    guarded(op->a, op->kind == ExprKind::kAnd, [&] { visit(op->b); });
  }

  // --- statements
  // The statement whose span and op an error names.
  struct At {
    At(BoundsChecker* c, const ir::Span& s, std::string op)
        : c_(c), span_(c->span_), op_(std::move(c->op_)) {
      c->span_ = s;
      c->op_ = std::move(op);
    }
    ~At() {
      c_->span_ = std::move(span_);
      c_->op_ = std::move(op_);
    }
    BoundsChecker* c_;
    ir::Span span_;
    std::string op_;
  };

  void visit_kernel(const ir::KernelStmt* op, const ir::Stmt& s) override {
    At at(this, op->span, "T.Kernel");
    // Every thread runs the body (Note [Thread semantics]): a thread index
    // takes all its values, as a loop variable does.
    for (size_t d = 0; d < op->thread_vars.size() && d < op->threads.size(); ++d) {
      ranges_[op->thread_vars[d].var_id()] = {0, int64_t(op->threads[d]) - 1};
    }
    IRVisitor::visit_kernel(op, s);
    for (const ir::Expr& v : op->thread_vars) ranges_.erase(v.var_id());
  }
  void visit_for(const ir::ForStmt* op, const ir::Stmt&) override {
    At at(this, op->span, "for");
    visit(op->min);
    visit(op->extent);
    if (has_jump(op->body)) return;  // Note [Index bounds]
    if (!op->min.is_const() || !op->extent.is_const()) {
      visit(op->body);
      return;
    }
    if (op->extent.int_value() <= 0) return;  // never runs
    int64_t last;
    if (__builtin_add_overflow(op->min.int_value(), op->extent.int_value() - 1, &last)) return;
    ranges_[op->var.var_id()] = {op->min.int_value(), last};
    visit(op->body);
    ranges_.erase(op->var.var_id());
  }
  void visit_if(const ir::IfStmt* op, const ir::Stmt&) override {
    At at(this, op->span, "if");
    visit(op->cond);
    guarded(op->cond, true, [&] { visit(op->then_case); });
    guarded(op->cond, false, [&] { visit(op->else_case); });
  }
  void visit_while(const ir::WhileStmt* op, const ir::Stmt&) override {
    At at(this, op->span, "while");
    visit(op->cond);
    if (has_jump(op->body)) return;
    guarded(op->cond, true, [&] { visit(op->body); });
  }
  void visit_let(const ir::LetStmt* op, const ir::Stmt& s) override {
    At at(this, op->span, "let");
    IRVisitor::visit_let(op, s);
    LinearForm form;
    if (as_affine(op->value, &form)) lets_[op->var.var_id()] = std::move(form);
  }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    At at(this, op->span, "store");
    check(op->buffer, op->indices);
    IRVisitor::visit_store(op, s);
  }
  void visit_evaluate(const ir::EvaluateStmt* op, const ir::Stmt& s) override {
    At at(this, op->span, "evaluate");
    IRVisitor::visit_evaluate(op, s);
  }
  void visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override {
    At at(this, op->span, "T.copy");
    IRVisitor::visit_copy(op, s);
  }
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) override {
    At at(this, op->span, "T.gemm");
    IRVisitor::visit_gemm(op, s);
  }
  void visit_fill(const ir::FillOp* op, const ir::Stmt& s) override {
    At at(this, op->span, "T.fill");
    IRVisitor::visit_fill(op, s);
  }
  void visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) override {
    At at(this, op->span, std::string("T.reduce_") + ir::reduce_kind_name(op->reduce_kind));
    IRVisitor::visit_reduce(op, s);
  }
  void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt& s) override {
    At at(this, op->span, "T.atomic_add");
    IRVisitor::visit_atomic_add(op, s);
  }
  void visit_print(const ir::PrintOp* op, const ir::Stmt& s) override {
    At at(this, op->span, "T.print");
    IRVisitor::visit_print(op, s);
  }

  const ir::PrimFunc& func_;
  std::map<uint64_t, IntRange> ranges_;  // loop variables of constant bounds, narrowed
  std::map<uint64_t, LinearForm> lets_;  // let variables of affine value
  ir::Span span_;
  std::string op_ = "expression";
};

}  // namespace

void check_index_bounds(const ir::PrimFunc& func) {
  const ir::TileBody* body = func.tile();
  if (body == nullptr) return;
  BoundsChecker c(func);
  c.visit(body->stmt);
}

}  // namespace tilejit::transform
