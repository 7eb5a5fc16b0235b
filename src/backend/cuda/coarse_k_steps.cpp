// Note [Coarser K steps] in coarse_k_steps.h.
#include "backend/cuda/coarse_k_steps.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/common/accesses.h"
#include "backend/cuda/fragment_uses.h"
#include "backend/cuda/pipeline.h"
#include "tilejit/ir/simplify.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

// A K step of 64 bytes goes two to a stage of 128-byte rows, the widest
// swizzle's.
constexpr int64_t kStepBytes = 64;
constexpr int kFactor = 2;

std::string str(int64_t v) { return std::to_string(v); }

// `e` with the variable `id` replaced by `by`.
ir::Expr substitute(const ir::Expr& e, uint64_t id, const ir::Expr& by) {
  struct Swap : ir::IRMutator {
    uint64_t id = 0;
    ir::Expr by;
    ir::Expr visit_var(const ir::VarNode*, const ir::Expr& v) override {
      return v.var_id() == id ? by : v;
    }
  } swap;
  swap.id = id;
  swap.by = by;
  return swap.mutate(e);
}

// `e` with each `v * c` (or `c * v`) of the variable `id` as `v * (c *
// factor)`, as the program would write its coordinate with the wider step;
// any other use of `v` as `v * factor`.
ir::Expr widen(const ir::Expr& e, uint64_t id, const ir::Expr& v, int factor) {
  struct Widen : ir::IRMutator {
    uint64_t id = 0;
    ir::Expr v;
    int factor = 1;
    ir::Expr visit_binary(const ir::BinaryNode* op, const ir::Expr& x) override {
      if (x.kind() == ir::ExprKind::kMul) {
        const ir::Expr& a = x.a();
        const ir::Expr& b = x.b();
        if (a.is_var() && a.var_id() == id && b.is_const()) {
          return v * ir::Expr(b.int_value() * factor);
        }
        if (b.is_var() && b.var_id() == id && a.is_const()) {
          return v * ir::Expr(a.int_value() * factor);
        }
      }
      return ir::IRMutator::visit_binary(op, x);
    }
    ir::Expr visit_var(const ir::VarNode*, const ir::Expr& x) override {
      return x.var_id() == id ? v * ir::Expr(factor) : x;
    }
  } w;
  w.id = id;
  w.v = v;
  w.factor = factor;
  return w.mutate(e);
}

int64_t extent_of(const ir::Expr& e) { return e.is_const() ? e.int_value() : -1; }

// A 2-D shared tile of constant shape, the region all of it.
bool whole_tile(const ir::Region& r) {
  const ir::Buffer& b = r.buffer;
  return b.scope() == ir::Scope::kShared && b.rank() == 2 && dim(b, 0) > 0 && dim(b, 1) > 0 &&
         is_whole(r);
}

// The pipelined loop of `body` whose variable is `id`.
const ir::ForStmt* find_loop(const ir::Stmt& body, uint64_t id) {
  struct Finder : ir::IRVisitor {
    uint64_t id = 0;
    const ir::ForStmt* found = nullptr;
    void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
      if (op->var.var_id() == id) found = op;
      ir::IRVisitor::visit_for(op, s);
    }
  } f;
  f.id = id;
  f.visit(body);
  return f.found;
}

// The buffers a kernel's statements other than `loop` touch.
std::set<uint64_t> used_outside(const ir::Stmt& body, const ir::ForStmt* loop) {
  struct Outside : backend::Accessed {
    const ir::ForStmt* loop = nullptr;
    void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
      if (op != loop) backend::Accessed::visit_for(op, s);
    }
  } o;
  o.loop = loop;
  o.visit(body);
  std::set<uint64_t> out = o.ids;
  out.insert(o.reads.begin(), o.reads.end());
  out.insert(o.writes.begin(), o.writes.end());
  return out;
}

// One shared operand of the gemm and the copy that fills it.
struct Operand {
  ir::Buffer tile;
  int k_dim = 0;                  // the tile's dimension along K
  const ir::CopyOp* copy = nullptr;
  int src_dim = -1;               // the copy's source dimension along it
};

// The copy's source dimension that runs along the tile's dimension `d`: its
// dimensions of extent other than 1, in order, are the tile's.
int source_dim(const ir::CopyOp& c, int d) {
  int seen = 0;
  for (size_t i = 0; i < c.src.ranges.size(); ++i) {
    if (extent_of(c.src.ranges[i].extent) == 1) continue;
    if (seen++ == d) return int(i);
  }
  return -1;
}

class Coarsen : public ir::IRMutator {
 public:
  Coarsen(const ir::ForStmt* loop, int factor, std::map<uint64_t, Operand> operands)
      : loop_(loop), factor_(factor), operands_(std::move(operands)) {
    for (auto& [id, o] : operands_) {
      std::vector<ir::Expr> shape = o.tile.shape();
      shape[o.k_dim] = ir::Expr(shape[o.k_dim].int_value() * factor_);
      // Laid out as the tile was (row-major, Note [Layouts]).
      wide_.emplace(id, ir::Buffer::make(o.tile.name(), shape, o.tile.dtype(), ir::Scope::kShared,
                                         o.tile->span)
                            .with_layout(o.tile->layout));
    }
  }

 private:
  ir::Stmt visit_alloc(const ir::AllocStmt* op, const ir::Stmt& s) override {
    auto w = wide_.find(op->buffer.id());
    return w == wide_.end() ? s : ir::make_stmt<ir::AllocStmt>(w->second, s.span());
  }

  ir::Stmt visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    if (op != loop_) return ir::IRMutator::visit_for(op, s);
    return ir::make_stmt<ir::ForStmt>(op->var, op->min,
                                      ir::Expr(op->extent.int_value() / factor_), op->for_kind,
                                      op->stages, mutate(op->body), op->span, op->schedule,
                                      op->origin);
  }

  ir::Stmt visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override {
    auto o = operands_.find(op->dst.buffer.id());
    if (o == operands_.end()) return s;
    ir::Region src = op->src;
    ir::Range& k = src.ranges[o->second.src_dim];
    // ko * K0 + c, read for iteration ko * F of the program.
    k.min = widen(k.min, loop_->var.var_id(), loop_->var, factor_);
    k.extent = ir::Expr(k.extent.int_value() * factor_);
    return ir::make_stmt<ir::CopyOp>(std::move(src), whole_slices(wide_.at(o->first)), op->span,
                                     op->disable_tma);
  }

  ir::Stmt visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) override {
    auto a = wide_.find(op->a.buffer.id());
    auto b = wide_.find(op->b.buffer.id());
    if (a == wide_.end() || b == wide_.end()) return s;
    return ir::make_stmt<ir::GemmOp>(whole_slices(a->second), whole_slices(b->second), op->c, op->trans_a,
                                     op->trans_b, op->clear_accum, op->policy, op->span);
  }

  const ir::ForStmt* loop_;
  int factor_;
  std::map<uint64_t, Operand> operands_;
  std::map<uint64_t, ir::Buffer> wide_;
};

}  // namespace

std::optional<ir::PrimFunc> coarsen_k_steps(const ir::PrimFunc& f, size_t index,
                                            const ir::Expr& loop_var, CoarseKSteps* plan) {
  *plan = CoarseKSteps{};
  const ir::KernelStmt& kernel = *f.tile()->kernels()[index];
  const uint64_t var = loop_var.var_id();
  const ir::ForStmt* loop = find_loop(kernel.body, var);
  if (loop == nullptr || loop->for_kind != ir::ForKind::kPipelined) return std::nullopt;
  // The body: copies and one gemm of two whole shared tiles.
  const ir::GemmOp* gemm = nullptr;
  std::vector<const ir::CopyOp*> copies;
  for (const ir::Stmt& s : flatten(loop->body)) {
    if (const auto* c = s.as<ir::CopyOp>()) {
      copies.push_back(c);
    } else if (const auto* g = s.as<ir::GemmOp>(); g != nullptr && gemm == nullptr) {
      gemm = g;
    } else {
      return std::nullopt;
    }
  }
  if (gemm == nullptr || !whole_tile(gemm->a) || !whole_tile(gemm->b) ||
      gemm->a.buffer == gemm->b.buffer || gemm->a.buffer.dtype() != gemm->b.buffer.dtype() ||
      ir::reads_var(gemm->c, var)) {
    return std::nullopt;
  }
  std::map<uint64_t, Operand> operands;
  operands[gemm->a.buffer.id()] = Operand{gemm->a.buffer, gemm->trans_a ? 0 : 1};
  operands[gemm->b.buffer.id()] = Operand{gemm->b.buffer, gemm->trans_b ? 1 : 0};
  const Operand& a = operands.at(gemm->a.buffer.id());
  const int64_t k_step = a.tile.shape()[a.k_dim].int_value();
  const int64_t row_bytes = k_step * a.tile.dtype().bytes();
  if (row_bytes != kStepBytes) return std::nullopt;
  plan->k_step = k_step;
  auto refuse = [&](const std::string& why) {
    plan->refused = "K steps of " + str(k_step) + " kept: " + why;
    return std::nullopt;
  };
  const int factor = kFactor;
  if (!loop->schedule.empty()) return refuse("the loop has T.Pipelined(order=, stage=, group=)");
  if (!loop->min.is_const() || loop->min.int_value() != 0 || extent_of(loop->extent) < 0) {
    return refuse("the loop's extent is not a constant");
  }
  if (loop->extent.int_value() % factor != 0) {
    return refuse("its " + str(loop->extent.int_value()) + " iterations are not a multiple of " +
                  str(factor));
  }
  // Each tile filled by one copy along K, step by step.
  for (const ir::CopyOp* c : copies) {
    auto o = operands.find(c->dst.buffer.id());
    if (o == operands.end() || o->second.copy != nullptr || !whole_tile(c->dst) ||
        c->src.buffer.scope() != ir::Scope::kGlobal) {
      return std::nullopt;
    }
    Operand& op = o->second;
    op.copy = c;
    op.src_dim = source_dim(*c, op.k_dim);
    if (op.src_dim < 0 || extent_of(c->src.ranges[op.src_dim].extent) != k_step) {
      return std::nullopt;
    }
    for (size_t d = 0; d < c->src.ranges.size(); ++d) {
      const ir::Range& r = c->src.ranges[d];
      const ir::Expr step =
          ir::simplify(substitute(r.min, var, loop_var + ir::Expr(1)) - r.min);
      const int64_t want = int(d) == op.src_dim ? k_step : 0;
      if (ir::reads_var(r.extent, var) || !step.is_const() || step.int_value() != want) {
        return refuse(c->src.buffer.name() + "'s tile does not move " +
                      (want ? "by its K extent along K" : "along K alone") + " per iteration");
      }
    }
  }
  for (const auto& [id, o] : operands) {
    if (o.copy == nullptr) return std::nullopt;
  }
  const std::set<uint64_t> outside = used_outside(kernel.body, loop);
  for (const auto& [id, o] : operands) {
    if (outside.count(id)) return std::nullopt;  // (then no prefetch either)
  }
  plan->factor = factor;
  ir::PrimFunc out = f;
  ir::TileBody body = *f.tile();
  body.stmt = Coarsen(loop, factor, std::move(operands)).mutate(body.stmt);
  out.body = std::move(body);
  return out;
}

}  // namespace tilejit::cuda
