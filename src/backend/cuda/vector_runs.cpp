// Note [Vectorised runs] (vector_runs.h): the accesses of a run that move
// as vectors.
#include "backend/cuda/vector_runs.h"

#include <map>
#include <set>
#include <utility>

#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

using ir::Expr;
using ir::ExprKind;

// Whether `e` mentions a variable of `vars` or reads memory.
bool varies(const Expr& e, const std::set<uint64_t>& vars) {
  struct Finder : ir::IRVisitor {
    const std::set<uint64_t>& vars;
    bool found = false;
    explicit Finder(const std::set<uint64_t>& v) : vars(v) {}
    void visit_var(const ir::VarNode* v, const Expr&) override { found = found || vars.count(v->id); }
    void visit_load(const ir::LoadNode*, const Expr&) override { found = true; }
  } f(vars);
  f.visit(e);
  return f.found;
}

// `e` is `rest + lane` (in any order of the sum's terms, through widening
// casts), with `rest` free of `lanes` and of memory reads.
bool lane_at_end(const Expr& e, uint64_t lane, const std::set<uint64_t>& lanes) {
  if (e.is_var()) return e.var_id() == lane;
  if (e.kind() == ExprKind::kCast) {
    const Expr& v = e.as<ir::CastNode>()->value;
    return v.dtype().is_int() && e.dtype().is_int() && v.dtype().bits <= e.dtype().bits &&
           lane_at_end(v, lane, lanes);
  }
  if (e.kind() == ExprKind::kAdd || e.kind() == ExprKind::kSub) {
    const auto* bin = static_cast<const ir::BinaryNode*>(e.get());
    const bool a = varies(bin->a, lanes), b = varies(bin->b, lanes);
    if (a && !b) return lane_at_end(bin->a, lane, lanes);
    if (b && !a && e.kind() == ExprKind::kAdd) return lane_at_end(bin->b, lane, lanes);
  }
  return false;
}

// The body's accesses in order, or straight = false where it is not stores
// and lets alone.
struct Accesses : ir::IRVisitor {
  struct Access {
    ir::Buffer buffer;
    std::vector<Expr> indices;
    bool write;
  };
  std::vector<Access> list;
  std::set<uint64_t> lanes;  // the lane variable and the lets that depend on it
  bool straight = true;

  void visit_load(const ir::LoadNode* op, const Expr& e) override {
    list.push_back({op->buffer, op->indices, false});
    ir::IRVisitor::visit_load(op, e);
  }
  void visit_select(const ir::SelectNode*, const Expr&) override { straight = false; }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    ir::IRVisitor::visit_store(op, s);  // the value's and indices' reads first
    list.push_back({op->buffer, op->indices, true});
  }
  void visit_let(const ir::LetStmt* op, const ir::Stmt& s) override {
    ir::IRVisitor::visit_let(op, s);
    if (varies(op->value, lanes)) lanes.insert(op->var.var_id());
  }
  // Anything but stores, lets and sequences of them.
  void visit_kernel(const ir::KernelStmt*, const ir::Stmt&) override { straight = false; }
  void visit_alloc(const ir::AllocStmt*, const ir::Stmt&) override { straight = false; }
  void visit_for(const ir::ForStmt*, const ir::Stmt&) override { straight = false; }
  void visit_if(const ir::IfStmt*, const ir::Stmt&) override { straight = false; }
  void visit_while(const ir::WhileStmt*, const ir::Stmt&) override { straight = false; }
  void visit_break(const ir::BreakStmt*, const ir::Stmt&) override { straight = false; }
  void visit_continue(const ir::ContinueStmt*, const ir::Stmt&) override { straight = false; }
  void visit_sync(const ir::SyncStmt*, const ir::Stmt&) override { straight = false; }
  void visit_evaluate(const ir::EvaluateStmt*, const ir::Stmt&) override { straight = false; }
  void visit_copy(const ir::CopyOp*, const ir::Stmt&) override { straight = false; }
  void visit_gemm(const ir::GemmOp*, const ir::Stmt&) override { straight = false; }
  void visit_fill(const ir::FillOp*, const ir::Stmt&) override { straight = false; }
  void visit_reduce(const ir::ReduceOp*, const ir::Stmt&) override { straight = false; }
  void visit_atomic_add(const ir::AtomicAddOp*, const ir::Stmt&) override { straight = false; }
  void visit_print(const ir::PrintOp*, const ir::Stmt&) override { straight = false; }
};

bool same_indices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (!ir::structural_equal(a[d], b[d])) return false;
  }
  return true;
}

// Consecutive in memory over the lanes: every index but the last the same
// for all lanes, the last `rest + lane`.
bool consecutive(const std::vector<Expr>& indices, uint64_t lane, const std::set<uint64_t>& lanes) {
  if (indices.empty()) return false;
  for (size_t d = 0; d + 1 < indices.size(); ++d) {
    if (varies(indices[d], lanes)) return false;
  }
  return lane_at_end(indices.back(), lane, lanes);
}

}  // namespace

std::vector<StagedAccess> plan_vector_run(const ir::Stmt& body, uint64_t lane,
                                          const std::function<bool(const ir::Buffer&)>& memory,
                                          bool stage_writes) {
  Accesses acc;
  acc.lanes.insert(lane);
  acc.visit(body);
  if (!acc.straight) return {};
  // Buffers written in the body, and whether all their accesses are at one
  // index.
  std::map<uint64_t, bool> written_at_one;
  for (const Accesses::Access& a : acc.list) {
    if (a.write) written_at_one[a.buffer.id()] = true;
  }
  for (auto& [id, one] : written_at_one) {
    const std::vector<Expr>* first = nullptr;
    for (const Accesses::Access& a : acc.list) {
      if (a.buffer.id() != id) continue;
      if (first == nullptr) first = &a.indices;
      one = one && same_indices(*first, a.indices);
    }
  }
  std::vector<StagedAccess> out;
  for (const Accesses::Access& a : acc.list) {
    if (!memory(a.buffer) || !consecutive(a.indices, lane, acc.lanes)) continue;
    if (auto w = written_at_one.find(a.buffer.id()); w != written_at_one.end()) {
      if (!w->second || !stage_writes) continue;
    }
    StagedAccess* s = nullptr;
    for (StagedAccess& o : out) {
      if (o.buffer.id() == a.buffer.id() && same_indices(o.indices, a.indices)) s = &o;
    }
    if (s == nullptr) {
      out.push_back({a.buffer, a.indices, false, false});
      s = &out.back();
    }
    // A buffer's element read before the lane writes it comes from memory;
    // one written first needs no read.
    if (!a.write && !s->written) s->read = true;
    if (a.write) s->written = true;
  }
  return out;
}

}  // namespace tilejit::cuda
