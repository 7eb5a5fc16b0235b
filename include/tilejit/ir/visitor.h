// Walks over the IR: the one dispatch on ExprKind and StmtKind.
//
// ExprFunctor<R> / StmtFunctor<R> hold the only switch over the kinds; a walk
// derives from them and overrides the visit_* of the nodes it handles (the
// default of each is unhandled(), an InternalError naming the kind, so a walk
// over integer shape expressions need not spell out loads). IRVisitor and
// IRMutator are the usual pair on top: IRVisitor recurses into every child;
// IRMutator rebuilds a node only when a child changed, and returns the node
// itself otherwise (so an identity mutation allocates nothing).
//
// Binary kinds share visit_binary (op->kind names the operator).
#pragma once

#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::ir {

[[noreturn]] void unhandled_expr(const char* walk, const Expr& e);
[[noreturn]] void unhandled_stmt(const char* walk, const Stmt& s);

template <typename R>
class ExprFunctor {
 public:
  virtual ~ExprFunctor() = default;

  /// Dispatches on e.kind(); `e` must be defined.
  R visit_expr(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::kIntImm: return visit_int_imm(static_cast<const IntImmNode*>(e.get()), e);
      case ExprKind::kFloatImm:
        return visit_float_imm(static_cast<const FloatImmNode*>(e.get()), e);
      case ExprKind::kVar: return visit_var(static_cast<const VarNode*>(e.get()), e);
      case ExprKind::kNot: return visit_not(static_cast<const NotNode*>(e.get()), e);
      case ExprKind::kBitNot: return visit_bit_not(static_cast<const BitNotNode*>(e.get()), e);
      case ExprKind::kSelect: return visit_select(static_cast<const SelectNode*>(e.get()), e);
      case ExprKind::kCast: return visit_cast(static_cast<const CastNode*>(e.get()), e);
      case ExprKind::kCall: return visit_call(static_cast<const CallNode*>(e.get()), e);
      case ExprKind::kLoad: return visit_load(static_cast<const LoadNode*>(e.get()), e);
      default: return visit_binary(static_cast<const BinaryNode*>(e.get()), e);
    }
  }

 protected:
  /// The name of the walk in unhandled()'s message.
  virtual const char* walk_name() const { return "expression walk"; }
  virtual R visit_int_imm(const IntImmNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_float_imm(const FloatImmNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_var(const VarNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_binary(const BinaryNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_not(const NotNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_bit_not(const BitNotNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_select(const SelectNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_cast(const CastNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_call(const CallNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
  virtual R visit_load(const LoadNode*, const Expr& e) { unhandled_expr(walk_name(), e); }
};

template <typename R>
class StmtFunctor {
 public:
  virtual ~StmtFunctor() = default;

  /// Dispatches on s.kind(); `s` must be defined.
  R visit_stmt(const Stmt& s) {
    switch (s.kind()) {
#define TILEJIT_IR_CASE(K, Node, fn) \
  case StmtKind::K: return fn(static_cast<const Node*>(s.get()), s);
      TILEJIT_IR_CASE(kKernel, KernelStmt, visit_kernel)
      TILEJIT_IR_CASE(kAlloc, AllocStmt, visit_alloc)
      TILEJIT_IR_CASE(kSeq, SeqStmt, visit_seq)
      TILEJIT_IR_CASE(kFor, ForStmt, visit_for)
      TILEJIT_IR_CASE(kIf, IfStmt, visit_if)
      TILEJIT_IR_CASE(kWhile, WhileStmt, visit_while)
      TILEJIT_IR_CASE(kBreak, BreakStmt, visit_break)
      TILEJIT_IR_CASE(kContinue, ContinueStmt, visit_continue)
      TILEJIT_IR_CASE(kStore, StoreStmt, visit_store)
      TILEJIT_IR_CASE(kLet, LetStmt, visit_let)
      TILEJIT_IR_CASE(kEvaluate, EvaluateStmt, visit_evaluate)
      TILEJIT_IR_CASE(kSync, SyncStmt, visit_sync)
      TILEJIT_IR_CASE(kCopy, CopyOp, visit_copy)
      TILEJIT_IR_CASE(kGemm, GemmOp, visit_gemm)
      TILEJIT_IR_CASE(kFill, FillOp, visit_fill)
      TILEJIT_IR_CASE(kReduce, ReduceOp, visit_reduce)
      TILEJIT_IR_CASE(kAtomicAdd, AtomicAddOp, visit_atomic_add)
      TILEJIT_IR_CASE(kPrint, PrintOp, visit_print)
#undef TILEJIT_IR_CASE
    }
    unhandled_stmt("statement walk", s);
  }

 protected:
  virtual const char* stmt_walk_name() const { return "statement walk"; }
#define TILEJIT_IR_DEFAULT(Node, fn) \
  virtual R fn(const Node*, const Stmt& s) { unhandled_stmt(stmt_walk_name(), s); }
  TILEJIT_IR_DEFAULT(KernelStmt, visit_kernel)
  TILEJIT_IR_DEFAULT(AllocStmt, visit_alloc)
  TILEJIT_IR_DEFAULT(SeqStmt, visit_seq)
  TILEJIT_IR_DEFAULT(ForStmt, visit_for)
  TILEJIT_IR_DEFAULT(IfStmt, visit_if)
  TILEJIT_IR_DEFAULT(WhileStmt, visit_while)
  TILEJIT_IR_DEFAULT(BreakStmt, visit_break)
  TILEJIT_IR_DEFAULT(ContinueStmt, visit_continue)
  TILEJIT_IR_DEFAULT(StoreStmt, visit_store)
  TILEJIT_IR_DEFAULT(LetStmt, visit_let)
  TILEJIT_IR_DEFAULT(EvaluateStmt, visit_evaluate)
  TILEJIT_IR_DEFAULT(SyncStmt, visit_sync)
  TILEJIT_IR_DEFAULT(CopyOp, visit_copy)
  TILEJIT_IR_DEFAULT(GemmOp, visit_gemm)
  TILEJIT_IR_DEFAULT(FillOp, visit_fill)
  TILEJIT_IR_DEFAULT(ReduceOp, visit_reduce)
  TILEJIT_IR_DEFAULT(AtomicAddOp, visit_atomic_add)
  TILEJIT_IR_DEFAULT(PrintOp, visit_print)
#undef TILEJIT_IR_DEFAULT
};

/// Visits every node, children after their parent. Override a visit_* to act
/// on a node and call the base to keep recursing.
class IRVisitor : public ExprFunctor<void>, public StmtFunctor<void> {
 public:
  /// Undefined handles are skipped (an If without else, a Seq's empty slot).
  void visit(const Expr& e) {
    if (e.defined()) visit_expr(e);
  }
  void visit(const Stmt& s) {
    if (s.defined()) visit_stmt(s);
  }

 protected:
  /// The buffer's shape is not visited (it is the buffer's, not the use's).
  virtual void visit_region(const Region& r);

  void visit_int_imm(const IntImmNode*, const Expr&) override {}
  void visit_float_imm(const FloatImmNode*, const Expr&) override {}
  void visit_var(const VarNode*, const Expr&) override {}
  void visit_binary(const BinaryNode* op, const Expr&) override;
  void visit_not(const NotNode* op, const Expr&) override;
  void visit_bit_not(const BitNotNode* op, const Expr&) override;
  void visit_select(const SelectNode* op, const Expr&) override;
  void visit_cast(const CastNode* op, const Expr&) override;
  void visit_call(const CallNode* op, const Expr&) override;
  void visit_load(const LoadNode* op, const Expr&) override;

  void visit_kernel(const KernelStmt* op, const Stmt&) override;
  void visit_alloc(const AllocStmt*, const Stmt&) override {}
  void visit_seq(const SeqStmt* op, const Stmt&) override;
  void visit_for(const ForStmt* op, const Stmt&) override;
  void visit_if(const IfStmt* op, const Stmt&) override;
  void visit_while(const WhileStmt* op, const Stmt&) override;
  void visit_break(const BreakStmt*, const Stmt&) override {}
  void visit_continue(const ContinueStmt*, const Stmt&) override {}
  void visit_sync(const SyncStmt*, const Stmt&) override {}
  void visit_store(const StoreStmt* op, const Stmt&) override;
  void visit_let(const LetStmt* op, const Stmt&) override;
  void visit_evaluate(const EvaluateStmt* op, const Stmt&) override;
  void visit_copy(const CopyOp* op, const Stmt&) override;
  void visit_gemm(const GemmOp* op, const Stmt&) override;
  void visit_fill(const FillOp* op, const Stmt&) override;
  void visit_reduce(const ReduceOp* op, const Stmt&) override;
  void visit_atomic_add(const AtomicAddOp* op, const Stmt&) override;
  void visit_print(const PrintOp* op, const Stmt&) override;
};

/// Whether `e` reads the IR variable of id `var` (Note [Variables] in expr.h).
bool reads_var(const Expr& e, uint64_t var);
/// Whether a range of `r` (its mins and extents) reads it.
bool reads_var(const Region& r, uint64_t var);

/// Rebuilds the tree bottom-up. Override a visit_* to replace a node; the
/// defaults mutate the children and rebuild only when one changed.
/// Binary nodes are rebuilt with make_binary (constants fold again).
class IRMutator : public ExprFunctor<Expr>, public StmtFunctor<Stmt> {
 public:
  /// Undefined handles stay undefined.
  Expr mutate(const Expr& e) { return e.defined() ? visit_expr(e) : e; }
  Stmt mutate(const Stmt& s) { return s.defined() ? visit_stmt(s) : s; }

 protected:
  /// Mutates the ranges' expressions; the buffer stays (override to swap it).
  virtual Region mutate_region(const Region& r);
  /// Each element mutated; *changed set when one differs.
  std::vector<Expr> mutate_all(const std::vector<Expr>& es, bool* changed);

  Expr visit_int_imm(const IntImmNode*, const Expr& e) override { return e; }
  Expr visit_float_imm(const FloatImmNode*, const Expr& e) override { return e; }
  Expr visit_var(const VarNode*, const Expr& e) override { return e; }
  Expr visit_binary(const BinaryNode* op, const Expr& e) override;
  Expr visit_not(const NotNode* op, const Expr& e) override;
  Expr visit_bit_not(const BitNotNode* op, const Expr& e) override;
  Expr visit_select(const SelectNode* op, const Expr& e) override;
  Expr visit_cast(const CastNode* op, const Expr& e) override;
  Expr visit_call(const CallNode* op, const Expr& e) override;
  Expr visit_load(const LoadNode* op, const Expr& e) override;

  Stmt visit_kernel(const KernelStmt* op, const Stmt& s) override;
  Stmt visit_alloc(const AllocStmt*, const Stmt& s) override { return s; }
  Stmt visit_seq(const SeqStmt* op, const Stmt& s) override;
  Stmt visit_for(const ForStmt* op, const Stmt& s) override;
  Stmt visit_if(const IfStmt* op, const Stmt& s) override;
  Stmt visit_while(const WhileStmt* op, const Stmt& s) override;
  Stmt visit_break(const BreakStmt*, const Stmt& s) override { return s; }
  Stmt visit_continue(const ContinueStmt*, const Stmt& s) override { return s; }
  Stmt visit_sync(const SyncStmt*, const Stmt& s) override { return s; }
  Stmt visit_store(const StoreStmt* op, const Stmt& s) override;
  Stmt visit_let(const LetStmt* op, const Stmt& s) override;
  Stmt visit_evaluate(const EvaluateStmt* op, const Stmt& s) override;
  Stmt visit_copy(const CopyOp* op, const Stmt& s) override;
  Stmt visit_gemm(const GemmOp* op, const Stmt& s) override;
  Stmt visit_fill(const FillOp* op, const Stmt& s) override;
  Stmt visit_reduce(const ReduceOp* op, const Stmt& s) override;
  Stmt visit_atomic_add(const AtomicAddOp* op, const Stmt& s) override;
  Stmt visit_print(const PrintOp* op, const Stmt& s) override;
};

}  // namespace tilejit::ir
