// The uses of a CUDA tile kernel's fragments, which decide where each may
// live (Note [Register accumulators] in fragments.h): the candidates for
// registers, what disqualified the others, and what the choice must agree
// on (gemm operands, copies between fragments, T.Parallel nests,
// reductions). choose_fragments (fragments.cpp) reads them; so does the
// warpgroup gemms' choice (warpgroup_gemms.cpp) for the element types and
// shapes.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/fragments.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/runtime/diagnostic.h"

namespace tilejit::cuda {

bool is_16bit_float(DataType t);
/// float32 or a 16-bit float: what the row reductions take.
bool is_reduced_float(DataType t);
/// The element types of 1-D register fragments (Note [1-D and replicated
/// fragments]).
bool is_vector_dtype(DataType t);
/// The region spans all of its buffer.
bool is_whole(const ir::Region& r);
/// All of `b` as the verifier writes it: one slice [0, extent) per dimension.
ir::Region whole_slices(const ir::Buffer& b);
/// Dimension d of b's shape, or -1 where it is not a constant.
int64_t dim(const ir::Buffer& b, size_t d);

/// The A operand in registers of a gemm into an accumulator over wm x wr
/// warps: an m x k tile over wm warp rows, held alike by the wr warps of
/// each (interleaved rows where `il_rows`: Note [Warpgroup gemms]).
FragmentLayout operand_layout(int64_t m, int64_t k, int wm, int wr, bool il_rows);

/// A T.Parallel nest and the candidates it accesses.
/// The shared tiles a pass may give a layout of its own (`candidates`: id
/// -> the pass's value, the swizzle's bytes), until a use it does not know
/// drops one: every region of an op, element load and store drops its
/// buffer. A subclass keeps the ops it knows (whole-tile copies, gemm
/// operands) by overriding their visits; `ranges` visits a region's
/// indices without dropping its buffer.
class TileCandidates : public ir::IRVisitor {
 public:
  std::map<uint64_t, int> candidates;

 protected:
  void drop(const ir::Buffer& b) { candidates.erase(b.id()); }
  void ranges(const ir::Region& r) { ir::IRVisitor::visit_region(r); }
  void visit_region(const ir::Region& r) override {
    drop(r.buffer);
    ranges(r);
  }
  void visit_load(const ir::LoadNode* op, const ir::Expr& e) override {
    drop(op->buffer);
    ir::IRVisitor::visit_load(op, e);
  }
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override {
    drop(op->buffer);
    ir::IRVisitor::visit_store(op, s);
  }
};

struct Nest {
  size_t depth = 0;            // loops (0: not a plain nest over constant extents)
  std::set<uint64_t> tiles;    // 2-D candidates at [i, j]
  std::set<uint64_t> rows;     // 1-D candidates at [i]
  std::set<uint64_t> stored;   // every buffer stored in the nest
  std::set<uint64_t> loaded;   // every buffer loaded in the nest
  std::set<uint64_t> local;    // the thread-local buffers it stores
  bool tile_ops = false;       // an atomic add or print of an element
};

/// Every use of the kernel's fragments, and the candidates'
/// disqualification (Note [Register accumulators]): visit the kernel's
/// body, then read the members.
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
  void drop(const ir::Buffer& b, const char* reason);
  // Out of the tile, row-vector and 1-D partitioned layouts.
  void drop_tiled(const ir::Buffer& b, const char* reason);
  // Out of the replicated layout.
  void drop_repl(const ir::Buffer& b, const char* reason);
  // The op whose use of a fragment is being judged, at its line.
  void at(std::string op, const ir::Span& span);

  void add_candidate(const ir::Buffer& b);

  // An access in the current nest: acc[i, j] at exactly its indices, or
  // rows[i] at the nest's first index.
  void access(const ir::Buffer& b, const std::vector<ir::Expr>& indices, bool store);
  void visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) override;
  void visit_load(const ir::LoadNode* op, const ir::Expr& e) override;
  void visit_store(const ir::StoreStmt* op, const ir::Stmt& s) override;
  void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override;
  void visit_region(const ir::Region& r) override;
  void visit_copy(const ir::CopyOp* op, const ir::Stmt& s) override;

  // `r`'s extents other than 1 are exactly (m, n) (or n where m is 1), n in
  // its last dimension; or, *strided set, n where m is 1 in another one.
  static bool rectangle(const ir::Region& r, int64_t m, int64_t n, bool* strided);
  void visit_gemm(const ir::GemmOp* op, const ir::Stmt& s) override;
  void visit_fill(const ir::FillOp* op, const ir::Stmt& s) override;
  void visit_reduce(const ir::ReduceOp* op, const ir::Stmt& s) override;
  void visit_atomic_add(const ir::AtomicAddOp* op, const ir::Stmt& s) override;
  void visit_print(const ir::PrintOp* op, const ir::Stmt& s) override;

  bool in_nest_ = false;
  std::string op_;
  ir::Span span_;
  std::vector<uint64_t> nest_vars_;
  std::vector<int64_t> nest_extents_;
};

}  // namespace tilejit::cuda
