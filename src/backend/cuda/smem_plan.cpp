// Shared-memory planning (Note [Shared-memory liveness] in smem_plan.h): one
// walk numbers the body's statements and records, per requested buffer, the
// positions that access it and the loops around them; the live ranges follow
// from those, then the offsets from the ranges.
#include "backend/cuda/smem_plan.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tilejit/core/error.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

constexpr int64_t kAlign = 128;

int64_t align_up(int64_t x, int64_t align = kAlign) { return (x + align - 1) / align * align; }

/// The statements of `s`'s sequence, nested sequences flattened.
void flatten(const ir::Stmt& s, std::vector<const ir::Stmt*>* out) {
  if (!s.defined()) return;
  if (const auto* seq = s.as<ir::SeqStmt>()) {
    for (const ir::Stmt& c : seq->stmts) flatten(c, out);
    return;
  }
  out->push_back(&s);
}

/// The buffer's accesses at one position; `read` when any of them reads it.
struct Access {
  int64_t pos;
  bool read;
};

/// A statement of a loop body's sequence and the positions it spans
/// (begin > end for one that has none, an allocation or a break).
struct BodyStmt {
  int64_t begin, end;
  const ir::Stmt* stmt;
};

struct Loop {
  int64_t begin = 0;  // the header's position
  int64_t end = 0;    // the body's last position
  bool may_be_fresh = false;  // condition 1 of the Note
  std::vector<BodyStmt> body;
};

class Numbering : public ir::IRVisitor {
 public:
  explicit Numbering(const std::unordered_map<uint64_t, size_t>& index)
      : index_(index), accesses_(index.size()) {}

  const std::vector<std::vector<Access>>& accesses() const { return accesses_; }
  const std::vector<Loop>& loops() const { return loops_; }
  int64_t last_pos() const { return next_ - 1; }

 protected:
  void visit_load(const ir::LoadNode* op, const ir::Expr& e) override {
    touch(op->buffer, true);
    ir::IRVisitor::visit_load(op, e);
  }

  void visit_kernel(const ir::KernelStmt* op, const ir::Stmt&) override { visit(op->body); }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt&) override {
    next();
    for (const ir::Expr& i : op->indices) visit(i);
    visit(op->value);
    touch(op->buffer, false);
  }
  void visit_let(const ir::LetStmt* op, const ir::Stmt&) override {
    next();
    visit(op->value);
  }
  void visit_evaluate(const ir::EvaluateStmt* op, const ir::Stmt&) override {
    next();
    visit(op->value);
  }
  void visit_if(const ir::IfStmt* op, const ir::Stmt&) override {
    next();
    visit(op->cond);
    visit(op->then_case);
    visit(op->else_case);
  }
  void visit_for(const ir::ForStmt* op, const ir::Stmt&) override {
    const bool shared_loop =
        op->for_kind == ir::ForKind::kParallel;
    const bool fresh_kind =
        op->for_kind == ir::ForKind::kSerial || op->for_kind == ir::ForKind::kUnroll;
    const size_t loop = open_loop(fresh_kind && parallel_depth_ == 0);
    visit(op->min);
    visit(op->extent);
    parallel_depth_ += shared_loop ? 1 : 0;
    close_loop(loop, op->body);
    parallel_depth_ -= shared_loop ? 1 : 0;
  }
  void visit_while(const ir::WhileStmt* op, const ir::Stmt&) override {
    const size_t loop = open_loop(parallel_depth_ == 0);
    visit(op->cond);
    close_loop(loop, op->body);
  }

  void visit_copy(const ir::CopyOp* op, const ir::Stmt&) override {
    next();
    region(op->src, true);
    region(op->dst, false);
  }
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt&) override {
    next();
    region(op->a, true);
    region(op->b, true);
    region(op->c, !op->clear_accum);
  }
  void visit_fill(const ir::FillOp* op, const ir::Stmt&) override {
    next();
    region(op->dst, false);
    visit(op->value);
  }
  void visit_reduce(const ir::ReduceOp* op, const ir::Stmt&) override {
    next();
    region(op->src, true);
    region(op->dst, !op->clear);
  }
  void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt&) override {
    next();
    region(op->dst, true);
    if (op->src.buffer.defined()) region(op->src, true);
    visit(op->value);
  }
  void visit_print(const ir::PrintOp* op, const ir::Stmt&) override {
    next();
    visit(op->value);
    if (op->region.buffer.defined()) region(op->region, true);
  }

 private:
  void next() { pos_ = next_++; }

  void touch(const ir::Buffer& b, bool read) {
    const auto it = index_.find(b.id());
    if (it == index_.end()) return;
    std::vector<Access>& a = accesses_[it->second];
    if (!a.empty() && a.back().pos == pos_) {
      a.back().read = a.back().read || read;
    } else {
      a.push_back({pos_, read});
    }
  }
  // The region's buffer, and the loads in its ranges (reads, whatever the
  // op does with the buffer).
  void region(const ir::Region& r, bool read) {
    visit_region(r);
    touch(r.buffer, read);
  }

  size_t open_loop(bool may_be_fresh) {
    next();
    loops_.emplace_back();
    loops_.back().begin = pos_;
    loops_.back().may_be_fresh = may_be_fresh;
    return loops_.size() - 1;
  }
  void close_loop(size_t loop, const ir::Stmt& body) {
    std::vector<const ir::Stmt*> stmts;
    flatten(body, &stmts);
    std::vector<BodyStmt> spans;
    for (const ir::Stmt* s : stmts) {
      const int64_t begin = next_;
      visit(*s);
      spans.push_back({begin, next_ - 1, s});
    }
    loops_[loop].end = next_ - 1;
    loops_[loop].body = std::move(spans);  // by index: visiting the body grew loops_
  }

  const std::unordered_map<uint64_t, size_t>& index_;
  std::vector<std::vector<Access>> accesses_;
  std::vector<Loop> loops_;
  int64_t pos_ = -1, next_ = 0;
  int parallel_depth_ = 0;
};

/// `r` is all of `b`: the whole buffer, or a slice of each dimension from 0
/// to its (constant) extent.
bool covers(const ir::Region& r, const ir::Buffer& b) {
  if (r.buffer != b) return false;
  if (r.is_whole()) return true;
  if (int(r.ranges.size()) != b.rank()) return false;
  for (int d = 0; d < b.rank(); ++d) {
    const ir::Range& range = r.ranges[size_t(d)];
    const ir::Expr& dim = b.shape()[size_t(d)];
    if (!range.min.is_const() || range.min.int_value() != 0) return false;
    if (!range.extent.is_const() || !dim.is_const()) return false;
    if (range.extent.int_value() != dim.int_value()) return false;
  }
  return true;
}

/// `indices` are exactly the variables `vars`, in order.
bool at_vars(const std::vector<ir::Expr>& indices, const std::vector<uint64_t>& vars) {
  if (indices.size() != vars.size()) return false;
  for (size_t d = 0; d < vars.size(); ++d) {
    if (!indices[d].is_var() || indices[d].var_id() != vars[d]) return false;
  }
  return true;
}

/// Whether a statement touches `buffer` only through loads and stores at
/// exactly `vars` (so that each iteration of a nest over them sees only its
/// own element).
class OnlyAtVars : public ir::IRVisitor {
 public:
  OnlyAtVars(const ir::Buffer& buffer, const std::vector<uint64_t>& vars)
      : buffer_(buffer), vars_(vars) {}
  bool ok = true;

 protected:
  void visit_load(const ir::LoadNode* op, const ir::Expr& e) override {
    if (op->buffer == buffer_ && !at_vars(op->indices, vars_)) ok = false;
    ir::IRVisitor::visit_load(op, e);
  }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    if (op->buffer == buffer_ && !at_vars(op->indices, vars_)) ok = false;
    ir::IRVisitor::visit_store(op, s);
  }
  void visit_region(const ir::Region& r) override {
    if (r.buffer == buffer_) ok = false;
    ir::IRVisitor::visit_region(r);
  }

 private:
  const ir::Buffer& buffer_;
  const std::vector<uint64_t>& vars_;
};

/// A perfect T.Parallel nest over exactly `b`'s shape whose innermost body
/// begins with a store to `b` at the nest's variables and touches `b` only
/// there (that the store's value does not read `b` the caller checks).
bool parallel_overwrite(const ir::ForStmt& outer, const ir::Buffer& b) {
  std::vector<uint64_t> vars;
  const ir::ForStmt* loop = &outer;
  for (;;) {
    const size_t d = vars.size();
    if (loop->for_kind != ir::ForKind::kParallel || int(d) >= b.rank()) return false;
    const ir::Expr& dim = b.shape()[d];
    if (!loop->min.is_const() || loop->min.int_value() != 0 || !loop->extent.is_const() ||
        !dim.is_const() || loop->extent.int_value() != dim.int_value()) {
      return false;
    }
    vars.push_back(loop->var.var_id());
    if (int(vars.size()) == b.rank()) break;
    std::vector<const ir::Stmt*> inner;
    flatten(loop->body, &inner);
    if (inner.size() != 1 || (loop = inner[0]->as<ir::ForStmt>()) == nullptr) return false;
  }
  std::vector<const ir::Stmt*> body;
  flatten(loop->body, &body);
  if (body.empty()) return false;
  const auto* store = body[0]->as<ir::StoreStmt>();
  if (store == nullptr || store->buffer != b || !at_vars(store->indices, vars)) return false;
  OnlyAtVars check(b, vars);
  check.visit(loop->body);
  return check.ok;
}

/// `s` overwrites all of `b` (condition 3 of the Note, less the reads, which
/// the caller checks at the statement's position).
bool overwritten(const ir::Stmt& s, const ir::Buffer& b) {
  switch (s.kind()) {
    case ir::StmtKind::kCopy: return covers(s.as<ir::CopyOp>()->dst, b);
    case ir::StmtKind::kFill: return covers(s.as<ir::FillOp>()->dst, b);
    case ir::StmtKind::kGemm: {
      const auto* g = s.as<ir::GemmOp>();
      return g->clear_accum && covers(g->c, b);
    }
    case ir::StmtKind::kReduce: {
      const auto* r = s.as<ir::ReduceOp>();
      return r->clear && covers(r->dst, b);
    }
    case ir::StmtKind::kFor: return parallel_overwrite(*s.as<ir::ForStmt>(), b);
    default: return false;
  }
}

/// The buffer's first access in `loop` (one exists).
std::vector<Access>::const_iterator first_in(const Loop& loop, const std::vector<Access>& a) {
  return std::lower_bound(a.begin(), a.end(), loop.begin,
                          [](const Access& x, int64_t p) { return x.pos < p; });
}

/// Conditions 1-4 of Note [Shared-memory liveness] for the buffer `b` in
/// `loop`; `a` are its accesses, in order, some inside the loop.
bool overwritten_first(const Loop& loop, const std::vector<Access>& a, const ir::Buffer& b) {
  if (!loop.may_be_fresh || a.back().pos > loop.end) return false;
  const auto first = first_in(loop, a);
  if (first->pos == loop.begin || first->read) return false;
  for (const BodyStmt& s : loop.body) {
    if (s.begin <= first->pos && first->pos <= s.end) return overwritten(*s.stmt, b);
  }
  return false;  // unreachable: every body position is in one of its statements
}

/// The buffer is fresh each iteration of loops[l]: overwritten first, or
/// first touched in an inner loop where it is (it is then touched nowhere
/// after that loop, so no value of it leaves one of that loop's
/// iterations). Loops are numbered in the order of their headers, so those
/// inside loops[l] follow it.
bool fresh_in(const std::vector<Loop>& loops, size_t l, const std::vector<Access>& a,
              const ir::Buffer& b) {
  if (overwritten_first(loops[l], a, b)) return true;
  if (!loops[l].may_be_fresh) return false;
  const int64_t first = first_in(loops[l], a)->pos;
  for (size_t m = l + 1; m < loops.size() && loops[m].begin <= loops[l].end; ++m) {
    const bool holds_first = loops[m].begin < first && first <= loops[m].end;
    if (holds_first && overwritten_first(loops[m], a, b)) return true;
  }
  return false;
}

struct Live {
  int64_t lo = 0, hi = 0;  // positions, both included
  bool overlaps(const Live& o) const { return lo <= o.hi && o.lo <= hi; }
};

Live live_range(const std::vector<Access>& a, const std::vector<Loop>& loops,
                const ir::Buffer& b, int64_t last_pos) {
  Live r;
  if (a.empty()) {  // never accessed: live throughout
    r.hi = std::max<int64_t>(last_pos, 0);
    return r;
  }
  r.lo = a.front().read ? 0 : a.front().pos;
  r.hi = a.back().pos;
  for (size_t l = 0; l < loops.size(); ++l) {
    const Loop& loop = loops[l];
    const auto in = first_in(loop, a);
    if (in == a.end() || in->pos > loop.end) continue;  // no access in the loop
    if (fresh_in(loops, l, a, b)) continue;
    r.lo = std::min(r.lo, loop.begin);
    r.hi = std::max(r.hi, loop.end);
  }
  return r;
}

}  // namespace

SmemPlan plan_shared_memory(const ir::Stmt& body, const std::vector<SmemRequest>& requests) {
  std::unordered_map<uint64_t, size_t> index;
  for (size_t i = 0; i < requests.size(); ++i) {
    const SmemRequest& q = requests[i];
    TILEJIT_CHECK(q.buffer.defined(), kInternalError)
        << "plan_shared_memory: request #" << i << " has no buffer";
    TILEJIT_CHECK(q.bytes >= 0, kInternalError)
        << "plan_shared_memory: buffer " << q.buffer.name() << " requests " << q.bytes
        << " bytes";
    TILEJIT_CHECK(index.emplace(q.buffer.id(), i).second, kInternalError)
        << "plan_shared_memory: buffer " << q.buffer.name() << " (id " << q.buffer.id()
        << ") is requested twice";
  }
  Numbering numbering(index);
  numbering.visit(body);

  std::vector<Live> live(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    live[i] = live_range(numbering.accesses()[i], numbering.loops(), requests[i].buffer,
                         numbering.last_pos());
  }

  // Largest first (ties: earlier range, then request order), so that the
  // big tiles settle at the bottom and small ones fill the gaps above.
  std::vector<size_t> order(requests.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (requests[x].bytes != requests[y].bytes) return requests[x].bytes > requests[y].bytes;
    return live[x].lo < live[y].lo;
  });

  SmemPlan plan;
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> taken;  // [offset, end) of the overlapping ones
  for (size_t i : order) {
    const int64_t bytes = requests[i].bytes;
    taken.clear();
    for (size_t j : placed) {
      if (live[i].overlaps(live[j]) && requests[j].bytes > 0) {
        const int64_t off = plan.offsets[requests[j].buffer.id()];
        taken.emplace_back(off, off + requests[j].bytes);
      }
    }
    std::sort(taken.begin(), taken.end());
    const int64_t align = std::max(kAlign, requests[i].align);
    int64_t offset = 0;
    for (const auto& [lo, hi] : taken) {
      if (offset + bytes <= lo) break;  // fits below this one, and so below all later ones
      offset = std::max(offset, align_up(hi, align));
    }
    plan.offsets[requests[i].buffer.id()] = offset;
    plan.bytes[requests[i].buffer.id()] = bytes;
    plan.total = std::max(plan.total, offset + bytes);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace tilejit::cuda
