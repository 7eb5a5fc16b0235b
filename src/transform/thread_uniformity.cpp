// thread_uniformity: see Note [Thread semantics] in thread_uniformity.h.
#include "tilejit/transform/thread_uniformity.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/hoist_shuffles.h"

namespace tilejit::transform {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

namespace {

bool is_local(const ir::Buffer& b) { return b.defined() && b.scope() == ir::Scope::kLocal; }

// Whether an expression reads a variant variable or buffer.
class VariantExpr : public ir::IRVisitor {
 public:
  VariantExpr(const std::set<uint64_t>& vars, const std::set<uint64_t>& buffers)
      : vars_(vars), buffers_(buffers) {}
  bool found = false;

 private:
  void visit_var(const ir::VarNode* op, const Expr&) override {
    if (op->id != 0 && vars_.count(op->id)) found = true;
  }
  void visit_load(const ir::LoadNode* op, const Expr& e) override {
    if (buffers_.count(op->buffer.id())) found = true;
    ir::IRVisitor::visit_load(op, e);
  }
  // A warp shuffle reads another lane's value (Note [Warp shuffles]).
  void visit_call(const ir::CallNode* op, const Expr& e) override {
    if (ir::is_shuffle(op->op)) found = true;
    ir::IRVisitor::visit_call(op, e);
  }
  const std::set<uint64_t>& vars_;
  const std::set<uint64_t>& buffers_;
};

const char* op_name(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::kCopy: return "T.copy";
    case StmtKind::kGemm: return "T.gemm";
    case StmtKind::kFill: return "T.fill";
    case StmtKind::kReduce: return "a reduction";
    case StmtKind::kAtomicAdd: return "T.atomic_add";
    case StmtKind::kPrint: return "T.print";
    case StmtKind::kSync: return "T.sync_threads";
    case StmtKind::kFor: return "a T.Parallel loop";
    default: return "a tile op";
  }
}

// The destination a tile op writes (undefined for T.print).
ir::Buffer destination(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::kCopy: return s.as<ir::CopyOp>()->dst.buffer;
    case StmtKind::kGemm: return s.as<ir::GemmOp>()->c.buffer;
    case StmtKind::kFill: return s.as<ir::FillOp>()->dst.buffer;
    case StmtKind::kReduce: return s.as<ir::ReduceOp>()->dst.buffer;
    case StmtKind::kAtomicAdd: return s.as<ir::AtomicAddOp>()->dst.buffer;
    default: return {};
  }
}

std::optional<ThreadRange> intersect(ThreadRange a, ThreadRange b) {
  const int64_t lo = std::max(a.first, b.first);
  const int64_t hi = std::min(a.first + a.count, b.first + b.count);
  return ThreadRange{lo, std::max<int64_t>(hi - lo, 0)};
}

// `group` less `r`, when that is one range.
std::optional<ThreadRange> subtract(ThreadRange group, ThreadRange r) {
  const int64_t g0 = group.first, g1 = group.first + group.count;
  const int64_t r0 = std::max(r.first, g0), r1 = std::min(r.first + r.count, g1);
  if (r1 <= r0) return group;                   // nothing of the group removed
  if (r0 == g0) return ThreadRange{r1, g1 - r1};  // a prefix removed
  if (r1 == g1) return ThreadRange{g0, r0 - g0};  // a suffix removed
  return std::nullopt;
}

}  // namespace

bool ThreadUniformity::variant(const Expr& e) const {
  if (!e.defined()) return false;
  VariantExpr v(vars_, buffers_);
  v.visit(e);
  return v.found;
}

std::optional<ThreadRange> ThreadUniformity::branch_range(const ir::IfStmt* op,
                                                          bool then_branch) const {
  auto it = ranges_.find({op, then_branch});
  if (it == ranges_.end()) return std::nullopt;
  return it->second;
}

std::string ThreadUniformity::thread_state_read(const ir::ForStmt& loop) const {
  struct Reader : ir::IRVisitor {
    const ThreadUniformity* u = nullptr;
    std::set<uint64_t> defined;
    std::string found;
    void visit_var(const ir::VarNode* op, const Expr&) override {
      if (found.empty() && op->id != 0 && u->vars_.count(op->id) && !defined.count(op->id)) {
        found = op->name;
      }
    }
    void visit_load(const ir::LoadNode* op, const Expr& e) override {
      if (found.empty() && u->buffers_.count(op->buffer.id())) found = op->buffer.name();
      ir::IRVisitor::visit_load(op, e);
    }
    void visit_for(const ir::ForStmt* op, const Stmt& st) override {
      defined.insert(op->var.var_id());
      ir::IRVisitor::visit_for(op, st);
    }
    void visit_let(const ir::LetStmt* op, const Stmt& st) override {
      ir::IRVisitor::visit_let(op, st);
      defined.insert(op->var.var_id());
    }
  } r;
  r.u = this;
  r.defined.insert(loop.var.var_id());
  r.visit(loop.min);
  r.visit(loop.extent);
  r.visit(loop.body);
  return r.found;
}

bool ThreadUniformity::per_thread_op(const Stmt& s) {
  if (s.kind() == StmtKind::kAtomicAdd) {
    const auto* op = s.as<ir::AtomicAddOp>();
    if (!op->src.buffer.defined()) {
      // A value into one element: the thread's own (TileLang's scalar atomic).
      bool scalar = true;
      for (const ir::Range& r : op->dst.ranges) {
        if (r.extent.defined() && !(r.extent.is_const() && r.extent.int_value() == 1)) scalar = false;
      }
      return scalar && !op->dst.ranges.empty();
    }
  }
  if (!ir::is_tile_op(s.kind()) || s.kind() == StmtKind::kPrint) return false;
  return is_local(destination(s));
}

bool ThreadUniformity::collective(const Stmt& s) {
  struct Finder : ir::IRVisitor {
    bool found = false;
    void visit_for(const ir::ForStmt* op, const Stmt& s) override {
      if (op->for_kind == ir::ForKind::kParallel) {
        found = true;
        return;
      }
      ir::IRVisitor::visit_for(op, s);
    }
    void tile(const Stmt& s) {
      if (!per_thread_op(s)) found = true;
    }
    void visit_copy(const ir::CopyOp*, const Stmt& s) override { tile(s); }
    void visit_gemm(const ir::GemmOp*, const Stmt& s) override { tile(s); }
    void visit_fill(const ir::FillOp*, const Stmt& s) override { tile(s); }
    void visit_reduce(const ir::ReduceOp*, const Stmt& s) override { tile(s); }
    void visit_atomic_add(const ir::AtomicAddOp*, const Stmt& s) override { tile(s); }
    void visit_print(const ir::PrintOp*, const Stmt&) override { found = true; }
    void visit_sync(const ir::SyncStmt*, const Stmt&) override { found = true; }
  } f;
  f.visit(s);
  return f.found;
}

// The fixed point of the variant sets, then the statements and ranges.
class UniformityAnalysis {
 public:
  UniformityAnalysis(const ir::KernelStmt& kernel, const std::string& func_name)
      : kernel_(kernel), func_(func_name) {
    for (int t : kernel.threads) u_.threads_ *= t;
    for (const Expr& v : kernel.thread_vars) u_.vars_.insert(v.var_id());
  }

  ThreadUniformity run() {
    do {
      changed_ = false;
      spread(kernel_.body, false);
    } while (changed_);
    classify(kernel_.body);
    check(kernel_.body, nullptr, ThreadRange{0, u_.threads_});
    return std::move(u_);
  }

 private:
  bool variant(const Expr& e) const { return u_.variant(e); }
  bool variant(const std::vector<Expr>& es) const {
    for (const Expr& e : es) {
      if (variant(e)) return true;
    }
    return false;
  }
  bool variant(const ir::Region& r) const {
    if (!r.buffer.defined()) return false;
    if (u_.buffers_.count(r.buffer.id())) return true;
    for (const ir::Range& range : r.ranges) {
      if (variant(range.min) || variant(range.extent)) return true;
    }
    return false;
  }
  void mark_var(const Expr& v) { changed_ = u_.vars_.insert(v.var_id()).second || changed_; }
  void mark_buffer(const ir::Buffer& b) {
    if (is_local(b)) changed_ = u_.buffers_.insert(b.id()).second || changed_;
  }

  // A break or continue of this loop (not an inner one's) under a variant
  // condition: the loop's threads leave it at different iterations.
  bool divergent_exit(const Stmt& s, bool under_variant) const {
    if (!s.defined()) return false;
    switch (s.kind()) {
      case StmtKind::kBreak:
      case StmtKind::kContinue: return under_variant;
      case StmtKind::kSeq:
        for (const Stmt& x : s.as<ir::SeqStmt>()->stmts) {
          if (divergent_exit(x, under_variant)) return true;
        }
        return false;
      case StmtKind::kIf: {
        const auto* op = s.as<ir::IfStmt>();
        const bool v = under_variant || variant(op->cond);
        return divergent_exit(op->then_case, v) || divergent_exit(op->else_case, v);
      }
      default: return false;  // loops own their exits
    }
  }

  bool loop_divergent(const ir::ForStmt* op) const {
    return variant(op->min) || variant(op->extent) || divergent_exit(op->body, false);
  }
  bool while_divergent(const ir::WhileStmt* op) const {
    return variant(op->cond) || divergent_exit(op->body, false);
  }

  // Grows the variant sets from `s`, run under variant control or not.
  void spread(const Stmt& s, bool div) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::kSeq:
        for (const Stmt& x : s.as<ir::SeqStmt>()->stmts) spread(x, div);
        return;
      case StmtKind::kStore: {
        const auto* op = s.as<ir::StoreStmt>();
        if (div || variant(op->indices) || variant(op->value)) mark_buffer(op->buffer);
        return;
      }
      case StmtKind::kLet: {
        const auto* op = s.as<ir::LetStmt>();
        if (variant(op->value)) mark_var(op->var);
        return;
      }
      case StmtKind::kFor: {
        const auto* op = s.as<ir::ForStmt>();
        // A T.Parallel nest's iterations are spread over the threads: what
        // its body makes is the iteration's thread's.
        const bool parallel = op->for_kind == ir::ForKind::kParallel;
        if (parallel || variant(op->min)) mark_var(op->var);
        spread(op->body, div || parallel || loop_divergent(op));
        return;
      }
      case StmtKind::kIf: {
        const auto* op = s.as<ir::IfStmt>();
        const bool d = div || variant(op->cond);
        spread(op->then_case, d);
        spread(op->else_case, d);
        return;
      }
      case StmtKind::kWhile: {
        const auto* op = s.as<ir::WhileStmt>();
        spread(op->body, div || while_divergent(op));
        return;
      }
      default: break;
    }
    if (ThreadUniformity::per_thread_op(s) && (div || op_variant(s))) mark_buffer(destination(s));
  }

  // A thread's own tile op that reads a variant value or region.
  bool op_variant(const Stmt& s) const {
    struct Any : ir::IRVisitor {
      const UniformityAnalysis* a = nullptr;
      bool found = false;
      void visit_region(const ir::Region& r) override { found = found || a->variant(r); }
    } any;
    any.a = this;
    any.visit(s);
    if (const auto* a = s.as<ir::AtomicAddOp>()) return any.found || variant(a->value);
    if (const auto* f = s.as<ir::FillOp>()) return any.found || variant(f->value);
    return any.found;
  }

  // Marks the variant statements; returns whether `s` is one.
  bool classify(const Stmt& s) {
    if (!s.defined()) return false;
    bool v = false;
    switch (s.kind()) {
      case StmtKind::kSeq:
        for (const Stmt& x : s.as<ir::SeqStmt>()->stmts) v = classify(x) || v;
        break;
      case StmtKind::kStore: {
        const auto* op = s.as<ir::StoreStmt>();
        v = variant(op->indices) || variant(op->value) || u_.buffers_.count(op->buffer.id());
        break;
      }
      case StmtKind::kLet: v = variant(s.as<ir::LetStmt>()->value); break;
      case StmtKind::kEvaluate: v = variant(s.as<ir::EvaluateStmt>()->value); break;
      case StmtKind::kSync: break;  // the block's (or the range's), never a thread's
      case StmtKind::kFor: {
        const auto* op = s.as<ir::ForStmt>();
        const bool body = classify(op->body);
        // A T.Parallel nest is collective: its body is classified for its
        // own sake, the nest itself is not a thread's statement.
        const bool div = op->for_kind != ir::ForKind::kParallel && loop_divergent(op);
        if (div) u_.divergent_.insert(s.get());
        v = op->for_kind != ir::ForKind::kParallel && (body || div);
        break;
      }
      case StmtKind::kIf: {
        const auto* op = s.as<ir::IfStmt>();
        const bool t = classify(op->then_case);
        const bool e = classify(op->else_case);
        if (variant(op->cond)) u_.divergent_.insert(s.get());
        v = variant(op->cond) || t || e;
        break;
      }
      case StmtKind::kWhile: {
        const auto* op = s.as<ir::WhileStmt>();
        if (while_divergent(op)) u_.divergent_.insert(s.get());
        v = classify(op->body) || while_divergent(op);
        break;
      }
      default:
        // A scalar atomic adds once per thread, whatever its operands.
        v = ThreadUniformity::per_thread_op(s) &&
            (s.kind() == StmtKind::kAtomicAdd || op_variant(s) ||
             u_.buffers_.count(destination(s).id()));
        break;
    }
    if (v) u_.stmts_.insert(s.get());
    return v;
  }

  [[noreturn]] void reject(const Stmt& op, const Stmt& where, const char* construct) const {
    const int line = op.span().line;
    TILEJIT_THROW(kValueError)
        << ir::diagnostic_prefix(where.span(), func_, construct) << op_name(op)
        << (line > 0 ? " (line " + std::to_string(line) + ")" : std::string())
        << " runs on the block's threads together, or on a contiguous range of them, but this "
        << construct << " depends on the thread index and is not such a range: make it uniform, "
        << "or a range of the thread index (tx < c, tx >= c, c <= tx < d)";
  }

  // Note [Warp shuffles]: a T.Parallel loop's iterations are spread over the
  // threads as the target's layout decides, so which lanes meet at a shuffle
  // in its body is not the program's to say.
  void reject_shuffle(const Stmt& loop) const {
    const Stmt let = first_shuffle(loop.as<ir::ForStmt>()->body);
    if (!let.defined()) return;
    const ir::CallNode* call = shuffle_of(*let.as<ir::LetStmt>());
    TILEJIT_THROW(kValueError)
        << ir::diagnostic_prefix(let.span(), func_, std::string("T.") + ir::intrinsic_name(call->op))
        << "a warp shuffle inside a T.Parallel loop (line " << loop.span().line
        << "), whose iterations the target spreads over the threads as its layout decides, so "
           "which lanes exchange values is not defined; shuffle outside the loop, a value of "
           "each thread's own (T.get_thread_binding, T.alloc_local / T.alloc_var)";
  }

  // The divergence check; `div` is the innermost thread-dependent construct
  // that is not a thread range (null when none), `group` the threads here.
  void check(const Stmt& s, const Stmt* div, ThreadRange group) {
    if (!s.defined()) return;
    auto where = [&]() -> const char* {
      switch (div->kind()) {
        case StmtKind::kIf: return "if";
        case StmtKind::kWhile: return "while";
        default: return "loop";
      }
    };
    switch (s.kind()) {
      case StmtKind::kSeq:
        for (const Stmt& x : s.as<ir::SeqStmt>()->stmts) check(x, div, group);
        return;
      case StmtKind::kFor: {
        const auto* op = s.as<ir::ForStmt>();
        if (op->for_kind == ir::ForKind::kParallel) {
          if (div != nullptr) reject(s, *div, where());
          reject_shuffle(s);
          return;  // its body is one thread's code
        }
        check(op->body, div != nullptr ? div : (loop_divergent(op) ? &s : nullptr), group);
        return;
      }
      case StmtKind::kWhile: {
        const auto* op = s.as<ir::WhileStmt>();
        check(op->body, div != nullptr ? div : (while_divergent(op) ? &s : nullptr), group);
        return;
      }
      case StmtKind::kIf: {
        const auto* op = s.as<ir::IfStmt>();
        if (div != nullptr || !variant(op->cond)) {
          check(op->then_case, div, group);
          check(op->else_case, div, group);
          return;
        }
        const std::optional<ThreadRange> r = range_of(op->cond);
        if (!r) {
          check(op->then_case, &s, group);
          check(op->else_case, &s, group);
          return;
        }
        const ThreadRange then_range = *intersect(group, *r);
        const std::optional<ThreadRange> else_range = subtract(group, *r);
        u_.ranges_[{op, true}] = then_range;
        check(op->then_case, nullptr, then_range);
        if (else_range) {
          u_.ranges_[{op, false}] = *else_range;
          check(op->else_case, nullptr, *else_range);
        } else {
          check(op->else_case, &s, group);
        }
        return;
      }
      default: break;
    }
    const bool block_op = (ir::is_tile_op(s.kind()) && !ThreadUniformity::per_thread_op(s)) ||
                          s.kind() == StmtKind::kSync;
    if (block_op && div != nullptr) reject(s, *div, where());
  }

  // The linear thread ids a condition admits, when they are one range.
  std::optional<ThreadRange> range_of(const Expr& cond) const {
    if (cond.kind() == ExprKind::kAnd) {
      const auto* op = static_cast<const ir::BinaryNode*>(cond.get());
      const auto a = range_of(op->a), b = range_of(op->b);
      if (!a || !b) return std::nullopt;
      return intersect(*a, *b);
    }
    if (!ir::is_compare_kind(cond.kind()) || cond.kind() == ExprKind::kNE) return std::nullopt;
    const auto* op = static_cast<const ir::BinaryNode*>(cond.get());
    ExprKind k = cond.kind();
    Expr v = op->a, c = op->b;
    if (!v.is_var() && c.is_var()) {
      std::swap(v, c);
      // c < v is v > c, and so on.
      switch (k) {
        case ExprKind::kLT: k = ExprKind::kGT; break;
        case ExprKind::kLE: k = ExprKind::kGE; break;
        case ExprKind::kGT: k = ExprKind::kLT; break;
        case ExprKind::kGE: k = ExprKind::kLE; break;
        default: break;
      }
    }
    if (!v.is_var() || !c.is_const()) return std::nullopt;
    size_t d = 0;
    while (d < kernel_.thread_vars.size() && kernel_.thread_vars[d].var_id() != v.var_id()) ++d;
    if (d == kernel_.thread_vars.size()) return std::nullopt;
    const int64_t extent = kernel_.threads[d];
    int64_t lo = 0, hi = extent;
    const int64_t x = c.int_value();
    switch (k) {
      case ExprKind::kLT: hi = x; break;
      case ExprKind::kLE: hi = x + 1; break;
      case ExprKind::kGT: lo = x + 1; break;
      case ExprKind::kGE: lo = x; break;
      case ExprKind::kEQ: lo = x, hi = x + 1; break;
      default: return std::nullopt;
    }
    lo = std::clamp<int64_t>(lo, 0, extent);
    hi = std::clamp<int64_t>(hi, lo, extent);
    int64_t inner = 1, outer = 1;
    for (size_t e = 0; e < d; ++e) inner *= kernel_.threads[e];
    for (size_t e = d + 1; e < kernel_.threads.size(); ++e) outer *= kernel_.threads[e];
    if (outer != 1 && !(lo == 0 && hi == extent) && lo != hi) return std::nullopt;
    if (lo == 0 && hi == extent) return ThreadRange{0, u_.threads_};
    return ThreadRange{lo * inner, (hi - lo) * inner};
  }

  const ir::KernelStmt& kernel_;
  const std::string& func_;
  ThreadUniformity u_;
  bool changed_ = false;
};

ThreadUniformity thread_uniformity(const ir::KernelStmt& kernel, const std::string& func_name) {
  return UniformityAnalysis(kernel, func_name).run();
}

}  // namespace tilejit::transform
