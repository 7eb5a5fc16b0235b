// Note [Cluster multicast] (src/backend/cuda/cluster_multicast.h): a
// warp-specialised GEMM whose blocks bx and bx + 1 load the same tile of A
// runs in clusters of two blocks that each load half of it into both; the
// source compiles with NVRTC for sm_90a, the report names the path, and
// where a pair would not share a tile (or the grid cannot be paired) every
// block runs alone and the plan says why.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "tilejit/ir/tile_builder.h"

namespace tilejit::cuda::testing {
namespace {

using ir::Buffer;
using ir::Expr;
using ir::ForKind;
using ir::Scope;

struct Gemm {
  int64_t m = 2048, n = 2048, k = 256;  // 16 x 16 blocks
  int64_t block_m = 128, block_n = 128, block_k = 32;
  int swizzle = 0;             // T.use_swizzle(swizzle), 0: none
  int threads = 128;
  bool triangular = false;     // the K loop runs bx + 1 iterations
};

// TileLang's README GEMM, bf16, of constant shapes.
ir::PrimFunc gemm(const Gemm& g) {
  ir::TileBuilder b("cluster_gemm");
  const DataType bf = DataType::bfloat16();
  const Buffer A = b.tensor_param("A", {Expr(g.m), Expr(g.k)}, bf);
  const Buffer B = b.tensor_param("B", {Expr(g.k), Expr(g.n)}, bf);
  const Buffer C = b.tensor_param("C", {Expr(g.m), Expr(g.n)}, DataType::float32());
  const auto blk = b.begin_kernel({Expr((g.n + g.block_n - 1) / g.block_n),
                                   Expr((g.m + g.block_m - 1) / g.block_m)},
                                  {g.threads});
  const Expr bx = blk[0], by = blk[1];
  if (g.swizzle > 0) b.use_swizzle(g.swizzle);
  const Buffer A_s = b.alloc("A_s", {g.block_m, g.block_k}, bf, Scope::kShared);
  const Buffer B_s = b.alloc("B_s", {g.block_k, g.block_n}, bf, Scope::kShared);
  const Buffer C_l = b.alloc("C_l", {g.block_m, g.block_n}, DataType::float32(), Scope::kFragment);
  b.fill(ir::whole(C_l), 0);
  const Expr extent = g.triangular ? bx + 1 : Expr(g.k / g.block_k);
  const Expr ko = b.begin_for("ko", 0, extent, ForKind::kPipelined, 3);
  b.copy(ir::corner(A, {by * g.block_m, ko * g.block_k}), ir::whole(A_s));
  b.copy(ir::corner(B, {ko * g.block_k, bx * g.block_n}), ir::whole(B_s));
  b.gemm(ir::whole(A_s), ir::whole(B_s), ir::whole(C_l));
  b.end_for();
  b.copy(ir::whole(C_l), ir::corner(C, {by * g.block_m, bx * g.block_n}));
  b.end_kernel();
  return b.finish();
}

using Lowered = Generated;

Lowered lower(const ir::PrimFunc& f, bool cluster = true) {
  return generate(f, [&](runtime::SourceRequest& r) {
    r.cluster_multicast = cluster;
    // The program's own K steps of 32 (Note [Coarser K steps] would load two
    // per stage; test_coarse_k_steps.cpp) and its epilogue as written.
    r.coarse_k_steps = false;
    r.staged_epilogue = false;
  });
}

void compiles(const Lowered& l) { EXPECT_TRUE(l.compiles()); }

class ClusterMulticast : public ::testing::Test {
 protected:
  void SetUp() override { TILEJIT_SKIP_WITHOUT_NVRTC(); }
};

TEST_F(ClusterMulticast, PairsAlongXLoadTheirTileOfAOnce) {
  const Lowered l = lower(gemm({}));
  const std::string& src = l.generated.source;
  EXPECT_TRUE(l.has("__cluster_dims__(2, 1, 1) tilejit_kernel(")) << src;
  // A's 128 x 32 tile (64-byte rows, one panel): this block's 64 rows into
  // both blocks; B's two panels alone.
  EXPECT_EQ(l.count("tilejit::cuda::tma_load_multicast("), 1u) << src;
  EXPECT_TRUE(l.has("+ int(tilejit_rank) * 64 * 32, &tilejit_args.tmaps[0], &A_s_landed[(ko_load - 0) "
                    "% 3], 3, int((ko_load * 32)), int((by * 128)) + int(tilejit_rank) * 64);"))
      << src;
  EXPECT_EQ(l.count("tilejit::cuda::tma_load("), 2u) << src;
  // A stage is free once the 4 consumer warps of both blocks have handed it
  // back, each on both blocks' barriers; the producer waits for the last
  // three hand-backs before it leaves.
  EXPECT_TRUE(l.has("tilejit::cuda::mbar_init(&A_s_free[0], 8);")) << src;
  EXPECT_TRUE(l.has("tilejit::cuda::mbar_arrive_pair(&A_s_free[")) << src;
  EXPECT_FALSE(l.has("tilejit::cuda::mbar_arrive(&A_s_free[")) << src;
  EXPECT_TRUE(l.has("for (int64_t ko_load = 8; ko_load < 8 + 3; ++ko_load) {")) << src;
  EXPECT_TRUE(l.has("tilejit::cuda::cluster_sync();")) << src;
  EXPECT_FALSE(l.has("__syncthreads();")) << src;
  // The landed barrier waits for the whole tiles: 128 x 32 + 32 x 128 bf16.
  EXPECT_TRUE(l.has("tilejit::cuda::mbar_expect_tx(&A_s_landed[(ko_load - 0) % 3], 16384);")) << src;
  // Two maps: A's with a box of half the rows in place of the whole one.
  std::vector<std::vector<uint32_t>> boxes;
  for (const runtime::AbiArg& a : l.generated.abi.args) {
    if (a.kind == runtime::AbiArgKind::kTensorMap) {
      boxes.push_back({a.tensor_map.box[0], a.tensor_map.box[1]});
    }
  }
  EXPECT_EQ(boxes, (std::vector<std::vector<uint32_t>>{{32, 64}, {64, 32}}));
  const runtime::Diagnostic* loop = l.op("T.Pipelined");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->path, "warp_specialized, 3 stages, pairs of blocks along x") << loop->reason;
  EXPECT_EQ(l.op("T.copy", 0)->path, "tma_load_multicast");
  EXPECT_EQ(l.op("T.copy", 1)->path, "tma_load");
  compiles(l);
}

TEST_F(ClusterMulticast, AnOddGridPairsTheOtherDimension) {
  Gemm g;
  g.n = 2176;  // 17 blocks along x; B's tile is the same for by and by + 1
  const Lowered l = lower(gemm(g));
  EXPECT_TRUE(l.has("__cluster_dims__(1, 2, 1) tilejit_kernel(")) << l.generated.source;
  // B's 32 x 128 tile in two panels of 64 columns, each block's 16 rows.
  EXPECT_EQ(l.count("tilejit::cuda::tma_load_multicast("), 2u) << l.generated.source;
  EXPECT_TRUE(l.has("int(tilejit_rank) * 16 * 64, &tilejit_args.tmaps[")) << l.generated.source;
  EXPECT_EQ(l.op("T.copy", 0)->path, "tma_load");
  EXPECT_EQ(l.op("T.copy", 1)->path, "tma_load_multicast");
  EXPECT_EQ(l.op("T.Pipelined")->path, "warp_specialized, 3 stages, pairs of blocks along y");
  compiles(l);
}

// T.use_swizzle(10) (rows): hardware blocks x and x + 1 run (bx, by) and
// (bx, by + 1), panels of 10 rows and a last one of 6 being even; they share
// B's tile.
TEST_F(ClusterMulticast, RasterisedBlocksPairInTheirColumnOfTiles) {
  Gemm g;
  g.swizzle = 10;
  const Lowered l = lower(gemm(g));
  EXPECT_TRUE(l.has("__cluster_dims__(2, 1, 1) tilejit_kernel(")) << l.generated.source;
  EXPECT_TRUE(l.has("tilejit::cuda::rasterize_rows(")) << l.generated.source;
  EXPECT_EQ(l.op("T.copy", 0)->path, "tma_load");
  EXPECT_EQ(l.op("T.copy", 1)->path, "tma_load_multicast");
  compiles(l);
}

// Each GEMM left alone says why in its T.Pipelined entry.
TEST_F(ClusterMulticast, BlocksRunAloneWhereAPairWouldNotShareOrCannotBeFormed) {
  auto alone = [](const Lowered& l, const std::string& why) {
    EXPECT_FALSE(l.has("__cluster_dims__")) << l.generated.source;
    EXPECT_FALSE(l.has("multicast")) << l.generated.source;
    EXPECT_FALSE(l.has("cluster_sync")) << l.generated.source;
    const runtime::Diagnostic* loop = l.op("T.Pipelined");
    ASSERT_NE(loop, nullptr);
    EXPECT_EQ(loop->path.find("pairs"), std::string::npos) << loop->path;
    EXPECT_EQ(loop->reason, "no cluster: " + why);
  };
  Gemm odd;
  odd.n = odd.m = 2176;  // 17 x 17 blocks
  alone(lower(gemm(odd)), "the grid's x extent 17 is not a constant even number");
  Gemm swizzled;  // a panel of 9 rows: blocks x and x + 1 may run in two columns
  swizzled.swizzle = 9;
  alone(lower(gemm(swizzled)),
        "T.use_swizzle(9) does not keep blocks 2i and 2i + 1 in one column of tiles");
  alone(lower(gemm({}), /*cluster=*/false), "turned off (tl.disable_cluster_multicast)");
  Gemm small;  // 2 x 2 blocks: measured slower in pairs
  small.n = small.m = 256;
  alone(lower(gemm(small)), "a grid of 4 blocks, under 256");
  Gemm wide;  // 128 x 256 tiles: their loads are not what they wait for
  wide.m = wide.n = 4096;
  wide.block_n = 256;
  wide.threads = 256;
  const Lowered w = lower(gemm(wide));
  alone(w, "a 128 x 256 tile reuses each loaded element 85 times, over 64");
  EXPECT_NE(w.op("T.Pipelined")->path.find("warp_specialized"), std::string::npos);
  // The loop's bounds read bx: pairs along y, where they do not.
  Gemm triangular;
  triangular.triangular = true;
  const Lowered t = lower(gemm(triangular));
  EXPECT_TRUE(t.has("__cluster_dims__(1, 2, 1)")) << t.generated.source;
  compiles(t);
}

}  // namespace
}  // namespace tilejit::cuda::testing
