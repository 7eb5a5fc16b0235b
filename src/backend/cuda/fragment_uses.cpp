// The uses of a kernel's fragments (fragment_uses.h).
#include "backend/cuda/fragment_uses.h"

#include <algorithm>

#include "tilejit/ir/buffer.h"

namespace tilejit::cuda {

using ir::Expr;

bool is_16bit_float(DataType t) { return t == DataType::bfloat16() || t == DataType::float16(); }
bool is_reduced_float(DataType t) { return t == DataType::float32() || is_16bit_float(t); }
bool is_vector_dtype(DataType t) {
  return t.lanes == 1 && (is_reduced_float(t) || (t.is_int() && t.bits >= 8 && t.bits <= 64));
}

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

ir::Region whole_slices(const ir::Buffer& b) {
  ir::Region r{b, {}};
  for (const Expr& e : b.shape()) r.ranges.push_back({Expr(0), e});
  return r;
}

int64_t dim(const ir::Buffer& b, size_t d) {
  const Expr& e = b.shape()[d];
  return e.is_const() ? e.int_value() : -1;
}

FragmentLayout operand_layout(int64_t m, int64_t k, int wm, int wr, bool il_rows) {
  FragmentLayout l{m, k, wm, 1};
  l.wr = wr;
  l.il_rows = il_rows;
  return l;
}

void Uses::drop(const ir::Buffer& b, const char* reason) {
  drop_tiled(b, reason);
  drop_repl(b, reason);
}

void Uses::drop_tiled(const ir::Buffer& b, const char* reason) {
  if (!is_candidate(b)) return;
  out.insert(b.id());
  why.emplace(b.id(), runtime::Diagnostic{op_, span_, "shared", reason});
}

void Uses::drop_repl(const ir::Buffer& b, const char* reason) {
  if (!is_candidate(b) || b.rank() != 1) return;
  repl_out.insert(b.id());
  repl_why.emplace(b.id(), runtime::Diagnostic{op_, span_, "shared", reason});
}

void Uses::at(std::string op, const ir::Span& span) {
  op_ = std::move(op);
  span_ = span;
}

void Uses::add_candidate(const ir::Buffer& b) {
  if (b.scope() != ir::Scope::kFragment) return;
  const bool tile = b.rank() == 2 && (b.dtype() == DataType::float32() ||
                                      is_16bit_float(b.dtype())) &&
                    dim(b, 0) > 0 && dim(b, 1) > 0;
  const bool rows = b.rank() == 1 && is_vector_dtype(b.dtype()) && dim(b, 0) > 0;
  if (tile || rows) candidates.emplace(b.id(), b);
}

void Uses::access(const ir::Buffer& b, const std::vector<Expr>& indices, bool store) {
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

void Uses::visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) {
  if (op->buffer.scope() == ir::Scope::kFragment) fragments.push_back(op->buffer);
  add_candidate(op->buffer);
}

void Uses::visit_load(const ir::LoadNode* op, const Expr& e) {
  access(op->buffer, op->indices, false);
  ir::IRVisitor::visit_load(op, e);
}

void Uses::visit_store(const ir::StoreStmt* op, const ir::Stmt& s) {
  if (!in_nest_) at("store", s.span());
  access(op->buffer, op->indices, true);
  ir::IRVisitor::visit_store(op, s);
}

void Uses::visit_for(const ir::ForStmt* op, const ir::Stmt& s) {
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

void Uses::visit_region(const ir::Region& r) {
  ir::IRVisitor::visit_region(r);
  // Whole-buffer tile-op operands are judged by the op; a slice is not.
  if (!is_whole(r)) drop(r.buffer, "a slice of the fragment is an operand");
}

void Uses::visit_copy(const ir::CopyOp* op, const ir::Stmt& s) {
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

bool Uses::rectangle(const ir::Region& r, int64_t m, int64_t n, bool* strided) {
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

void Uses::visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) {
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

void Uses::visit_fill(const ir::FillOp* op, const ir::Stmt& s) {
  if (in_nest_) nests.back().tile_ops = true;
  at("T.fill", s.span());
  ir::IRVisitor::visit_fill(op, s);
}

void Uses::visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) {
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

void Uses::visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt& s) {
  if (in_nest_) nests.back().tile_ops = true;
  at("T.atomic_add", s.span());
  drop(op->dst.buffer, "an operand of an atomic add");
  if (op->src.buffer.defined()) drop(op->src.buffer, "an operand of an atomic add");
  ir::IRVisitor::visit_atomic_add(op, s);
}

void Uses::visit_print(const ir::PrintOp* op, const ir::Stmt& s) {
  if (in_nest_) nests.back().tile_ops = true;
  at("T.print", s.span());
  if (op->region.buffer.defined()) drop(op->region.buffer, "printed");
  ir::IRVisitor::visit_print(op, s);
}

}  // namespace tilejit::cuda
