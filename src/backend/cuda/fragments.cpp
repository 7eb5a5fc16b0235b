// Note [Register accumulators] and Note [Padded gemm operands] in
// fragments.h.
#include "backend/cuda/fragments.h"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <set>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/visitor.h"

namespace tilejit::cuda {
namespace {

using ir::Expr;

bool is_16bit_float(DataType t) { return t == DataType::bfloat16() || t == DataType::float16(); }

// The region spans all of its buffer.
bool is_whole(const ir::Region& r) {
  if (r.is_whole()) return true;
  const std::vector<Expr>& shape = r.buffer.shape();
  if (r.ranges.size() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    const ir::Range& range = r.ranges[d];
    if (!range.min.is_const() || range.min.int_value() != 0) return false;
    if (!range.extent.is_const() || !shape[d].is_const() ||
        range.extent.int_value() != shape[d].int_value()) {
      return false;
    }
  }
  return true;
}

int64_t dim(const ir::Buffer& b, size_t d) {
  const Expr& e = b.shape()[d];
  return e.is_const() ? e.int_value() : -1;
}

// Every use of the kernel's fragments, and the candidates' disqualification.
class Uses : public ir::IRVisitor {
 public:
  std::map<uint64_t, ir::Buffer> candidates;  // 2-D float32 fragments
  std::set<uint64_t> out;                      // disqualified
  std::map<uint64_t, std::vector<const ir::GemmOp*>> gemms;  // as C
  // Each T.Parallel nest: the candidates it accesses.
  std::vector<std::set<uint64_t>> nests;
  std::vector<const ir::GemmOp*> all_gemms;

  void add_candidate(const ir::Buffer& b) {
    if (b.scope() == ir::Scope::kFragment && b.rank() == 2 && b.dtype() == DataType::float32() &&
        dim(b, 0) > 0 && dim(b, 1) > 0) {
      candidates.emplace(b.id(), b);
    }
  }

 private:
  bool is_candidate(const ir::Buffer& b) const { return candidates.count(b.id()) != 0; }
  void drop(const ir::Buffer& b) {
    if (is_candidate(b)) out.insert(b.id());
  }

  // An access acc[i, j] in the current nest, at exactly its indices.
  void access(const ir::Buffer& b, const std::vector<Expr>& indices) {
    if (!is_candidate(b)) return;
    if (nest_vars_.size() != 2 || indices.size() != 2 || nest_extents_[0] != dim(b, 0) ||
        nest_extents_[1] != dim(b, 1)) {
      drop(b);
      return;
    }
    for (size_t d = 0; d < 2; ++d) {
      if (!indices[d].is_var() || indices[d].var_id() != nest_vars_[d]) {
        drop(b);
        return;
      }
    }
    nests.back().insert(b.id());
  }

  void visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) override { add_candidate(op->buffer); }

  void visit_load(const ir::LoadNode* op, const Expr& e) override {
    access(op->buffer, op->indices);
    ir::IRVisitor::visit_load(op, e);
  }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    access(op->buffer, op->indices);
    ir::IRVisitor::visit_store(op, s);
  }

  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    const bool shared_loop =
        op->for_kind == ir::ForKind::kParallel || op->for_kind == ir::ForKind::kVectorized;
    if (!shared_loop || in_nest_) {
      ir::IRVisitor::visit_for(op, s);
      return;
    }
    // The lowering's nest (tile_codegen.cpp): its loops' indices, then the body.
    const std::vector<const ir::ForStmt*> nest = parallel_nest(*op);
    nests.emplace_back();
    in_nest_ = true;
    nest_vars_.clear();
    nest_extents_.clear();
    bool plain = true;
    for (const ir::ForStmt* loop : nest) {
      visit(loop->min);
      visit(loop->extent);
      plain = plain && loop->min.is_const() && loop->min.int_value() == 0 &&
              loop->extent.is_const();
      nest_vars_.push_back(loop->var.var_id());
      nest_extents_.push_back(loop->extent.is_const() ? loop->extent.int_value() : -1);
    }
    if (!plain) nest_vars_.clear();  // no register loop: every access is a disqualification
    visit(nest.back()->body);
    in_nest_ = false;
    nest_vars_.clear();
  }

  void visit_region(const ir::Region& r) override {
    ir::IRVisitor::visit_region(r);
    // Whole-buffer tile-op operands are judged by the op; a slice is not.
    if (!is_whole(r)) drop(r.buffer);
  }

  void visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override {
    // The other side: a row-major M x N rectangle of memory the whole block
    // can reach (not a register fragment, not a thread's local buffer).
    for (const auto& [self, other] : {std::pair{&op->src, &op->dst}, std::pair{&op->dst, &op->src}}) {
      if (!is_candidate(self->buffer)) continue;
      if (is_candidate(other->buffer) || other->buffer.scope() == ir::Scope::kLocal ||
          !rectangle(*other, dim(self->buffer, 0), dim(self->buffer, 1))) {
        drop(self->buffer);
      }
    }
    ir::IRVisitor::visit_copy(op, s);
  }

  // `r`'s extents other than 1 are exactly (m, n), n in its last dimension.
  static bool rectangle(const ir::Region& r, int64_t m, int64_t n) {
    if (r.is_whole()) {
      return r.buffer.rank() == 2 && dim(r.buffer, 0) == m && dim(r.buffer, 1) == n;
    }
    std::vector<int64_t> big;
    for (const ir::Range& range : r.ranges) {
      if (!range.extent.is_const()) return false;
      if (range.extent.int_value() != 1) big.push_back(range.extent.int_value());
    }
    const ir::Range& last = r.ranges.back();
    return big == std::vector<int64_t>{m, n} && last.extent.is_const() &&
           last.extent.int_value() == n;
  }
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) override {
    drop(op->a.buffer);
    drop(op->b.buffer);
    all_gemms.push_back(op);
    if (is_candidate(op->c.buffer)) gemms[op->c.buffer.id()].push_back(op);
    ir::IRVisitor::visit_gemm(op, s);
  }
  void visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) override {
    drop(op->dst.buffer);
    if (op->dim != 1 || !is_whole(op->dst) || op->dst.buffer.rank() != 1) drop(op->src.buffer);
    ir::IRVisitor::visit_reduce(op, s);
  }
  void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt& s) override {
    drop(op->dst.buffer);
    if (op->src.buffer.defined()) drop(op->src.buffer);
    ir::IRVisitor::visit_atomic_add(op, s);
  }
  void visit_print(const ir::PrintOp* op, const ir::Stmt& s) override {
    if (op->region.buffer.defined()) drop(op->region.buffer);
    ir::IRVisitor::visit_print(op, s);
  }

  bool in_nest_ = false;
  std::vector<uint64_t> nest_vars_;
  std::vector<int64_t> nest_extents_;
};

// A gemm the tensor cores can run into an accumulator of `layout`.
bool mma_gemm(const ir::GemmOp& g, const AccLayout& layout) {
  const ir::Buffer& a = g.a.buffer;
  const ir::Buffer& b = g.b.buffer;
  if (!is_16bit_float(a.dtype()) || a.dtype() != b.dtype()) return false;
  for (const ir::Buffer* x : {&a, &b}) {
    if (x->scope() != ir::Scope::kShared && x->scope() != ir::Scope::kFragment) return false;
    if (x->rank() != 2 || dim(*x, 0) <= 0 || dim(*x, 1) <= 0 || dim(*x, 1) % 8 != 0) return false;
  }
  const int64_t k = g.trans_a ? dim(a, 0) : dim(a, 1);
  const int64_t m = g.trans_a ? dim(a, 1) : dim(a, 0);
  const int64_t n = g.trans_b ? dim(b, 0) : dim(b, 1);
  return is_whole(g.a) && is_whole(g.b) && k % 16 == 0 && m == layout.m && n == layout.n;
}

// The warp grids to try for policy `policy` (0 Square, 1 FullRow, 2 FullCol).
std::vector<std::pair<int, int>> grids(int warps, int policy, int64_t m, int64_t n) {
  std::vector<std::pair<int, int>> out;
  std::vector<std::pair<int, int>> all;
  for (int wm = 1; wm <= warps; ++wm) {
    if (warps % wm == 0) all.emplace_back(wm, warps / wm);
  }
  // Square: the most even split of the tile first.
  std::vector<std::pair<int, int>> square = all;
  std::sort(square.begin(), square.end(), [&](auto x, auto y) {
    const int64_t dx = std::llabs(m / x.first - n / x.second);
    const int64_t dy = std::llabs(m / y.first - n / y.second);
    return dx < dy;
  });
  if (policy == 1) out.emplace_back(warps, 1);
  if (policy == 2) out.emplace_back(1, warps);
  out.insert(out.end(), square.begin(), square.end());
  return out;
}

}  // namespace

std::string AccLayout::type() const {
  return "tilejit::cuda::MmaAcc<" + std::to_string(m) + ", " + std::to_string(n) + ", " +
         std::to_string(wm) + ", " + std::to_string(wn) + ">";
}

std::vector<const ir::ForStmt*> parallel_nest(const ir::ForStmt& op) {
  std::vector<const ir::ForStmt*> nest{&op};
  for (;;) {
    const ir::Stmt& body = nest.back()->body;
    const ir::ForStmt* inner = nullptr;
    if (body.kind() == ir::StmtKind::kFor) inner = body.as<ir::ForStmt>();
    if (body.kind() == ir::StmtKind::kSeq && body.as<ir::SeqStmt>()->stmts.size() == 1 &&
        body.as<ir::SeqStmt>()->stmts[0].kind() == ir::StmtKind::kFor) {
      inner = body.as<ir::SeqStmt>()->stmts[0].as<ir::ForStmt>();
    }
    if (inner == nullptr || inner->for_kind != ir::ForKind::kParallel) return nest;
    nest.push_back(inner);
  }
}

FragmentChoice choose_fragments(const ir::KernelStmt& kernel, int threads) {
  Uses uses;
  uses.visit(kernel.body);
  FragmentChoice choice;
  if (threads % 32 != 0) return choice;
  const int warps = threads / 32;
  for (const auto& [id, buffer] : uses.candidates) {
    auto g = uses.gemms.find(id);
    if (uses.out.count(id) || g == uses.gemms.end()) continue;
    const int64_t m = dim(buffer, 0), n = dim(buffer, 1);
    for (auto [wm, wn] : grids(warps, g->second.front()->policy, m, n)) {
      AccLayout layout{m, n, wm, wn};
      if (m % (16 * wm) != 0 || n % (16 * wn) != 0) continue;
      if (layout.registers() > kMaxAccRegisters) break;
      bool ok = true;
      for (const ir::GemmOp* op : g->second) ok = ok && mma_gemm(*op, layout);
      if (!ok) break;
      choice.registers.emplace(id, layout);
      break;
    }
  }
  // A nest indexes one register layout at most.
  for (const std::set<uint64_t>& nest : uses.nests) {
    const AccLayout* first = nullptr;
    for (uint64_t id : nest) {
      auto it = choice.registers.find(id);
      if (it == choice.registers.end()) continue;
      if (first == nullptr) {
        first = &it->second;
      } else if (!(it->second == *first)) {
        choice.registers.erase(it);
      }
    }
  }
  // The 16-bit operands of gemms that may run on tensor cores (into
  // registers, or in the library's gemm on shared C).
  for (const ir::GemmOp* op : uses.all_gemms) {
    for (const ir::Buffer* x : {&op->a.buffer, &op->b.buffer}) {
      if (is_16bit_float(x->dtype()) && x->rank() == 2 && dim(*x, 1) > 0 && dim(*x, 1) % 8 == 0 &&
          (x->scope() == ir::Scope::kShared || x->scope() == ir::Scope::kFragment) &&
          !choice.registers.count(x->id())) {
        choice.padded[x->id()] = true;
      }
    }
  }
  return choice;
}

}  // namespace tilejit::cuda
