// Note [Register accumulators] and Note [Padded gemm operands] in
// fragments.h.
#include "backend/cuda/fragments.h"
#include "backend/cuda/warpgroup_gemms.h"

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
bool is_reduced_float(DataType t) { return t == DataType::float32() || is_16bit_float(t); }
// The element types of 1-D register fragments (Note [1-D and replicated fragments]).
bool is_vector_dtype(DataType t) {
  return t.lanes == 1 && (is_reduced_float(t) || (t.is_int() && t.bits >= 8 && t.bits <= 64));
}

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

// A T.Parallel nest and the candidates it accesses.
struct Nest {
  size_t depth = 0;            // loops (0: not a plain nest over constant extents)
  std::set<uint64_t> tiles;    // 2-D candidates at [i, j]
  std::set<uint64_t> rows;     // 1-D candidates at [i]
  std::set<uint64_t> stored;   // every buffer stored in the nest
  std::set<uint64_t> loaded;   // every buffer loaded in the nest
  std::set<uint64_t> local;    // the thread-local buffers it stores
  bool tile_ops = false;       // an atomic add or print of an element
};

// Every use of the kernel's fragments, and the candidates' disqualification
// (Note [Register accumulators]).
// The A operand in registers of a gemm into an accumulator over wm x wr
// warps: an m x k tile over wm warp rows, held alike by the wr warps of
// each.
AccLayout operand_layout(int64_t m, int64_t k, int wm, int wr, bool il_rows) {
  AccLayout l{m, k, wm, 1};
  l.wr = wr;
  l.il_rows = il_rows;
  return l;
}

class Uses : public ir::IRVisitor {
 public:
  // 2-D float32 or 16-bit fragments, and 1-D float32, 16-bit or integer
  // ones, of constant shape.
  std::map<uint64_t, ir::Buffer> candidates;
  std::set<uint64_t> out;  // disqualified
  // The first op that disqualified each (the lowering report's forced_by).
  std::map<uint64_t, runtime::Diagnostic> why;
  // 1-D candidates that cannot be replicated (Note [1-D and replicated
  // fragments]), with the first op that said so; and those an element of
  // which is accessed at a constant index (which want to be).
  std::set<uint64_t> repl_out, at_constant;
  std::map<uint64_t, runtime::Diagnostic> repl_why;
  // Whole reductions of a 1-D candidate into one element: (src, dst).
  std::vector<std::pair<uint64_t, ir::Buffer>> whole_reductions;
  std::map<uint64_t, std::vector<const ir::GemmOp*>> as_c, as_a;
  std::vector<const ir::GemmOp*> all_gemms;
  // Whole-buffer copies between two candidates (src, dst), and row
  // reductions of a candidate into a row candidate (src, dst).
  std::vector<std::pair<uint64_t, uint64_t>> links, reductions;
  std::set<uint64_t> reduced_16;  // 16-bit tiles reduced over their rows
  // 1-D candidates copied to or from a strided column: a row vector's
  // layout alone takes that.
  std::set<uint64_t> strided;
  std::vector<Nest> nests;
  std::vector<ir::Buffer> fragments;  // every fragment, in program order

  bool is_rows(uint64_t id) const { return candidates.at(id).rank() == 1; }

 private:
  bool is_candidate(const ir::Buffer& b) const { return candidates.count(b.id()) != 0; }
  // Out of every register layout.
  void drop(const ir::Buffer& b, const char* reason) {
    drop_tiled(b, reason);
    drop_repl(b, reason);
  }
  // Out of the tile, row-vector and 1-D partitioned layouts.
  void drop_tiled(const ir::Buffer& b, const char* reason) {
    if (!is_candidate(b)) return;
    out.insert(b.id());
    why.emplace(b.id(), runtime::Diagnostic{op_, span_, "shared", reason});
  }
  // Out of the replicated layout.
  void drop_repl(const ir::Buffer& b, const char* reason) {
    if (!is_candidate(b) || b.rank() != 1) return;
    repl_out.insert(b.id());
    repl_why.emplace(b.id(), runtime::Diagnostic{op_, span_, "shared", reason});
  }
  // The op whose use of a fragment is being judged, at its line.
  void at(std::string op, const ir::Span& span) {
    op_ = std::move(op);
    span_ = span;
  }

  void add_candidate(const ir::Buffer& b) {
    if (b.scope() != ir::Scope::kFragment) return;
    const bool tile = b.rank() == 2 && (b.dtype() == DataType::float32() ||
                                        is_16bit_float(b.dtype())) &&
                      dim(b, 0) > 0 && dim(b, 1) > 0;
    const bool rows = b.rank() == 1 && is_vector_dtype(b.dtype()) && dim(b, 0) > 0;
    if (tile || rows) candidates.emplace(b.id(), b);
  }

  // An access in the current nest: acc[i, j] at exactly its indices, or
  // rows[i] at the nest's first index.
  void access(const ir::Buffer& b, const std::vector<Expr>& indices, bool store) {
    if (in_nest_) (store ? nests.back().stored : nests.back().loaded).insert(b.id());
    if (in_nest_ && store && b.scope() == ir::Scope::kLocal) nests.back().local.insert(b.id());
    if (!is_candidate(b)) return;
    // Replicated: constant indices, and no store in a nest.
    bool constant = true;
    for (const Expr& i : indices) constant = constant && i.is_const();
    if (!constant) {
      drop_repl(b, in_nest_ ? "an element accessed at an index of a T.Parallel nest"
                            : "an element accessed at an index that is not a constant");
    } else if (in_nest_ && store) {
      drop_repl(b, "an element stored in a T.Parallel nest");
    }
    if (constant && b.rank() == 1) at_constant.insert(b.id());
    // Row vectors are stored only in 1-D nests (a register loop over rows).
    const size_t depth = nest_vars_.size();
    const size_t want = b.rank() == 2 ? 2 : (store ? 1 : std::min<size_t>(depth, 2));
    if (depth == 0 || depth != want || indices.size() != size_t(b.rank())) {
      drop_tiled(b, depth == 0 ? "an element accessed outside a T.Parallel nest over constant "
                                 "extents"
                               : "an element accessed in a T.Parallel nest of another rank");
      return;
    }
    for (size_t d = 0; d < indices.size(); ++d) {
      if (!indices[d].is_var() || indices[d].var_id() != nest_vars_[d] ||
          nest_extents_[d] != dim(b, d)) {
        drop_tiled(b, "an element accessed at other indices than the T.Parallel nest's");
        return;
      }
    }
    (b.rank() == 2 ? nests.back().tiles : nests.back().rows).insert(b.id());
  }

  void visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) override {
    if (op->buffer.scope() == ir::Scope::kFragment) fragments.push_back(op->buffer);
    add_candidate(op->buffer);
  }

  void visit_load(const ir::LoadNode* op, const Expr& e) override {
    access(op->buffer, op->indices, false);
    ir::IRVisitor::visit_load(op, e);
  }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    if (!in_nest_) at("store", s.span());
    access(op->buffer, op->indices, true);
    ir::IRVisitor::visit_store(op, s);
  }

  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
    const bool shared_loop =
        op->for_kind == ir::ForKind::kParallel;
    if (!shared_loop || in_nest_) {
      ir::IRVisitor::visit_for(op, s);
      return;
    }
    // The lowering's nest (tile_codegen.cpp): its loops' indices, then the body.
    const std::vector<const ir::ForStmt*> nest = parallel_nest(*op);
    nests.emplace_back();
    in_nest_ = true;
    at("T.Parallel", s.span());
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
    nests.back().depth = nest_vars_.size();
    visit(nest.back()->body);
    in_nest_ = false;
    nest_vars_.clear();
  }

  void visit_region(const ir::Region& r) override {
    ir::IRVisitor::visit_region(r);
    // Whole-buffer tile-op operands are judged by the op; a slice is not.
    if (!is_whole(r)) drop(r.buffer, "a slice of the fragment is an operand");
  }

  void visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override {
    at("T.copy", s.span());
    const bool src = is_candidate(op->src.buffer), dst = is_candidate(op->dst.buffer);
    if (src && dst) {
      // Register to register where both stay there with one layout.
      if (op->src.buffer.rank() == op->dst.buffer.rank() &&
          dim(op->src.buffer, 0) == dim(op->dst.buffer, 0) &&
          (op->src.buffer.rank() == 1 || dim(op->src.buffer, 1) == dim(op->dst.buffer, 1))) {
        links.emplace_back(op->src.buffer.id(), op->dst.buffer.id());
      } else {
        drop(op->src.buffer, "a copy between fragments of different shapes");
        drop(op->dst.buffer, "a copy between fragments of different shapes");
      }
    } else {
      // The other side: a row-major rectangle of memory the whole block can
      // reach (not a thread's local buffer).
      for (const auto& [self, other] : {std::pair{&op->src, &op->dst}, std::pair{&op->dst, &op->src}}) {
        if (!is_candidate(self->buffer)) continue;
        const ir::Buffer& b = self->buffer;
        bool column = false;
        if (other->buffer.scope() == ir::Scope::kLocal ||
            !rectangle(*other, b.rank() == 2 ? dim(b, 0) : 1, dim(b, b.rank() - 1), &column)) {
          drop(b, other->buffer.scope() == ir::Scope::kLocal
                      ? "a copy to or from a thread's local buffer"
                      : "a copy to or from a region that is not a row-major rectangle of its "
                        "shape");
        } else if (column) {
          strided.insert(b.id());
        }
      }
    }
    ir::IRVisitor::visit_copy(op, s);
  }

  // `r`'s extents other than 1 are exactly (m, n) (or n where m is 1), n in
  // its last dimension; or, *strided set, n where m is 1 in another one.
  static bool rectangle(const ir::Region& r, int64_t m, int64_t n, bool* strided) {
    if (r.is_whole()) {
      if (m == 1 && r.buffer.rank() == 1) return dim(r.buffer, 0) == n;
      return r.buffer.rank() == 2 && dim(r.buffer, 0) == m && dim(r.buffer, 1) == n;
    }
    std::vector<int64_t> big;
    for (const ir::Range& range : r.ranges) {
      if (!range.extent.is_const()) return false;
      if (range.extent.int_value() != 1) big.push_back(range.extent.int_value());
    }
    // One element: every extent is 1.
    const std::vector<int64_t> want = m == 1 && n == 1 ? std::vector<int64_t>{}
                                      : m == 1         ? std::vector<int64_t>{n}
                                                       : std::vector<int64_t>{m, n};
    const ir::Range& last = r.ranges.back();
    const bool row = last.extent.is_const() && last.extent.int_value() == n;
    // A vector may also be a strided column, which a row vector's layout
    // takes (rows_store / rows_load) and no other.
    if (m == 1 && n > 1 && big == want && !row) {
      *strided = true;
      return true;
    }
    return big == want && row;
  }
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) override {
    if (in_nest_) nests.back().tile_ops = true;
    at("T.gemm", s.span());
    drop(op->b.buffer, "the B operand of a gemm is read from shared memory");
    all_gemms.push_back(op);
    const ir::Buffer& a = op->a.buffer;
    if (is_candidate(a) && is_16bit_float(a.dtype()) && !op->trans_a) {
      as_a[a.id()].push_back(op);
    } else {
      drop(a, "an A operand that is transposed or not 16-bit");
    }
    const ir::Buffer& c = op->c.buffer;
    if (is_candidate(c) && c.rank() == 2 && c.dtype() == DataType::float32()) {
      as_c[c.id()].push_back(op);
    } else {
      drop(c, "an accumulator that is not a 2-D float32 fragment");
    }
    ir::IRVisitor::visit_gemm(op, s);
  }
  void visit_fill(const ir::FillOp* op, const ir::Stmt& s) override {
    if (in_nest_) nests.back().tile_ops = true;
    at("T.fill", s.span());
    ir::IRVisitor::visit_fill(op, s);
  }
  void visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) override {
    if (in_nest_) nests.back().tile_ops = true;
    const ir::Buffer& src = op->src.buffer;
    const ir::Buffer& dst = op->dst.buffer;
    const bool rows = op->dim == 1 && is_whole(op->dst) && dst.rank() == 1 &&
                      is_candidate(src) && src.rank() == 2;
    // Note [1-D and replicated fragments]: a 1-D tile into one element.
    int64_t dst_elements = 1;
    for (size_t d = 0; d < size_t(dst.rank()); ++d) dst_elements *= dim(dst, d);
    const bool whole = src.rank() == 1 && is_candidate(src) && is_whole(op->src) &&
                       is_whole(op->dst) && dst_elements == 1;
    at(std::string("T.reduce_") + ir::reduce_kind_name(op->reduce_kind), s.span());
    if (whole) {
      whole_reductions.emplace_back(src.id(), dst);
      drop_repl(src, "reduced as a whole (a 1-D tile over the threads)");
      drop_tiled(dst, "the result of a 1-D tile's reduction, which registers hold replicated");
      if (!is_reduced_float(dst.dtype()) || dst.scope() == ir::Scope::kLocal) {
        drop(src, "reduced into a thread's local buffer or into neither float32 nor a 16-bit "
                  "float");
      }
    } else if (!rows) {
      drop(src, "a reduction other than a whole tile's rows (dim=1) into a row vector, or a "
                "whole 1-D tile into one element");
      drop(dst, "a reduction other than a whole tile's rows (dim=1) into a row vector, or a "
                "whole 1-D tile into one element");
    } else {
      drop_repl(dst, "the rows of a tile reduced into it");
      // An mma layout reduces float32 alone (Note [Partitioned fragments]).
      if (src.dtype() != DataType::float32()) reduced_16.insert(src.id());
      if (is_candidate(dst)) reductions.emplace_back(src.id(), dst.id());
    }
    ir::IRVisitor::visit_reduce(op, s);
  }
  void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt& s) override {
    if (in_nest_) nests.back().tile_ops = true;
    at("T.atomic_add", s.span());
    drop(op->dst.buffer, "an operand of an atomic add");
    if (op->src.buffer.defined()) drop(op->src.buffer, "an operand of an atomic add");
    ir::IRVisitor::visit_atomic_add(op, s);
  }
  void visit_print(const ir::PrintOp* op, const ir::Stmt& s) override {
    if (in_nest_) nests.back().tile_ops = true;
    at("T.print", s.span());
    if (op->region.buffer.defined()) drop(op->region.buffer, "printed");
    ir::IRVisitor::visit_print(op, s);
  }

  bool in_nest_ = false;
  std::string op_;
  ir::Span span_;
  std::vector<uint64_t> nest_vars_;
  std::vector<int64_t> nest_extents_;
};

// A gemm the tensor cores can run into an accumulator of `layout`, with A
// in registers of `a_layout` when it is given.
bool mma_gemm(const ir::GemmOp& g, const AccLayout& layout, const AccLayout* a_layout) {
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
  // A in registers: the C's warp rows, each of its WN warps holding the whole row's A.
  if (a_layout != nullptr &&
      !(*a_layout == operand_layout(m, k, layout.wm, layout.wn, layout.il_rows) && !g.trans_a)) {
    return false;
  }
  // Short accumulators read 16 rows of an untransposed A (Note [Short accumulators]).
  if (layout.m_real > 0 && g.trans_a) return false;
  return is_whole(g.a) && is_whole(g.b) && k % 16 == 0 && m == layout.buffer_rows() &&
         n == layout.n;
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

// Row vectors (Note [Register accumulators]): the rows of the accumulators
// they meet (reductions into them, 2-D nests over both), agreed on through
// copies and 1-D nests; a 1-D nest over a row vector in registers is a loop
// over the thread's rows, so all it stores must be such row vectors.
// `vectors`: the 1-D fragments choose_vectors placed or kept from them.
void choose_rows(const Uses& uses, std::map<uint64_t, AccLayout>& regs,
                 const std::set<uint64_t>& vectors) {
  std::map<uint64_t, AccLayout> want;
  std::set<uint64_t> out = vectors;
  for (const auto& [id, b] : uses.candidates) {
    if (b.rank() == 1 && uses.out.count(id)) out.insert(id);
  }
  auto tile_layout = [&](uint64_t id) -> const AccLayout* {
    auto it = regs.find(id);
    return it == regs.end() || it->second.flat || it->second.repl ? nullptr : &it->second;
  };
  auto require = [&](uint64_t id, const AccLayout* tile) {
    if (out.count(id)) return;
    // An mma layout's row vectors hold float32 (its reductions' type).
    if (tile == nullptr || tile->m != dim(uses.candidates.at(id), 0) ||
        (!tile->part() && uses.candidates.at(id).dtype() != DataType::float32())) {
      out.insert(id);
      return;
    }
    auto [it, fresh] = want.emplace(id, tile->row_layout());
    if (!fresh && !(it->second == tile->row_layout())) out.insert(id);
  };
  for (const auto& [src, dst] : uses.reductions) {
    if (!is_reduced_float(uses.candidates.at(dst).dtype())) out.insert(dst);
    require(dst, tile_layout(src));
  }
  for (const Nest& nest : uses.nests) {
    if (nest.depth == 1 || nest.rows.empty()) continue;
    const AccLayout* tile = nullptr;
    for (uint64_t id : nest.tiles) {
      if (tile == nullptr) tile = tile_layout(id);
    }
    for (uint64_t id : nest.rows) require(id, tile);
  }
  for (bool changed = true; changed;) {
    changed = false;
    auto agree = [&](uint64_t x, uint64_t y) {
      if (out.count(x) || out.count(y)) return;
      auto ix = want.find(x), iy = want.find(y);
      if (ix == want.end() && iy == want.end()) return;
      if (ix == want.end()) {
        want.emplace(x, iy->second);
      } else if (iy == want.end()) {
        want.emplace(y, ix->second);
      } else if (ix->second == iy->second) {
        return;
      } else {
        out.insert(y);
      }
      changed = true;
    };
    for (const auto& [src, dst] : uses.links) {
      if (uses.is_rows(src)) agree(src, dst);
    }
    for (const Nest& nest : uses.nests) {
      if (nest.depth != 1 || nest.rows.empty()) continue;
      // Its stores: register row vectors, or memory at a row the nest does
      // not read (one thread of the row's stores it; the lowering's
      // leader()), never a thread's local buffer.
      bool loop = !nest.tile_ops;
      for (uint64_t id : nest.stored) {
        const bool row = uses.candidates.count(id) && uses.is_rows(id) && !out.count(id);
        const bool memory = !nest.local.count(id) && !nest.loaded.count(id) &&
                            !(uses.candidates.count(id) && !uses.is_rows(id));
        loop = loop && (row || memory);
      }
      if (!loop) {
        for (uint64_t id : nest.rows) changed = out.insert(id).second || changed;
        continue;
      }
      for (uint64_t x : nest.rows) {
        for (uint64_t y : nest.rows) {
          if (x != y) agree(x, y);
        }
      }
    }
  }
  for (const auto& [id, layout] : want) {
    if (!out.count(id)) regs.emplace(id, layout);
  }
}

// Note [1-D and replicated fragments]: the 1-D fragments that no tile's
// rows involve, replicated or partitioned. Returns the 1-D fragments that
// choose_rows is to leave alone; `why` gets what kept one of them from
// registers where no op of Uses said it.
std::set<uint64_t> choose_vectors(const Uses& uses, int threads,
                                  std::map<uint64_t, AccLayout>& regs,
                                  std::map<uint64_t, runtime::Diagnostic>& why) {
  // The row vectors' fragments: reduced into from a tile's rows, read in a
  // 2-D nest, and those they meet in copies and 1-D nests.
  std::set<uint64_t> involved;
  for (const auto& [src, dst] : uses.reductions) involved.insert(dst);
  for (const Nest& nest : uses.nests) {
    if (nest.depth == 2) involved.insert(nest.rows.begin(), nest.rows.end());
  }
  for (bool changed = true; changed;) {
    changed = false;
    auto join = [&](const std::set<uint64_t>& ids) {
      bool any = false;
      for (uint64_t id : ids) any = any || involved.count(id);
      if (!any) return;
      for (uint64_t id : ids) changed = involved.insert(id).second || changed;
    };
    for (const auto& [src, dst] : uses.links) {
      if (uses.is_rows(src)) join({src, dst});
    }
    for (const Nest& nest : uses.nests) {
      if (nest.depth == 1) join(nest.rows);
    }
  }
  std::map<uint64_t, AccLayout> want;
  std::set<uint64_t> mine;  // the whole reductions' sources, and what is placed here
  for (const auto& [src, dst] : uses.whole_reductions) mine.insert(src);
  for (const auto& [id, b] : uses.candidates) {
    if (b.rank() != 1 || involved.count(id)) continue;
    const int64_t n = dim(b, 0);
    if (uses.strided.count(id)) {
      why.emplace(id, runtime::Diagnostic{"T.alloc_fragment", b->span, "shared",
                                          "a copy to or from a strided column, which only the "
                                          "row vector of a tile's rows takes"});
      continue;
    }
    if (!uses.repl_out.count(id) && n <= kMaxReplicated) {
      AccLayout l{n, 0};
      l.repl = true;
      want.emplace(id, l);
      continue;
    }
    if (uses.out.count(id)) continue;
    if (std::optional<AccLayout> l = part_layout(1, n, threads)) {
      l->flat = true;
      want.emplace(id, *l);
    } else {
      why.emplace(id, runtime::Diagnostic{
                          "T.alloc_fragment", b->span, "shared",
                          "no partitioned layout of " + std::to_string(n) + " elements over " +
                              std::to_string(threads) +
                              " threads (runs of 8, 4, 2 or 1 elements that the threads divide "
                              "evenly, at most " +
                              std::to_string(kMaxAccRegisters) + " a thread)"});
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    auto drop = [&](uint64_t id, const ir::Span& span, const std::string& op,
                    const std::string& reason) {
      if (want.erase(id) == 0) return;
      why.emplace(id, runtime::Diagnostic{op, span, "shared", reason});
      changed = true;
    };
    // A copy between two of them is register to register in one layout;
    // to or from one in shared memory, it loads or stores.
    for (const auto& [src, dst] : uses.links) {
      auto x = want.find(src), y = want.find(dst);
      if (x == want.end() || y == want.end() || x->second.repl == y->second.repl) continue;
      const ir::Span span = uses.candidates.at(dst)->span;
      drop(src, span, "T.copy", "a copy between a replicated and a partitioned fragment");
      drop(dst, span, "T.copy", "a copy between a replicated and a partitioned fragment");
    }
    // A whole reduction into registers reads its tile from registers.
    for (const auto& [src, dst] : uses.whole_reductions) {
      auto x = want.find(src);
      if (want.count(dst.id()) && (x == want.end() || !x->second.flat)) {
        drop(dst.id(), dst->span, "T.alloc_fragment",
             "the result of a reduction of a 1-D fragment kept in shared memory");
      }
    }
  }
  for (const auto& [id, l] : want) {
    regs.emplace(id, l);
    mine.insert(id);
  }
  for (const auto& [id, b] : uses.candidates) {
    if (b.rank() == 1 && !involved.count(id)) mine.insert(id);
  }
  return mine;
}

}  // namespace

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

// What kept each fragment that is not in registers in shared memory, for
// the lowering report: the first op that disqualified it, or what no op
// decided (its dtype or rank, the block's threads, the gemm's shape).
static void explain_shared(const Uses& uses, int threads, const std::set<uint64_t>& in_groups,
                           const std::map<uint64_t, runtime::Diagnostic>& vector_why,
                           FragmentChoice& choice) {
  for (const ir::Buffer& b : uses.fragments) {
    if (choice.registers.count(b.id())) continue;
    runtime::Diagnostic d{"T.alloc_fragment", b->span, "shared", ""};
    if (!uses.candidates.count(b.id())) {
      d.reason = "no register layout for a fragment of this dtype, rank or shape (2-D float32 "
                 "or 16-bit, or 1-D float32, 16-bit or integer, of constant shape)";
    } else if (in_groups.count(b.id())) {
      d.reason = "used by the ops of a range of the block's threads";
    } else if (threads % 32 != 0) {
      d.reason = std::to_string(threads) + " threads per block, not whole warps";
    } else if (auto r = uses.repl_why.find(b.id());
               r != uses.repl_why.end() && uses.at_constant.count(b.id())) {
      // Accessed at constant indices: why it is not replicated.
      d = r->second;
    } else if (auto v = vector_why.find(b.id()); v != vector_why.end()) {
      d = v->second;
    } else if (auto w = uses.why.find(b.id()); w != uses.why.end()) {
      d = w->second;
    } else if (auto c = uses.as_c.find(b.id()); c != uses.as_c.end()) {
      d = {"T.gemm", c->second.front()->span, "shared",
           "the tensor cores cannot run this gemm into registers (16-bit A and B of one dtype, "
           "M and N multiples of 16 per warp, K a multiple of 16, at most " +
               std::to_string(kMaxAccRegisters) + " registers per thread)"};
    } else {
      d.reason = "its uses agree on no register layout of an accumulator's rows";
    }
    choice.kept_shared.emplace(b.id(), std::move(d));
  }
}

// Note [Register budget] (fragments.h).
// Returns whether it moved any.
static bool fit_register_budget(const Uses& uses, int threads, std::map<uint64_t, AccLayout>& regs,
                                std::map<uint64_t, runtime::Diagnostic>& why) {
  const int64_t budget = register_budget(threads);
  int64_t total = 0;
  for (const auto& [id, l] : regs) total += l.words(uses.candidates.at(id).dtype().bytes());
  if (total <= budget) return false;
  std::vector<uint64_t> alike;  // held alike by the warps of a warp row
  for (const auto& [id, l] : regs) {
    if (l.wr > 1) alike.push_back(id);
  }
  for (uint64_t id : alike) {
    const bool operand = !regs.at(id).rows();
    regs.erase(id);
    why.emplace(id, runtime::Diagnostic{
                        "T.alloc_fragment", uses.candidates.at(id)->span, "shared",
                        "the kernel's register fragments would take " + std::to_string(total) +
                            " registers a thread, past the " + std::to_string(budget) +
                            " that leave room for its addresses and the gemms' fragments at " +
                            std::to_string(threads) + " threads; " +
                            (operand ? "a gemm's A that several warps would hold alike"
                                     : "a row vector that several warps would hold alike") +
                            " is kept in shared memory (Note [Register budget])"});
  }
  return !alike.empty();
}

// Note [Register accumulators].
// `min_cols`: the fewest columns of a warp's accumulator tile (8 or 16,
// Note [Register budget]); `over_budget` is set where the budget moved
// fragments to shared memory.
static FragmentChoice choose_registers(Uses& uses, int threads,
                                       const std::set<uint64_t>& in_groups,
                                       std::map<uint64_t, runtime::Diagnostic>& vector_why,
                                       int min_cols, bool* over_budget, bool warpgroups,
                                       const std::map<uint64_t, int>& swizzlable,
                                       const std::map<uint64_t, std::string>& refused) {
  // A register layout spreads a tile over the whole block's warps.
  uses.out.insert(in_groups.begin(), in_groups.end());
  uses.repl_out.insert(in_groups.begin(), in_groups.end());
  FragmentChoice choice;
  if (threads % 32 != 0) return choice;
  const int warps = threads / 32;
  std::map<uint64_t, AccLayout>& regs = choice.registers;
  auto in_regs = [&](uint64_t id) { return regs.count(id) != 0; };
  // Accumulators: the first gemm's policy picks the grid.
  for (const auto& [id, g] : uses.as_c) {
    if (uses.out.count(id)) continue;
    const ir::Buffer& buffer = uses.candidates.at(id);
    // Note [Short accumulators]: fewer than 16 rows are an mma tile's first.
    const int64_t rows = dim(buffer, 0), n = dim(buffer, 1);
    const int64_t m = std::max<int64_t>(rows, 16);
    // Note [Warpgroup gemms]: every warp on 16 rows of each 64 * G.
    if (auto r = refused.find(id); warpgroups && r != refused.end()) {
      choice.not_warpgroup[id] = r->second;
    } else if (warpgroups && threads % 128 == 0) {
      // All warpgroups along M, or (FullCol first) along N.
      const int groups = threads / 128;
      std::string why;
      const bool cols_first = g.front()->policy == 2;
      for (int wgn : cols_first ? std::vector<int>{groups, 1} : std::vector<int>{1, groups}) {
        AccLayout layout{m, n, 4 * (groups / wgn), wgn};
        layout.il_rows = true;
        std::string w = warpgroup_accumulator(g, swizzlable, m, n, threads, wgn);
        if (w.empty() && layout.registers() > kMaxAccRegisters) {
          w = std::to_string(layout.registers()) + " accumulator registers a thread, past " +
              std::to_string(kMaxAccRegisters);
        }
        if (w.empty()) {
          regs.emplace(id, layout);
          break;
        }
        if (why.empty()) why = w;
        if (groups == 1) break;
      }
      if (regs.count(id)) continue;
      choice.not_warpgroup[id] = why;
    } else if (warpgroups) {
      choice.not_warpgroup[id] = std::to_string(threads) + " threads are not whole warpgroups";
    }
    for (auto [wm, wn] : grids(warps, g.front()->policy, m, n)) {
      AccLayout layout{m, n, wm, wn, rows < 16 ? rows : 0};
      if (m % (16 * wm) != 0 || n % (min_cols * wn) != 0) continue;
      if (layout.registers() > kMaxAccRegisters) break;
      bool ok = true;
      for (const ir::GemmOp* op : g) ok = ok && mma_gemm(*op, layout, nullptr);
      if (!ok) break;
      regs.emplace(id, layout);
      break;
    }
  }
  // Operands: the layout of their gemms' accumulators' rows.
  for (const auto& [id, g] : uses.as_a) {
    const ir::Buffer& buffer = uses.candidates.at(id);
    if (uses.out.count(id) || uses.as_c.count(id)) continue;
    auto c = regs.find(g.front()->c.buffer.id());
    if (c == regs.end() || c->second.m_real != 0) continue;
    const AccLayout layout = operand_layout(dim(buffer, 0), dim(buffer, 1), c->second.wm,
                                           c->second.wn, c->second.il_rows);
    if (layout.m % (16 * layout.wm) != 0 || layout.n % 16 != 0 ||
        layout.registers() > kMaxAccRegisters) {
      continue;
    }
    regs.emplace(id, layout);
  }
  // Note [Partitioned fragments]: the tiles no gemm touches.
  for (const auto& [id, buffer] : uses.candidates) {
    if (buffer.rank() != 2 || uses.out.count(id) || uses.as_c.count(id) || uses.as_a.count(id)) {
      continue;
    }
    if (std::optional<AccLayout> layout = part_layout(dim(buffer, 0), dim(buffer, 1), threads)) {
      regs.emplace(id, *layout);
    }
  }
  auto is_part = [&](uint64_t id) { return in_regs(id) && regs.at(id).part(); };
  // What the 2-D choices must agree on, until nothing changes: an operand's
  // gemms run on their accumulators in registers, a register-to-register
  // copy has one layout, a nest indexes one layout.
  for (bool changed = true; changed;) {
    changed = false;
    auto drop = [&](uint64_t id) { changed = regs.erase(id) != 0 || changed; };
    for (const auto& [id, g] : uses.as_a) {
      if (!in_regs(id)) continue;
      for (const ir::GemmOp* op : g) {
        auto c = regs.find(op->c.buffer.id());
        if (c == regs.end() || !mma_gemm(*op, c->second, &regs.at(id))) drop(id);
        if (!in_regs(id)) break;
      }
    }
    for (const auto& [src, dst] : uses.links) {
      if (uses.is_rows(src) || !in_regs(src) || !in_regs(dst)) continue;
      const AccLayout x = regs.at(src), y = regs.at(dst);
      if (x == y) continue;
      // A partitioned tile gives way to an mma one.
      if (is_part(src) != is_part(dst)) {
        drop(is_part(src) ? src : dst);
      } else {
        drop(uses.as_c.count(dst) ? src : dst);
      }
    }
    for (const Nest& nest : uses.nests) {
      // The nest's layout: an mma tile's if it has one.
      const AccLayout* first = nullptr;
      for (uint64_t id : nest.tiles) {
        auto it = regs.find(id);
        if (it != regs.end() && (first == nullptr || (first->part() && !it->second.part()))) {
          first = &it->second;
        }
      }
      if (first == nullptr) continue;
      const AccLayout want = *first;
      for (uint64_t id : nest.tiles) {
        auto it = regs.find(id);
        if (it != regs.end() && !(it->second == want)) drop(id);
      }
    }
    for (uint64_t id : uses.reduced_16) {
      if (in_regs(id) && !is_part(id)) drop(id);
    }
  }
  choose_rows(uses, regs, choose_vectors(uses, threads, regs, vector_why));
  *over_budget = fit_register_budget(uses, threads, regs, vector_why);
  for (const ir::GemmOp* op : uses.all_gemms) {
    auto c = regs.find(op->c.buffer.id());
    if (c != regs.end() && c->second.m_real > 0 && !in_regs(op->a.buffer.id())) {
      choice.padded_rows[op->a.buffer.id()] = c->second.m;
    }
  }
  if (warpgroups) choice.swizzled = swizzled_operands(uses.all_gemms, swizzlable, regs);
  // The 16-bit operands of gemms that may run on tensor cores (into
  // registers, or in the library's gemm on shared C).
  for (const ir::GemmOp* op : uses.all_gemms) {
    for (const ir::Buffer* x : {&op->a.buffer, &op->b.buffer}) {
      if (is_16bit_float(x->dtype()) && x->rank() == 2 && dim(*x, 1) > 0 && dim(*x, 1) % 8 == 0 &&
          (x->scope() == ir::Scope::kShared || x->scope() == ir::Scope::kFragment) &&
          !in_regs(x->id()) && !choice.swizzled.count(x->id())) {
        choice.padded[x->id()] = true;
      }
    }
  }
  return choice;
}

bool covers_buffer(const ir::Region& r) { return is_whole(r); }

FragmentChoice choose_fragments(const ir::KernelStmt& kernel, int threads,
                                const std::set<uint64_t>& in_groups, bool warpgroups) {
  Uses uses;
  uses.visit(kernel.body);
  std::map<uint64_t, runtime::Diagnostic> vector_why;
  const std::map<uint64_t, int> swizzlable =
      warpgroups ? swizzlable_operands(kernel, in_groups) : std::map<uint64_t, int>{};
  // Note [Warpgroup gemms]: an accumulator whose gemm would run on mma.sync
  // all the same (its A a fragment the choice kept in shared memory, its
  // tiles refused) takes the mma layouts instead, and the choice is made
  // again without it.
  std::map<uint64_t, std::string> refused;
  FragmentChoice choice;
  for (bool again = true; again;) {
    bool over_budget = false;
    vector_why.clear();
    choice = choose_registers(uses, threads, in_groups, vector_why, 8, &over_budget, warpgroups,
                              swizzlable, refused);
    if (over_budget) {
      // Note [Register budget]: warp tiles of 8 columns serve row vectors and
      // operands held alike; without them, wider ones read fewer fragments.
      vector_why.clear();
      choice = choose_registers(uses, threads, in_groups, vector_why, 16, &over_budget, warpgroups,
                                swizzlable, refused);
    }
    again = false;
    for (const ir::GemmOp* op : uses.all_gemms) {
      auto c = choice.registers.find(op->c.buffer.id());
      if (c == choice.registers.end() || !c->second.il_rows) continue;
      const WarpgroupGemm g = warpgroup_gemm(*op, choice);
      if (g.columns > 0) continue;
      again = refused.emplace(c->first, "its T.gemm at line " + std::to_string(op->span.line) +
                                            " would run on mma.sync (" + g.why + ")")
                  .second ||
              again;
    }
  }
  explain_shared(uses, threads, in_groups, vector_why, choice);
  return choice;
}

}  // namespace tilejit::cuda
