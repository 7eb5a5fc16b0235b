// Note [Coarser K steps] (src/backend/cuda/coarse_k_steps.h): a
// warp-specialised GEMM main loop whose K step covers 64 bytes runs two of
// the program's iterations per iteration. The kernel is the one
// the program would get with the wider step (compared with it line by line,
// comments aside), the report says so, and where the loop keeps its step the
// report says why.
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
  int64_t m = 2048, n = 2048, k = 256;
  int64_t block_k = 32;
  int stages = 3;
  DataType dtype = DataType::bfloat16();
  bool trans_b = false;     // B is [N, K]
  bool triangular = false;  // the loop runs bx + 1 iterations
};

// TileLang's README GEMM (128 x 128 tiles, 128 threads).
ir::PrimFunc gemm(const Gemm& g) {
  ir::TileBuilder b("coarse_gemm");
  const Expr K(g.k);
  const Buffer A = b.tensor_param("A", {Expr(g.m), K}, g.dtype);
  const Buffer B = b.tensor_param("B", g.trans_b ? std::vector<Expr>{Expr(g.n), K}
                                                 : std::vector<Expr>{K, Expr(g.n)},
                                  g.dtype);
  const Buffer C = b.tensor_param("C", {Expr(g.m), Expr(g.n)}, DataType::float32());
  const auto blk = b.begin_kernel({Expr(g.n / 128), Expr(g.m / 128)}, {128});
  const Expr bx = blk[0], by = blk[1];
  const Buffer A_s = b.alloc("A_s", {128, g.block_k}, g.dtype, Scope::kShared);
  const Buffer B_s = b.alloc("B_s", g.trans_b ? std::vector<Expr>{Expr(128), Expr(g.block_k)}
                                              : std::vector<Expr>{Expr(g.block_k), Expr(128)},
                             g.dtype, Scope::kShared);
  const Buffer C_l = b.alloc("C_l", {128, 128}, DataType::float32(), Scope::kFragment);
  b.fill(ir::whole(C_l), 0);
  const Expr steps = g.triangular ? bx + 1 : Expr((g.k + g.block_k - 1) / g.block_k);
  const Expr ko = b.begin_for("ko", 0, steps, ForKind::kPipelined, g.stages);
  b.copy(ir::corner(A, {by * 128, ko * g.block_k}), ir::whole(A_s));
  b.copy(g.trans_b ? ir::corner(B, {bx * 128, ko * g.block_k})
                   : ir::corner(B, {ko * g.block_k, bx * 128}),
         ir::whole(B_s));
  b.gemm(ir::whole(A_s), ir::whole(B_s), ir::whole(C_l), false, g.trans_b);
  b.end_for();
  b.copy(ir::whole(C_l), ir::corner(C, {by * 128, bx * 128}));
  b.end_kernel();
  return b.finish();
}

// The T.Pipelined entry of a GEMM's report.
const runtime::Diagnostic& loop_of(const Generated& g) {
  const runtime::Diagnostic* loop = g.op("T.Pipelined");
  EXPECT_NE(loop, nullptr);
  return loop ? *loop : g.generated.report.ops.front();
}

Generated lower(const ir::PrimFunc& f, bool coarse = true) {
  return generate(f, [&](runtime::SourceRequest& r) { r.coarse_k_steps = coarse; });
}

Gemm with_step(Gemm g, int64_t block_k) {
  g.block_k = block_k;
  return g;
}

class CoarseKSteps : public ::testing::Test {
 protected:
  void SetUp() override { TILEJIT_SKIP_WITHOUT_NVRTC(); }
};

TEST_F(CoarseKSteps, TwoStepsOf32PerStageAreTheProgramWithStepsOf64) {
  const Generated l = lower(gemm({}));
  const Generated w = lower(gemm(with_step({}, 64)));
  EXPECT_EQ(loop_of(l).path, "warp_specialized, 3 stages, 2 K steps of 32 per stage, pairs of "
                           "blocks along x");
  EXPECT_EQ(loop_of(w).path, "warp_specialized, 3 stages, pairs of blocks along x");
  EXPECT_EQ(l.code(), w.code());
  // 4 iterations of 64: stages of 128 x 64 + 64 x 128 bf16.
  EXPECT_TRUE(l.has("for (int64_t ko = 0; ko < 4; ++ko) {")) << l.generated.source;
  EXPECT_TRUE(l.has("tilejit::cuda::mbar_expect_tx(&A_s_landed[(ko_load - 0) % 3], 32768);"))
      << l.generated.source;
  EXPECT_TRUE(l.has("2 of the program's K steps of 32 per iteration")) << l.generated.source;
  EXPECT_TRUE(l.compiles());
}

// fp16 with B as [N, K] and a K that ends inside a step (1000: 32 steps of
// 32, 16 of 64, the last one's columns past K zeros either way).
TEST_F(CoarseKSteps, StepsAlongBsRowsAndPastTheEndOfK) {
  Gemm nt;
  nt.dtype = DataType::float16();
  nt.trans_b = true;
  nt.k = 1000;
  const Generated l = lower(gemm(nt));
  EXPECT_NE(loop_of(l).path.find(", 2 K steps of 32 per stage"), std::string::npos)
      << loop_of(l).path;
  EXPECT_EQ(l.code(), lower(gemm(with_step(nt, 64))).code());
}

// A loop that keeps its steps: the report's reason says why; turned off, the
// kernel is the program's.
TEST_F(CoarseKSteps, ALoopThatKeepsItsStepsSaysWhy) {
  auto kept = [](const Generated& l, const std::string& why) {
    const runtime::Diagnostic& loop = loop_of(l);
    EXPECT_EQ(loop.path.find("K steps"), std::string::npos) << loop.path;
    EXPECT_NE(loop.path.find("warp_specialized"), std::string::npos) << loop.path;
    EXPECT_NE(loop.reason.find("K steps of 32 kept: " + why), std::string::npos) << loop.reason;
  };
  Gemm odd;
  odd.k = 96;
  kept(lower(gemm(odd)), "its 3 iterations are not a multiple of 2");
  Gemm triangular;
  triangular.triangular = true;
  kept(lower(gemm(triangular)), "the loop's extent is not a constant");
  Gemm four;  // 4 stages of 16 KiB run 2 blocks per multiprocessor; of 32 KiB, 1
  four.stages = 4;
  kept(lower(gemm(four)), "wider stages would not keep 4 stages at 2 blocks per multiprocessor");
  // Off: the program's 8 steps, and no reason given.
  const Generated off = lower(gemm({}), /*coarse=*/false);
  EXPECT_TRUE(off.has("for (int64_t ko = 0; ko < 8; ++ko) {")) << off.generated.source;
  EXPECT_EQ(loop_of(off).path, "warp_specialized, 3 stages, pairs of blocks along x");
  EXPECT_EQ(loop_of(off).reason, "");
  // A step of 128 bytes already: nothing to say.
  EXPECT_EQ(loop_of(lower(gemm(with_step({}, 64)))).reason, "");
}

}  // namespace
}  // namespace tilejit::cuda::testing
