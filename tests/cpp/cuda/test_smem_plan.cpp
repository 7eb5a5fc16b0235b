// plan_shared_memory (backend/cuda/smem_plan.h): which tiles share bytes of
// the block's shared memory, on small programs whose answer is known, on
// every tile example, and on random programs, each plan checked against a
// simpler model of liveness written here. No GPU is needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/smem_plan.h"
#include "backend/cuda/tile_codegen.h"  // kMaxSharedBytes
#include "common/test_util.h"
#include "tile/flash_attention.h"
#include "tile/flash_decoding.h"
#include "tile/gated_delta_rule.h"
#include "tile/sparse_attention.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"
#include "tilejit/transform/predicate.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

namespace ex = ::examples::tile;
using ir::Buffer;
using ir::Expr;
using ir::ForKind;
using ir::Scope;
using tilejit::testing::error_message;

const DataType kF32 = DataType::float32();

// --- helpers ------------------------------------------------------------------

// The shared and fragment buffers a body allocates, as the lowering asks.
class AllocCollector : public ir::IRVisitor {
 public:
  std::vector<SmemRequest> requests;

 protected:
  void visit_alloc(const ir::AllocStmt* op, const ir::Stmt&) override {
    const Buffer& b = op->buffer;
    if (b.scope() == Scope::kLocal) return;
    int64_t elements = 1;
    for (const Expr& d : b.shape()) elements *= d.int_value();
    requests.push_back({b, elements * b.dtype().bytes()});
  }
};

std::vector<SmemRequest> requests_of(const ir::Stmt& body) {
  AllocCollector c;
  c.visit(body);
  return c.requests;
}

int64_t bump_total(const std::vector<SmemRequest>& requests) {
  int64_t total = 0;
  for (const SmemRequest& q : requests) total = (total + 127) / 128 * 128 + q.bytes;
  return total;
}

// As the CUDA lowering prepares a function jit() hands it.
ir::PrimFunc prepared(const ir::PrimFunc& f) {
  const ir::PrimFunc g = transform::plan_workspaces(transform::verify(f));
  return transform::select_layouts(transform::predicate(transform::verify(g)),
                                   transform::LayoutTarget::kCuda);
}

bool bytes_overlap(const SmemPlan& p, const SmemRequest& x, const SmemRequest& y) {
  if (x.bytes == 0 || y.bytes == 0) return false;
  const int64_t a = p.offsets.at(x.buffer.id()), b = p.offsets.at(y.buffer.id());
  return a < b + y.bytes && b < a + x.bytes;
}

// Every request placed, at a multiple of 128, inside the total.
void expect_well_formed(const SmemPlan& p, const std::vector<SmemRequest>& requests) {
  EXPECT_EQ(p.offsets.size(), requests.size());
  for (const SmemRequest& q : requests) {
    ASSERT_TRUE(p.offsets.count(q.buffer.id())) << q.buffer.name();
    const int64_t off = p.offsets.at(q.buffer.id());
    EXPECT_EQ(off % 128, 0) << q.buffer.name();
    EXPECT_GE(off, 0) << q.buffer.name();
    EXPECT_LE(off + q.bytes, p.total) << q.buffer.name();
  }
}

// --- an independent model of liveness --------------------------------------
//
// Statements are numbered as the planner numbers them, but by a separate walk.
// A buffer's span is its first to its last access, widened to every loop that
// carries it: where it is accessed after the loop, or where its first access
// in the loop (the header included) is not a write that reads none of it.
// Two buffers whose bytes overlap must each have no access inside the
// other's span. The model is weaker than the planner's rules (any write
// counts, partial ones too), so what it rejects is a real overlap.

// The buffer ids an expression or a leaf statement reads (`reads`) and
// writes (`writes`).
class Touches : public ir::IRVisitor {
 public:
  std::set<uint64_t> reads, writes;

  void leaf(const ir::Stmt& s) {
    switch (s.kind()) {
      case ir::StmtKind::kStore: {
        const auto* op = s.as<ir::StoreStmt>();
        writes.insert(op->buffer.id());
        for (const Expr& i : op->indices) visit(i);
        visit(op->value);
        return;
      }
      case ir::StmtKind::kCopy: {
        const auto* op = s.as<ir::CopyOp>();
        read(op->src);
        write(op->dst, true);
        return;
      }
      case ir::StmtKind::kGemm: {
        const auto* op = s.as<ir::GemmOp>();
        read(op->a);
        read(op->b);
        write(op->c, op->clear_accum);
        return;
      }
      case ir::StmtKind::kFill: {
        const auto* op = s.as<ir::FillOp>();
        write(op->dst, true);
        visit(op->value);
        return;
      }
      case ir::StmtKind::kReduce: {
        const auto* op = s.as<ir::ReduceOp>();
        read(op->src);
        write(op->dst, op->clear);
        return;
      }
      case ir::StmtKind::kAtomicAdd: {
        const auto* op = s.as<ir::AtomicAddOp>();
        read(op->dst);
        if (op->src.buffer.defined()) read(op->src);
        visit(op->value);
        return;
      }
      case ir::StmtKind::kPrint: {
        const auto* op = s.as<ir::PrintOp>();
        visit(op->value);
        if (op->region.buffer.defined()) read(op->region);
        return;
      }
      default: visit(s);  // let, evaluate: expressions only
    }
  }

 protected:
  void visit_load(const ir::LoadNode* op, const Expr& e) override {
    reads.insert(op->buffer.id());
    ir::IRVisitor::visit_load(op, e);
  }

 private:
  void read(const ir::Region& r) {
    reads.insert(r.buffer.id());
    visit_region(r);
  }
  void write(const ir::Region& r, bool pure) {
    (pure ? writes : reads).insert(r.buffer.id());
    visit_region(r);
  }
};

struct Model {
  struct Pos {
    std::set<uint64_t> all;   // buffers touched
    std::set<uint64_t> pure;  // buffers written and not read
  };
  struct LoopSpan {
    int64_t begin, end;
  };
  std::vector<Pos> pos;
  std::vector<LoopSpan> loops;

  void add(Touches t) {
    Pos p;
    p.all = t.reads;
    p.all.insert(t.writes.begin(), t.writes.end());
    for (uint64_t id : t.writes) {
      if (!t.reads.count(id)) p.pure.insert(id);
    }
    pos.push_back(std::move(p));
  }
  void expr(const Expr& e, Touches* t) {
    if (e.defined()) t->visit(e);
  }

  void walk(const ir::Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case ir::StmtKind::kKernel: walk(s.as<ir::KernelStmt>()->body); return;
      case ir::StmtKind::kSeq:
        for (const ir::Stmt& c : s.as<ir::SeqStmt>()->stmts) walk(c);
        return;
      case ir::StmtKind::kAlloc:
      case ir::StmtKind::kBreak:
      case ir::StmtKind::kContinue: return;
      case ir::StmtKind::kIf: {
        const auto* op = s.as<ir::IfStmt>();
        Touches t;
        expr(op->cond, &t);
        add(t);
        walk(op->then_case);
        walk(op->else_case);
        return;
      }
      case ir::StmtKind::kFor: {
        const auto* op = s.as<ir::ForStmt>();
        Touches t;
        expr(op->min, &t);
        expr(op->extent, &t);
        loop(t, op->body);
        return;
      }
      case ir::StmtKind::kWhile: {
        const auto* op = s.as<ir::WhileStmt>();
        Touches t;
        expr(op->cond, &t);
        loop(t, op->body);
        return;
      }
      default: {
        Touches t;
        t.leaf(s);
        add(t);
      }
    }
  }
  void loop(const Touches& header, const ir::Stmt& body) {
    const int64_t begin = int64_t(pos.size());
    add(header);
    walk(body);
    loops.push_back({begin, int64_t(pos.size()) - 1});
  }

  // [lo, hi] of buffer `id`; hi < lo when it is never touched.
  std::pair<int64_t, int64_t> span(uint64_t id) const {
    std::vector<int64_t> at;
    for (size_t p = 0; p < pos.size(); ++p) {
      if (pos[p].all.count(id)) at.push_back(int64_t(p));
    }
    if (at.empty()) return {0, -1};
    int64_t lo = at.front(), hi = at.back();
    for (const LoopSpan& l : loops) {
      const auto first = std::lower_bound(at.begin(), at.end(), l.begin);
      if (first == at.end() || *first > l.end) continue;
      const bool carried = at.back() > l.end || !pos[size_t(*first)].pure.count(id);
      if (carried) lo = std::min(lo, l.begin), hi = std::max(hi, l.end);
    }
    return {lo, hi};
  }
  bool touched_in(uint64_t id, std::pair<int64_t, int64_t> s) const {
    for (int64_t p = s.first; p <= s.second; ++p) {
      if (pos[size_t(p)].all.count(id)) return true;
    }
    return false;
  }
};

// Checks `plan` against the model; returns how many pairs share bytes.
int check_against_model(const ir::Stmt& body, const std::vector<SmemRequest>& requests,
                        const SmemPlan& plan, const std::string& what) {
  Model m;
  m.walk(body);
  int shared = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (!bytes_overlap(plan, requests[i], requests[j])) continue;
      ++shared;
      const uint64_t x = requests[i].buffer.id(), y = requests[j].buffer.id();
      EXPECT_FALSE(m.touched_in(y, m.span(x)))
          << what << ": " << requests[j].buffer.name() << " is used while "
          << requests[i].buffer.name() << " is live, in the same bytes";
      EXPECT_FALSE(m.touched_in(x, m.span(y)))
          << what << ": " << requests[i].buffer.name() << " is used while "
          << requests[j].buffer.name() << " is live, in the same bytes";
    }
  }
  return shared;
}

// --- small programs ------------------------------------------------------------

// One kernel over G and O ([M, 32] float32) and 32 x 32 shared tiles; each
// test writes the body between make() and body().
struct Program {
  ir::TileBuilder b{"smem"};
  Expr M = ir::symbolic("M");
  Buffer G = b.tensor_param("G", {M, Expr(32)}, kF32);
  Buffer O = b.tensor_param("O", {M, Expr(32)}, kF32);
  Expr bx = b.begin_kernel({Expr(4)}, {128})[0];
  ir::PrimFunc func;

  Buffer tile(const char* name, int64_t rows = 32, int64_t cols = 32,
              Scope scope = Scope::kShared) {
    return b.alloc(name, {Expr(rows), Expr(cols)}, kF32, scope);
  }
  void load_into(const Buffer& t) { b.copy(ir::corner(G, {bx * 32, Expr(0)}), ir::whole(t)); }
  void store_from(const Buffer& t) { b.copy(ir::whole(t), ir::corner(O, {bx * 32, Expr(0)})); }
  // load_into(t) as a T.Parallel nest over t's shape.
  void parallel_load(const Buffer& t) {
    const Expr i = b.begin_for("i", 0, 32, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, 32, ForKind::kParallel);
    b.store(t, {i, j}, ir::load(G, {bx * 32 + i, j}));
    b.end_for();
    b.end_for();
  }

  // The plan of the finished function's kernel, checked for form and
  // against the model.
  SmemPlan plan() {
    b.end_kernel();
    func = prepared(b.finish());
    const ir::Stmt& body = func.tile()->kernels()[0]->body;
    const std::vector<SmemRequest> requests = requests_of(body);
    const SmemPlan p = plan_shared_memory(body, requests);
    expect_well_formed(p, requests);
    check_against_model(body, requests, p, "program");
    return p;
  }
};

int64_t offset(const SmemPlan& p, const Buffer& b) { return p.offsets.at(b.id()); }
// The 4096-byte tiles x and y share no byte.
bool apart(const SmemPlan& p, const Buffer& x, const Buffer& y) {
  return offset(p, x) >= offset(p, y) + 4096 || offset(p, y) >= offset(p, x) + 4096;
}

TEST(SmemPlan, TilesUsedInSequenceShareOffsetZero) {
  Program p;
  const Buffer A = p.tile("A_s"), B = p.tile("B_s");
  p.load_into(A);
  p.store_from(A);
  p.load_into(B);
  p.store_from(B);
  const SmemPlan plan = p.plan();
  EXPECT_EQ(offset(plan, A), 0);
  EXPECT_EQ(offset(plan, B), 0);
  EXPECT_EQ(plan.total, 4096);
}

TEST(SmemPlan, TilesUsedTogetherAreApartAndAligned) {
  Program p;
  const Buffer A = p.tile("A_s", 3, 5), B = p.tile("B_s", 3, 5);  // 60 bytes each
  p.load_into(A);
  p.b.copy(ir::whole(A), ir::whole(B));
  p.store_from(B);
  const SmemPlan plan = p.plan();
  EXPECT_EQ(std::min(offset(plan, A), offset(plan, B)), 0);
  EXPECT_EQ(std::max(offset(plan, A), offset(plan, B)), 128);
  EXPECT_EQ(plan.total, 188);
}

// fill(C) before the loop, gemm into C inside, copy out after: C is live over
// the whole loop, apart from the loop's tiles; inside the loop, T (done
// before B_s is loaded) shares B_s's bytes.
TEST(SmemPlan, CarriedAccumulatorStaysApartFromLoopTiles) {
  Program p;
  const Buffer C = p.b.alloc("C_l", {Expr(32), Expr(32)}, kF32, Scope::kFragment);
  const Buffer A = p.tile("A_s"), B = p.tile("B_s"), T = p.tile("T_s");
  p.b.fill(ir::whole(C), 0.0);
  p.b.begin_for("k", 0, 8);
  p.load_into(T);
  p.b.copy(ir::whole(T), ir::whole(A));
  p.load_into(B);
  p.b.gemm(ir::whole(A), ir::whole(B), ir::whole(C));
  p.b.end_for();
  p.store_from(C);
  const SmemPlan plan = p.plan();
  EXPECT_TRUE(apart(plan, C, A));
  EXPECT_TRUE(apart(plan, C, B));
  EXPECT_TRUE(apart(plan, C, T));
  EXPECT_TRUE(apart(plan, A, B));
  EXPECT_TRUE(apart(plan, A, T));
  EXPECT_EQ(offset(plan, T), offset(plan, B));
  EXPECT_EQ(plan.total, 3 * 4096);
}

// The rule at each level: C_l is fresh in the outer loop (filled first) but
// carried by the inner one; A_s is fresh in the inner loop. Z, used after
// the inner loop and after C_l is copied out, may take the bytes of both.
TEST(SmemPlan, NestedLoopsApplyTheRuleAtEachLevel) {
  Program p;
  const Buffer C = p.b.alloc("C_l", {Expr(32), Expr(32)}, kF32, Scope::kFragment);
  const Buffer A = p.tile("A_s"), Z = p.tile("Z_s");
  p.b.begin_for("s", 0, 4);
  p.b.fill(ir::whole(C), 0.0);
  p.b.begin_for("k", 0, 8);
  p.load_into(A);
  p.b.gemm(ir::whole(A), ir::whole(A), ir::whole(C));
  p.b.end_for();
  p.store_from(C);
  p.load_into(Z);
  p.store_from(Z);
  p.b.end_for();
  const SmemPlan plan = p.plan();
  EXPECT_TRUE(apart(plan, C, A));
  EXPECT_EQ(offset(plan, Z), 0);
  EXPECT_EQ(plan.total, 2 * 4096);
}

// Inside `for k`: X's first access, then Y loaded and stored. With X fresh
// each iteration the two share bytes; `first` writes what comes first. X is
// a fragment, so that it may be a gemm's accumulator.
template <typename F>
SmemPlan loop_then_y(F first, Buffer* x_out, Buffer* y_out, ForKind kind = ForKind::kSerial,
                     bool x_after_loop = false) {
  Program p;
  const Buffer X = p.tile("X_f", 32, 32, Scope::kFragment), Y = p.tile("Y_s");
  p.b.begin_for("k", 0, 8, kind, kind == ForKind::kPipelined ? 2 : 0);
  first(p, X);
  p.load_into(Y);
  p.store_from(Y);
  p.b.end_for();
  if (x_after_loop) p.store_from(X);
  *x_out = X;
  *y_out = Y;
  return p.plan();
}

TEST(SmemPlan, FreshEachIterationSharesWithLaterTiles) {
  Buffer X, Y;
  const auto copy_in = [](Program& p, const Buffer& x) {
    p.load_into(x);
    p.store_from(x);
  };
  SmemPlan plan = loop_then_y(copy_in, &X, &Y);
  EXPECT_EQ(offset(plan, X), offset(plan, Y));

  const auto fill = [](Program& p, const Buffer& x) {
    p.b.fill(ir::whole(x), 1.0);
    p.store_from(x);
  };
  plan = loop_then_y(fill, &X, &Y);
  EXPECT_EQ(offset(plan, X), offset(plan, Y));

  // A full slice is the whole buffer too.
  const auto slice = [](Program& p, const Buffer& x) {
    p.b.copy(ir::corner(p.G, {p.bx * 32, Expr(0)}),
             ir::region(x, {ir::Range{Expr(0), Expr(32)}, ir::Range{Expr(0), Expr(32)}}));
    p.store_from(x);
  };
  plan = loop_then_y(slice, &X, &Y);
  EXPECT_EQ(offset(plan, X), offset(plan, Y));

  const auto gemm_clear = [](Program& p, const Buffer& x) {
    const Buffer a = p.b.alloc("a_s", {Expr(32), Expr(8)}, kF32, Scope::kShared);
    p.b.fill(ir::whole(a), 1.0);
    p.b.gemm(ir::whole(a), ir::whole(a), ir::whole(x), false, true, /*clear_accum=*/true);
    p.store_from(x);
  };
  plan = loop_then_y(gemm_clear, &X, &Y);
  EXPECT_EQ(offset(plan, X), offset(plan, Y));

  const auto reduce_clear = [](Program& p, const Buffer& x) {
    const Buffer w = p.b.alloc("w_s", {Expr(32), Expr(32), Expr(2)}, kF32, Scope::kShared);
    p.b.fill(ir::whole(w), 1.0);
    p.b.reduce(ir::ReduceKind::kSum, ir::whole(w), ir::whole(x), 2, /*clear=*/true);
    p.store_from(x);
  };
  // w (8 KiB) is placed first and X beside it; Y, fresh like X, takes w's
  // bytes, so the loop needs 12 KiB rather than the 16 of three apart.
  plan = loop_then_y(reduce_clear, &X, &Y);
  EXPECT_EQ(offset(plan, Y), 0);
  EXPECT_EQ(plan.total, 8192 + 4096);
}

TEST(SmemPlan, ParallelFullOverwriteNestIsFresh) {
  Buffer X, Y;
  const auto nest = [](Program& p, const Buffer& x) {
    p.parallel_load(x);
    p.store_from(x);
  };
  const SmemPlan plan = loop_then_y(nest, &X, &Y);
  EXPECT_EQ(offset(plan, X), offset(plan, Y));
}

// Each of these makes X's first access in the loop something other than a
// complete overwrite reading none of X: X then covers the loop and never
// shares Y's bytes.
TEST(SmemPlan, TileNotOverwrittenFirstCoversTheLoop) {
  Buffer X, Y;
  std::vector<std::pair<const char*, std::function<void(Program&, const Buffer&)>>> cases = {
      {"conditional write",
       [](Program& p, const Buffer& x) {
         p.b.begin_if(ir::gt(p.bx, Expr(0)));
         p.load_into(x);
         p.b.end_if();
         p.store_from(x);
       }},
      {"read then write",
       [](Program& p, const Buffer& x) {
         p.store_from(x);
         p.load_into(x);
       }},
      {"write in an inner loop",
       [](Program& p, const Buffer& x) {
         p.b.begin_for("r", 0, 1);
         p.load_into(x);
         p.b.end_for();
         p.store_from(x);
       }},
      {"partial copy",
       [](Program& p, const Buffer& x) {
         p.b.copy(ir::corner(p.G, {p.bx * 32, Expr(0)}),
                  ir::region(x, {ir::Range{Expr(0), Expr(16)}, ir::Range{Expr(0), Expr(32)}}));
         p.store_from(x);
       }},
      {"copy from itself",
       [](Program& p, const Buffer& x) {
         p.b.copy(ir::region(x, {ir::Range{Expr(0), Expr(32)}, ir::Range{Expr(0), Expr(32)}}),
                  ir::whole(x));
         p.store_from(x);
       }},
      {"fill of a value it holds",
       [](Program& p, const Buffer& x) {
         p.b.fill(ir::whole(x), ir::load(x, {Expr(0), Expr(0)}));
         p.store_from(x);
       }},
      {"gemm accumulating",
       [](Program& p, const Buffer& x) {
         const Buffer a = p.b.alloc("a_s", {Expr(32), Expr(8)}, kF32, Scope::kShared);
         p.b.fill(ir::whole(a), 1.0);
         p.b.gemm(ir::whole(a), ir::whole(a), ir::whole(x), false, true, false);
         p.store_from(x);
       }},
      {"reduce combining",
       [](Program& p, const Buffer& x) {
         const Buffer w = p.b.alloc("w_s", {Expr(32), Expr(32), Expr(2)}, kF32, Scope::kShared);
         p.b.fill(ir::whole(w), 1.0);
         p.b.reduce(ir::ReduceKind::kSum, ir::whole(w), ir::whole(x), 2, /*clear=*/false);
         p.store_from(x);
       }},
      {"nest over part of the shape",
       [](Program& p, const Buffer& x) {
         const Expr i = p.b.begin_for("i", 0, 32, ForKind::kParallel);
         const Expr j = p.b.begin_for("j", 0, 16, ForKind::kParallel);
         p.b.store(x, {i, j}, 1.0);
         p.b.end_for();
         p.b.end_for();
         p.store_from(x);
       }},
      {"nest storing transposed",
       [](Program& p, const Buffer& x) {
         const Expr i = p.b.begin_for("i", 0, 32, ForKind::kParallel);
         const Expr j = p.b.begin_for("j", 0, 32, ForKind::kParallel);
         p.b.store(x, {j, i}, 1.0);
         p.b.end_for();
         p.b.end_for();
         p.store_from(x);
       }},
      {"nest reading what it writes",
       [](Program& p, const Buffer& x) {
         const Expr i = p.b.begin_for("i", 0, 32, ForKind::kParallel);
         const Expr j = p.b.begin_for("j", 0, 32, ForKind::kParallel);
         p.b.store(x, {i, j}, ir::load(x, {i, j}) + 1.0);
         p.b.end_for();
         p.b.end_for();
         p.store_from(x);
       }},
      {"nest touching another element",
       [](Program& p, const Buffer& x) {
         const Expr i = p.b.begin_for("i", 0, 32, ForKind::kParallel);
         const Expr j = p.b.begin_for("j", 0, 32, ForKind::kParallel);
         p.b.store(x, {i, j}, 1.0);
         p.b.store(x, {j, i}, 2.0);
         p.b.end_for();
         p.b.end_for();
         p.store_from(x);
       }},
      {"nest storing after a let",
       [](Program& p, const Buffer& x) {
         const Expr i = p.b.begin_for("i", 0, 32, ForKind::kParallel);
         const Expr j = p.b.begin_for("j", 0, 32, ForKind::kParallel);
         const Expr v = p.b.let("v", ir::load(p.G, {p.bx * 32 + i, j}));
         p.b.store(x, {i, j}, v);
         p.b.end_for();
         p.b.end_for();
         p.store_from(x);
       }},
  };
  for (const auto& [name, first] : cases) {
    const SmemPlan plan = loop_then_y(first, &X, &Y);
    EXPECT_TRUE(apart(plan, X, Y)) << name;
  }
}

TEST(SmemPlan, TileUsedAfterTheLoopCoversIt) {
  Buffer X, Y;
  const auto copy_in = [](Program& p, const Buffer& x) {
    p.load_into(x);
    p.store_from(x);
  };
  const SmemPlan plan = loop_then_y(copy_in, &X, &Y, ForKind::kSerial, /*x_after_loop=*/true);
  EXPECT_TRUE(apart(plan, X, Y));
}

// A pipelined loop may overlap its iterations: nothing is fresh in it.
TEST(SmemPlan, PipelinedAndParallelLoopsAreNeverFresh) {
  Buffer X, Y;
  const auto copy_in = [](Program& p, const Buffer& x) {
    p.load_into(x);
    p.store_from(x);
  };
  SmemPlan plan = loop_then_y(copy_in, &X, &Y, ForKind::kPipelined);
  EXPECT_TRUE(apart(plan, X, Y));
  plan = loop_then_y(copy_in, &X, &Y, ForKind::kUnroll);
  EXPECT_EQ(offset(plan, X), offset(plan, Y));

  // Two tiles used one after the other inside one T.Parallel loop are used
  // by different threads at once.
  Program p;
  const Buffer A = p.b.alloc("A_f", {Expr(32)}, kF32, Scope::kFragment);
  const Buffer B = p.b.alloc("B_f", {Expr(32)}, kF32, Scope::kFragment);
  const Expr i = p.b.begin_for("i", 0, 32, ForKind::kParallel);
  p.b.begin_for("r", 0, 2);
  p.b.store(A, {i}, 1.0);
  p.b.store(p.O, {p.bx, i}, ir::load(A, {i}));
  p.b.store(B, {i}, 2.0);
  p.b.store(p.O, {p.bx, i}, ir::load(B, {i}));
  p.b.end_for();
  p.b.end_for();
  plan = p.plan();
  EXPECT_NE(offset(plan, A), offset(plan, B));
}

TEST(SmemPlan, WhileLoopFollowsTheSameRules) {
  Program p;
  const Buffer X = p.tile("X_s"), Y = p.tile("Y_s"), F = p.tile("F_s");
  p.b.begin_while(ir::lt(p.bx, Expr(0)));
  p.load_into(X);
  p.store_from(X);
  p.load_into(Y);
  p.store_from(Y);
  p.b.end_while();
  p.load_into(F);
  p.b.begin_while(ir::gt(ir::load(F, {Expr(0), Expr(0)}), 0.0));  // the header reads F
  p.b.fill(ir::whole(F), 0.0);
  p.load_into(X);
  p.store_from(X);
  p.b.end_while();
  const SmemPlan plan = p.plan();
  EXPECT_TRUE(apart(plan, F, X));
  EXPECT_EQ(offset(plan, Y), offset(plan, F));  // Y is done before F is loaded
}

// A tile read before anything writes it is live from the kernel's start.
TEST(SmemPlan, TileReadBeforeWrittenIsLiveFromTheStart) {
  Program p;
  const Buffer Y = p.tile("Y_s"), X = p.tile("X_s");
  p.load_into(Y);
  p.store_from(Y);
  p.store_from(X);
  p.load_into(X);
  p.store_from(X);
  const SmemPlan plan = p.plan();
  EXPECT_TRUE(apart(plan, X, Y));

  Program q;  // written first: the two share
  const Buffer Y2 = q.tile("Y_s"), X2 = q.tile("X_s");
  q.load_into(Y2);
  q.store_from(Y2);
  q.load_into(X2);
  q.store_from(X2);
  const SmemPlan plan2 = q.plan();
  EXPECT_EQ(offset(plan2, X2), offset(plan2, Y2));
}

// A request the body never touches (it may stand for scratch the lowering
// uses) shares no byte.
TEST(SmemPlan, BufferNeverAccessedIsLiveThroughout) {
  Program p;
  const Buffer A = p.tile("A_s"), U = p.tile("U_s", 64, 32), B = p.tile("B_s");
  p.load_into(A);
  p.store_from(A);
  p.load_into(B);
  p.store_from(B);
  const SmemPlan plan = p.plan();
  EXPECT_EQ(offset(plan, U), 0);
  EXPECT_EQ(offset(plan, A), 8192);
  EXPECT_EQ(offset(plan, B), 8192);
  EXPECT_EQ(plan.total, 8192 + 4096);

  const SmemPlan alone = plan_shared_memory(
      ir::make_stmt<ir::EvaluateStmt>(Expr(0), ir::Span{}), {{A, 4096}, {B, 4096}});
  EXPECT_EQ(alone.offsets.at(A.id()) + alone.offsets.at(B.id()), 4096);
  EXPECT_EQ(alone.total, 8192);
}

TEST(SmemPlan, NoRequestsNoBytes) {
  Program p;
  p.b.store(p.O, {Expr(0), Expr(0)}, 1.0);
  const SmemPlan plan = p.plan();
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_EQ(plan.total, 0);
}

TEST(SmemPlan, BadRequestsAreInternalErrors) {
  const Buffer A = Buffer::make("A_s", {Expr(4)}, kF32, Scope::kShared);
  const ir::Stmt body = ir::make_stmt<ir::EvaluateStmt>(Expr(0), ir::Span{});
  EXPECT_EQ(error_message([&] { plan_shared_memory(body, {{A, 16}, {A, 16}}); },
                          ErrorKind::kInternalError),
            "plan_shared_memory: buffer A_s (id " + std::to_string(A.id()) +
                ") is requested twice");
  EXPECT_EQ(error_message([&] { plan_shared_memory(body, {{A, -1}}); },
                          ErrorKind::kInternalError),
            "plan_shared_memory: buffer A_s requests -1 bytes");
  EXPECT_EQ(error_message([&] { plan_shared_memory(body, {{A, 16}, {Buffer(), 16}}); },
                          ErrorKind::kInternalError),
            "plan_shared_memory: request #1 has no buffer");
}

// --- the examples -----------------------------------------------------------------

TEST(SmemPlan, GatedDeltaRuleAtChunk64FitsTheBlock) {
  ex::GatedDeltaRuleConfig cfg;
  cfg.heads = 1;
  cfg.dim_k = 64;
  cfg.dim_v = 64;
  cfg.chunk = 64;
  const ir::PrimFunc f = prepared(ex::gated_delta_rule(cfg));
  const ir::Stmt& body = f.tile()->kernels()[0]->body;
  const std::vector<SmemRequest> requests = requests_of(body);
  ASSERT_EQ(requests.size(), 20u);
  const SmemPlan plan = plan_shared_memory(body, requests);
  expect_well_formed(plan, requests);
  const int64_t bump = bump_total(requests);
  std::cout << "gated_delta_rule, chunk 64, float32: " << plan.total << " bytes planned, "
            << bump << " one after another\n";
  EXPECT_GT(bump, kMaxSharedBytes);
  EXPECT_LT(plan.total, bump);
  EXPECT_LE(plan.total, kMaxSharedBytes);
  check_against_model(body, requests, plan, "gated_delta_rule");
  // The state (S_f, S_s) and the inverse A_inv are carried over the chunks;
  // nothing shares their bytes.
  for (const char* carried : {"S_f", "S_s", "A_inv"}) {
    const SmemRequest* c = nullptr;
    for (const SmemRequest& q : requests) {
      if (q.buffer.name() == carried) c = &q;
    }
    ASSERT_NE(c, nullptr) << carried;
    for (const SmemRequest& q : requests) {
      if (q.buffer != c->buffer) EXPECT_FALSE(bytes_overlap(plan, *c, q)) << carried;
    }
  }
}

TEST(SmemPlan, EveryExampleKernelAgreesWithTheModel) {
  ex::GatedDeltaRuleConfig big;
  big.heads = 1;
  big.dim_k = 64;
  big.dim_v = 64;
  big.chunk = 64;
  ex::FlashAttentionConfig causal;
  causal.causal = true;
  const std::vector<ir::PrimFunc> funcs = {
      ex::elementwise_add(kF32),
      ex::gemm({}),
      ex::splitk_gemm(4),
      ex::splitk_gemm_counted(4),
      ex::rms_norm(256),
      ex::softmax(256),
      ex::flash_attention({}),
      ex::flash_attention(causal),
      ex::flash_decoding({}),
      ex::sparse_attention_tile({}),
      ex::gated_delta_rule({}),
      ex::gated_delta_rule(big),
  };
  int kernels = 0;
  for (const ir::PrimFunc& f0 : funcs) {
    const ir::PrimFunc f = prepared(f0);
    for (const ir::KernelStmt* k : f.tile()->kernels()) {
      const std::vector<SmemRequest> requests = requests_of(k->body);
      const SmemPlan plan = plan_shared_memory(k->body, requests);
      expect_well_formed(plan, requests);
      EXPECT_LE(plan.total, bump_total(requests)) << f.name;
      check_against_model(k->body, requests, plan, f.name);
      ++kernels;
    }
  }
  EXPECT_GE(kernels, 13);
}

// --- random programs --------------------------------------------------------------

// Random kernels over six 16 x 16 tiles: copies, fills, gemms, T.Parallel
// nests, under serial, unrolled, pipelined and while loops and ifs, nested
// up to three deep.
class RandomProgram {
 public:
  explicit RandomProgram(uint32_t seed) : rng_(seed) {
    const Expr M = ir::symbolic("M");
    G_ = b_.tensor_param("G", {M, Expr(16)}, kF32);
    O_ = b_.tensor_param("O", {M, Expr(16)}, kF32);
    bx_ = b_.begin_kernel({Expr(2)}, {128})[0];
    for (int t = 0; t < 6; ++t) {
      tiles_.push_back(b_.alloc("t" + std::to_string(t), {Expr(16), Expr(16)}, kF32,
                                t % 2 ? Scope::kShared : Scope::kFragment));
    }
    block(0, 4 + pick(6));
    b_.end_kernel();
  }
  ir::PrimFunc finish() { return b_.finish(); }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  const Buffer& tile() { return tiles_[size_t(pick(int(tiles_.size())))]; }

  void block(int depth, int n) {
    for (int s = 0; s < n; ++s) stmt(depth);
  }
  void stmt(int depth) {
    const int k = pick(depth < 3 ? 12 : 8);
    switch (k) {
      case 0:
      case 1: b_.copy(ir::corner(G_, {bx_ * 16, Expr(0)}), ir::whole(tile())); break;
      case 2: b_.copy(ir::whole(tile()), ir::corner(O_, {bx_ * 16, Expr(0)})); break;
      case 3: {
        const Buffer& x = tile();
        const Buffer& y = tile();
        if (x != y) b_.copy(ir::whole(x), ir::whole(y));
        break;
      }
      case 4: b_.fill(ir::whole(tile()), 1.0); break;
      case 5: {
        const Buffer& a = tile();
        const Buffer& c = tiles_[size_t(2 * pick(3))];  // a fragment
        if (a != c) b_.gemm(ir::whole(a), ir::whole(a), ir::whole(c), false, false, pick(2) == 0);
        break;
      }
      case 6:
      case 7: {  // a nest, writing all of x or reading it
        const Buffer& x = tile();
        const Buffer& y = tile();
        const Expr i = b_.begin_for("i", 0, 16, ForKind::kParallel);
        const Expr j = b_.begin_for("j", 0, 16, ForKind::kParallel);
        const Expr v = pick(2) ? ir::load(y, {i, j}) : ir::load(G_, {bx_ * 16 + i, j});
        b_.store(x, {i, j}, pick(3) ? v : v + ir::load(x, {i, j}));
        b_.end_for();
        b_.end_for();
        break;
      }
      case 8: {
        static constexpr ForKind kKinds[] = {ForKind::kSerial, ForKind::kUnroll,
                                             ForKind::kPipelined};
        const ForKind kind = kKinds[pick(3)];
        b_.begin_for("k", 0, 3, kind, kind == ForKind::kPipelined ? 2 : 0);
        block(depth + 1, 1 + pick(5));
        b_.end_for();
        break;
      }
      case 9: {
        b_.begin_while(ir::lt(bx_, Expr(0)));
        block(depth + 1, 1 + pick(4));
        b_.end_while();
        break;
      }
      case 10: {
        b_.begin_if(ir::gt(bx_, Expr(0)));
        block(depth + 1, 1 + pick(3));
        if (pick(2)) {
          b_.begin_else();
          block(depth + 1, 1 + pick(3));
        }
        b_.end_if();
        break;
      }
      default: {  // a serial loop whose tiles are partly fresh
        b_.begin_for("k", 0, 4);
        b_.copy(ir::corner(G_, {bx_ * 16, Expr(0)}), ir::whole(tile()));
        block(depth + 1, 1 + pick(4));
        b_.end_for();
      }
    }
  }

  std::mt19937 rng_;
  ir::TileBuilder b_{"random"};
  Buffer G_, O_;
  Expr bx_;
  std::vector<Buffer> tiles_;
};

TEST(SmemPlan, RandomProgramsAgreeWithTheModel) {
  int shared = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    const ir::PrimFunc f = prepared(RandomProgram(seed).finish());
    const ir::Stmt& body = f.tile()->kernels()[0]->body;
    const std::vector<SmemRequest> requests = requests_of(body);
    const SmemPlan plan = plan_shared_memory(body, requests);
    expect_well_formed(plan, requests);
    shared += check_against_model(body, requests, plan, "seed " + std::to_string(seed));
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(shared, 100);  // the programs do share bytes
}

}  // namespace
}  // namespace tilejit::cuda::testing
