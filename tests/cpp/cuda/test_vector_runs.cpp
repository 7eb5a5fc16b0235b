// Note [Vectorised runs] (backend/cuda/vector_runs.h): which accesses of a
// thread's run move as vectors, and the CUDA a partitioned tile's register
// loop and a T.vectorized loop become. No GPU is needed.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "backend/cuda/vector_runs.h"
#include "cuda/cuda_test_util.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

using ir::Buffer;
using ir::Expr;
using ir::ForKind;
using ir::Scope;
using ir::whole;

// The innermost loop of the first kernel of `f`.
const ir::ForStmt* innermost_loop(const ir::PrimFunc& f) {
  struct Find : ir::IRVisitor {
    const ir::ForStmt* last = nullptr;
    void visit_for(const ir::ForStmt* op, const ir::Stmt& s) override {
      last = op;
      ir::IRVisitor::visit_for(op, s);
    }
  } find;
  find.visit(f.tile()->kernels()[0]->body);
  return find.last;
}

// A kernel with shared tiles S, T (64 x 64, float16), a tensor G and a
// fragment F, whose body is `body(b, S, T, G, F, i, j)` inside
// T.Parallel(64, 64) over i, j.
using Body = std::function<void(ir::TileBuilder&, const Buffer&, const Buffer&, const Buffer&,
                                const Buffer&, const Expr&, const Expr&)>;
ir::PrimFunc program(const Body& body, ForKind inner = ForKind::kParallel) {
  ir::TileBuilder b("runs");
  const DataType f16 = DataType::float16();
  const Buffer G = b.tensor_param("G", {Expr(64), Expr(64)}, f16);
  b.begin_kernel({Expr(1)}, {128});
  const Buffer S = b.alloc("S", {64, 64}, f16, Scope::kShared);
  const Buffer T = b.alloc("T", {64, 64}, f16, Scope::kShared);
  const Buffer F = b.alloc("F", {64, 64}, DataType::float32(), Scope::kFragment);
  b.copy(whole(G), whole(S));
  const Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
  const Expr j = b.begin_for("j", 0, 64, inner);
  body(b, S, T, G, F, i, j);
  b.end_for();
  b.end_for();
  b.copy(whole(T), whole(G));
  b.end_kernel();
  return b.finish();
}

// What plan_vector_run stages in the innermost loop's body: "S r", "T w",
// "T rw" per access, with every shared or global buffer memory.
std::vector<std::string> staged(const ir::PrimFunc& f, bool stage_writes = true) {
  const ir::ForStmt* loop = innermost_loop(f);
  auto memory = [](const Buffer& b) { return b.scope() != Scope::kFragment; };
  std::vector<std::string> out;
  for (const StagedAccess& s : plan_vector_run(loop->body, loop->var.var_id(), memory,
                                               stage_writes)) {
    out.push_back(s.buffer.name() + " " + (s.read ? "r" : "") + (s.written ? "w" : ""));
  }
  return out;
}

TEST(VectorRuns, ConsecutiveAccessesOfMemoryAreStaged) {
  const auto f = program([](ir::TileBuilder& b, const Buffer& S, const Buffer& T, const Buffer&,
                            const Buffer& F, const Expr& i, const Expr& j) {
    b.store(F, {i, j}, ir::cast(DataType::float32(), ir::load(S, {i, j})));
    b.store(T, {i, j}, ir::load(S, {i, j}) + ir::load(S, {Expr(3), j + 8}));
  });
  EXPECT_EQ(staged(f), (std::vector<std::string>{"S r", "S r", "T w"}));
  // At block level a store is thread 0's: reads alone.
  EXPECT_EQ(staged(f, false), (std::vector<std::string>{"S r", "S r"}));
}

TEST(VectorRuns, AReadModifyWriteOfOneElementIsStagedWhole) {
  const auto f = program([](ir::TileBuilder& b, const Buffer& S, const Buffer&, const Buffer&,
                            const Buffer&, const Expr& i, const Expr& j) {
    b.store(S, {i, j}, ir::load(S, {i, j}) * 2.0);
  });
  EXPECT_EQ(staged(f), (std::vector<std::string>{"S rw"}));
}

TEST(VectorRuns, AWrittenBufferAtTwoIndicesStaysElementByElement) {
  const auto f = program([](ir::TileBuilder& b, const Buffer& S, const Buffer& T, const Buffer&,
                            const Buffer&, const Expr& i, const Expr& j) {
    b.store(S, {i, j}, ir::load(S, {i, j + 1}) + ir::load(T, {i, j}));
  });
  EXPECT_EQ(staged(f), (std::vector<std::string>{"T r"}));
}

TEST(VectorRuns, AccessesNotConsecutiveInTheLaneStayElementByElement) {
  const auto f = program([](ir::TileBuilder& b, const Buffer& S, const Buffer& T, const Buffer&,
                            const Buffer&, const Expr& i, const Expr& j) {
    const Expr jj = b.let("jj", j + 1);
    b.store(T, {i, j * 2}, ir::load(S, {j, i}) + ir::load(S, {i, jj}) + ir::load(S, {i, 63 - j}));
  });
  EXPECT_EQ(staged(f), std::vector<std::string>{});
}

TEST(VectorRuns, AGuardedBodyIsNotStaged) {
  const auto f = program([](ir::TileBuilder& b, const Buffer& S, const Buffer& T, const Buffer&,
                            const Buffer&, const Expr& i, const Expr& j) {
    b.store(T, {i, j}, ir::select(j < 7, ir::load(S, {i, j}), ir::load(T, {i, j})));
  });
  EXPECT_EQ(staged(f), std::vector<std::string>{});
  const auto g = program([](ir::TileBuilder& b, const Buffer& S, const Buffer& T, const Buffer&,
                            const Buffer&, const Expr& i, const Expr& j) {
    b.begin_if(j < 7);
    b.store(T, {i, j}, ir::load(S, {i, j}));
    b.end_if();
  });
  EXPECT_EQ(staged(g), std::vector<std::string>{});
}

std::string cuda_source(const ir::PrimFunc& f) {
  const ir::PrimFunc g = transform::plan_workspaces(transform::verify(f));
  std::vector<std::string> symbols = symbols_of(g);
  runtime::SourceRequest request{&g, symbols};
  return cuda_backend().generate(request).source;
}

// A partitioned tile's register loop reads and writes whole runs of the
// shared tiles, whose alignment the lowering proves.
TEST(VectorRuns, APartitionedTilesLoopMovesWholeRuns) {
  const auto f = program([](ir::TileBuilder& b, const Buffer& S, const Buffer& T, const Buffer&,
                            const Buffer& F, const Expr& i, const Expr& j) {
    b.store(F, {i, j}, ir::cast(DataType::float32(), ir::load(S, {i, j})));
    b.store(T, {i, j}, ir::load(F, {i, j}) * 2.0);
  });
  const std::string src = cuda_source(f);
  EXPECT_NE(src.find("PartTile<64, 64, 16, 8, 8>"), std::string::npos) << src;
  EXPECT_NE(src.find("tilejit::cuda::load_run<8, true>(S_run, &S["), std::string::npos) << src;
  EXPECT_NE(src.find("tilejit::cuda::store_run<8, true>(&T["), std::string::npos) << src;
}

// A T.vectorized loop at block level reads a tensor's run with the
// alignment checked where it runs; its stores stay thread 0's.
TEST(VectorRuns, AVectorizedLoopReadsItsRunsOnce) {
  ir::TileBuilder b("vec");
  const DataType f16 = DataType::float16();
  const Buffer A = b.tensor_param("A", {Expr(1024)}, f16);
  const Buffer C = b.tensor_param("C", {Expr(8)}, f16);
  b.begin_kernel({Expr(1)}, {128});
  const Buffer L = b.alloc("L", {8}, f16, Scope::kLocal);
  const Expr k = b.begin_for("k", 0, 8, ForKind::kVectorized);
  b.store(L, {k}, ir::load(A, {b.thread_binding(0) * 8 + k}));
  b.end_for();
  const Expr m = b.begin_for("m", 0, 8, ForKind::kVectorized);
  b.store(C, {m}, ir::load(L, {m}));
  b.end_for();
  b.end_kernel();
  const std::string src = cuda_source(b.finish());
  EXPECT_NE(src.find("tilejit::cuda::load_run<8>(A_run, &A("), std::string::npos) << src;
  EXPECT_EQ(src.find("store_run"), std::string::npos) << src;
}

}  // namespace
}  // namespace tilejit::cuda::testing
