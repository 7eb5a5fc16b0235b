// Note [Alternating reduction scratch] (src/backend/cuda/tile_memory.cpp):
// which barriers a row reduction across warps takes with it, compiled by
// NVRTC for sm_90a (no GPU needed). tests/python/test_tile_partitioned.py
// runs such programs on a GPU against numpy.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/tile_builder.h"

namespace tilejit::cuda::testing {
namespace {

using ir::Buffer;
using ir::Expr;
using ir::ForKind;
using ir::Range;
using ir::ReduceKind;
using ir::Scope;

// The code between the first line holding `from` and the next holding `to`.
std::string between(const std::string& src, const std::string& from, const std::string& to) {
  const size_t a = src.find(from);
  EXPECT_NE(a, std::string::npos) << from << "\n" << src;
  const size_t b = src.find(to, a + from.size());
  EXPECT_NE(b, std::string::npos) << to << "\n" << src;
  return src.substr(a + from.size(), b - a - from.size());
}

bool has_barrier(const std::string& code) {
  return code.find("__syncthreads()") != std::string::npos ||
         code.find("tilejit::cuda::barrier()") != std::string::npos ||
         code.find("block_sync<") != std::string::npos;
}

// The scratch offset each row reduction of `src` passes, in order.
std::vector<std::string> scratches(const std::string& src) {
  std::vector<std::string> out;
  const std::string key = "reinterpret_cast<float*>(tilejit_smem + ";
  for (size_t at = src.find(key); at != std::string::npos; at = src.find(key, at + 1)) {
    out.push_back(src.substr(at + key.size(), src.find(')', at) - at - key.size()));
  }
  return out;
}

class ReductionBarriers : public ::testing::Test {
 protected:
  void SetUp() override { TILEJIT_SKIP_WITHOUT_NVRTC(); }
};

// A softmax over rows of 8192 (one row per block of 128 threads: four warps
// meet in the scratch): reduce_max and reduce_sum take the two scratches in
// turn, with no barrier between them; each has its own inside.
TEST_F(ReductionBarriers, TwoReductionsTakeTheScratchesInTurn) {
  const std::string src = compiled_unit(::examples::tile::softmax(8192, 1));
  const std::vector<std::string> s = scratches(src);
  ASSERT_EQ(s.size(), 2u) << src;
  EXPECT_NE(s[0], s[1]) << src;
  EXPECT_FALSE(has_barrier(between(src, "ReduceKind::kMax", "ReduceKind::kSum"))) << src;
}

// The input read from a shared tile, reduced, and the result stored back
// into that tile (RMSNorm's epilogue): the reduction's own barrier orders
// the reads before the stores, so none goes between; the stores and the
// copy that reads them still meet at one.
ir::PrimFunc normalise_in_place(int64_t n) {
  ir::TileBuilder b("normalise_in_place");
  const DataType f32 = DataType::float32();
  const Expr M = ir::symbolic("M");
  const Buffer X = b.tensor_param("X", {M, Expr(n)}, f32);
  const Buffer Y = b.tensor_param("Y", {M, Expr(n)}, f32);
  const Expr bx = b.begin_kernel({M}, {128})[0];
  const Buffer X_s = b.alloc("X_s", {1, n}, f32, Scope::kShared);
  const Buffer x = b.alloc("x", {1, n}, f32, Scope::kFragment);
  const Buffer s = b.alloc("s", {1}, f32, Scope::kFragment);
  b.copy(ir::region(X, {Range{bx, Expr(1)}, Range{Expr(0), Expr(n)}}), ir::whole(X_s));
  b.copy(ir::whole(X_s), ir::whole(x));
  b.reduce(ReduceKind::kSum, ir::whole(x), ir::whole(s), 1);
  const Expr i = b.begin_for("i", 0, 1, ForKind::kParallel);
  const Expr j = b.begin_for("j", 0, n, ForKind::kParallel);
  b.store(X_s, {i, j}, ir::div(ir::load(x, {i, j}), ir::load(s, {i})));
  b.end_for();
  b.end_for();
  b.copy(ir::whole(X_s), ir::region(Y, {Range{bx, Expr(1)}, Range{Expr(0), Expr(n)}}));
  b.end_kernel();
  return b.finish();
}

TEST_F(ReductionBarriers, TheReductionsBarrierOrdersTheReadsBeforeIt) {
  const std::string src = compiled_unit(normalise_in_place(4096));
  EXPECT_FALSE(has_barrier(between(src, "ReduceKind::kSum", "store_run"))) << src;
  EXPECT_TRUE(has_barrier(between(src, "store_run", "// T.copy(X_s"))) << src;
}

// One reduction in each iteration of a loop: the next iteration's writes of
// the one scratch wait for this one's reads, at the back edge.
ir::PrimFunc row_sums_in_a_loop(int64_t n) {
  ir::TileBuilder b("row_sums_in_a_loop");
  const DataType f32 = DataType::float32();
  const Buffer X = b.tensor_param("X", {Expr(4), Expr(n)}, f32);
  const Buffer S = b.tensor_param("S", {Expr(4)}, f32);
  b.begin_kernel({Expr(1)}, {128});
  const Buffer x = b.alloc("x", {1, n}, f32, Scope::kFragment);
  const Buffer s = b.alloc("s", {1}, f32, Scope::kFragment);
  const Expr k = b.begin_for("k", 0, 4);
  b.copy(ir::region(X, {Range{k, Expr(1)}, Range{Expr(0), Expr(n)}}), ir::whole(x));
  b.reduce(ReduceKind::kSum, ir::whole(x), ir::whole(s), 1);
  b.copy(ir::whole(s), ir::region(S, {Range{k, Expr(1)}}));
  b.end_for();
  b.end_kernel();
  return b.finish();
}

TEST_F(ReductionBarriers, OneReductionALoopKeepsTheBarrierAtTheBackEdge) {
  const std::string src = compiled_unit(row_sums_in_a_loop(4096));
  ASSERT_EQ(scratches(src).size(), 1u) << src;
  const std::string loop = between(src, "ReduceKind::kSum", "\n  }\n");
  EXPECT_TRUE(has_barrier(loop)) << src;
}

}  // namespace
}  // namespace tilejit::cuda::testing
