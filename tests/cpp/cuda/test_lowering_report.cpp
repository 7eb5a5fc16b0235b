// The CUDA lowering report (runtime/lowering_report.h, backend/cuda/
// op_report.h): where each buffer is placed and which path each tile op
// takes, for the README GEMM, flash attention and a softmax, and the op
// named when a fragment is kept in shared memory.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "tile/flash_attention.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

namespace ex = ::examples::tile;

// `arch`: the architecture the source is for ("": the default, sm_90a).
runtime::LoweringReport report_of(const ir::PrimFunc& f, const std::string& arch = "",
                                  bool warp_specialize = true) {
  const ir::PrimFunc func = transform::plan_workspaces(transform::verify(f));
  const std::vector<std::string> symbols = symbols_of(func);
  runtime::SourceRequest request;
  request.func = &func;
  request.symbols = symbols;
  request.arch = arch;
  request.warp_specialize = warp_specialize;
  return cuda_backend().generate(request).report;
}

const runtime::BufferRecord& buffer(const runtime::LoweringReport& r, const std::string& name) {
  for (const runtime::BufferRecord& b : r.buffers) {
    if (b.name == name) return b;
  }
  ADD_FAILURE() << "no buffer " << name;
  static const runtime::BufferRecord none;
  return none;
}

std::vector<const runtime::Diagnostic*> ops(const runtime::LoweringReport& r,
                                            const std::string& op) {
  std::vector<const runtime::Diagnostic*> out;
  for (const runtime::Diagnostic& d : r.ops) {
    if (d.op == op) out.push_back(&d);
  }
  return out;
}

std::string placement(const runtime::BufferRecord& b) { return runtime::placement_name(b.placement); }

TEST(CudaLoweringReport, SixteenBitGemm) {
  ex::GemmConfig cfg;
  cfg.in = DataType::bfloat16();
  const runtime::LoweringReport r = report_of(ex::gemm(cfg));
  for (const runtime::BufferRecord& b : r.buffers) {
    EXPECT_TRUE(b.forced_by.op.empty()) << b.name << ": " << b.forced_by.reason;
    const std::string want = b.scope == "fragment" ? "registers" : "shared";
    EXPECT_EQ(placement(b), want) << b.name;
    EXPECT_GT(b.bytes, 0) << b.name;
  }
  ASSERT_EQ(ops(r, "T.gemm").size(), 1u);
  EXPECT_EQ(ops(r, "T.gemm")[0]->path, "wgmma_ss");
  EXPECT_EQ(ops(r, "T.gemm")[0]->reason, "");
  // Before Hopper, mma.sync.
  const runtime::LoweringReport ampere = report_of(ex::gemm(cfg), "sm_80");
  ASSERT_EQ(ops(ampere, "T.gemm").size(), 1u);
  EXPECT_EQ(ops(ampere, "T.gemm")[0]->path, "mma");
  const auto pipelined = ops(r, "T.Pipelined");
  ASSERT_EQ(pipelined.size(), 1u);
  EXPECT_EQ(pipelined[0]->path, "pipelined, 3 stages");
  // The tile loads go through cp.async: the symbolic K and N make pitches
  // TMA cannot rely on (Note [TMA copies]), which the report says; the
  // accumulator's store through its register layout.
  const auto copies = ops(r, "T.copy");
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(copies[0]->path, "cp_async");
  EXPECT_EQ(copies[1]->path, "cp_async");
  EXPECT_NE(copies[0]->reason.find("not tma: a pitch of A is 2 bytes times K, which need not be "
                                   "a multiple of 16 bytes"),
            std::string::npos)
      << copies[0]->reason;
  EXPECT_EQ(copies[2]->path, "registers");
}

// Note [Warpgroup gemms]: a shared tile the program also reads element by
// element keeps its row-major layout, and the gemm that reads it runs on
// mma.sync in the warpgroup accumulator's layout, the report naming why.
TEST(CudaLoweringReport, AGemmWhoseTileIsAlsoReadRunsOnMma) {
  using ir::Expr;
  ir::TileBuilder b("gemm_reads_b");
  const DataType f16 = DataType::float16(), f32 = DataType::float32();
  const ir::Buffer A = b.tensor_param("A", {Expr(128), Expr(128)}, f16);
  const ir::Buffer B = b.tensor_param("B", {Expr(128), Expr(128)}, f16);
  const ir::Buffer C = b.tensor_param("C", {Expr(128), Expr(128)}, f32);
  b.begin_kernel({Expr(1)}, {128});
  const ir::Buffer A_s = b.alloc("A_s", {128, 128}, f16, ir::Scope::kShared);
  const ir::Buffer B_s = b.alloc("B_s", {128, 128}, f16, ir::Scope::kShared);
  const ir::Buffer C_l = b.alloc("C_l", {128, 128}, f32, ir::Scope::kFragment);
  b.copy(ir::whole(A), ir::whole(A_s));
  b.copy(ir::whole(B), ir::whole(B_s));
  b.gemm(ir::whole(A_s), ir::whole(B_s), ir::whole(C_l), false, false, true);
  const Expr i = b.begin_for("i", 0, 128, ir::ForKind::kParallel);
  const Expr j = b.begin_for("j", 0, 128, ir::ForKind::kParallel);
  b.store(C_l, {i, j}, ir::load(C_l, {i, j}) + ir::cast(f32, ir::load(B_s, {i, j})));
  b.end_for();
  b.end_for();
  b.copy(ir::whole(C_l), ir::whole(C));
  b.end_kernel();
  const runtime::LoweringReport r = report_of(b.finish());
  const auto gemms = ops(r, "T.gemm");
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0]->path, "mma");
  EXPECT_NE(gemms[0]->reason.find("B B_s is not a swizzled shared tile"),
            std::string::npos)
      << gemms[0]->reason;
}

TEST(CudaLoweringReport, FlashAttention) {
  ex::FlashAttentionConfig cfg;
  cfg.dtype = DataType::float16();
  cfg.stages = 2;
  const runtime::LoweringReport r = report_of(ex::flash_attention(cfg));
  for (const runtime::BufferRecord& b : r.buffers) {
    if (b.scope == "fragment") {
      EXPECT_EQ(placement(b), "registers") << b.name << ": " << b.forced_by.op << " "
                                           << b.forced_by.reason;
    }
  }
  const auto gemms = ops(r, "T.gemm");
  ASSERT_EQ(gemms.size(), 2u);
  // Q K^T from two shared tiles, P V with P from registers.
  EXPECT_EQ(gemms[0]->path, "wgmma_ss") << gemms[0]->reason;
  EXPECT_EQ(gemms[1]->path, "wgmma_rs") << gemms[1]->reason;
  // K and V through TMA, Q (before the loop) through cp.async, the output
  // through the registers' layout or 16-byte chunks; nothing element by
  // element.
  int async = 0, tma = 0;
  for (const runtime::Diagnostic* c : ops(r, "T.copy")) {
    EXPECT_NE(c->path, "elementwise") << c->reason;
    async += c->path == "cp_async";
    tma += c->path == "tma_load";
  }
  EXPECT_EQ(tma, 2);
  EXPECT_GE(async, 1);
  const auto pipelined = ops(r, "T.Pipelined");
  ASSERT_EQ(pipelined.size(), 1u);
  EXPECT_EQ(pipelined[0]->path, "warp_specialized, 2 stages") << pipelined[0]->reason;
  // Turned off, the report says so.
  const runtime::LoweringReport without = report_of(ex::flash_attention(cfg), "", false);
  const auto off = ops(without, "T.Pipelined");
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0]->path, "pipelined, 2 stages");
  EXPECT_EQ(off[0]->reason, "not warp-specialised: turned off (tl.disable_warp_specialized)");
}

// Every fragment the softmax keeps in shared memory names the op that kept
// it there, at its line; its copies move 16-byte chunks.
TEST(CudaLoweringReport, Softmax) {
  const runtime::LoweringReport r = report_of(ex::softmax(256));
  ASSERT_FALSE(r.buffers.empty());
  for (const runtime::BufferRecord& b : r.buffers) {
    if (b.scope == "fragment" && placement(b) == "shared") {
      EXPECT_FALSE(b.forced_by.op.empty()) << b.name;
      EXPECT_FALSE(b.forced_by.reason.empty()) << b.name;
    }
  }
  for (const runtime::Diagnostic* c : ops(r, "T.copy")) {
    EXPECT_NE(c->path, "elementwise") << c->reason;
  }
}

// A float32 GEMM: no tensor-core route, so its accumulator is kept in
// shared memory by the T.gemm, which runs on the SIMT cores and says why.
TEST(CudaLoweringReport, AFragmentKeptInSharedMemoryNamesTheOp) {
  ex::GemmConfig cfg;
  cfg.in = DataType::float32();
  const runtime::LoweringReport r = report_of(ex::gemm(cfg));
  const auto gemms = ops(r, "T.gemm");
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0]->path, "simt");
  EXPECT_EQ(gemms[0]->reason, "A and B are float32 and float32, not 16-bit floats of one dtype");
  bool found = false;
  for (const runtime::BufferRecord& b : r.buffers) {
    if (b.scope != "fragment") continue;
    found = true;
    EXPECT_EQ(placement(b), "shared");
    EXPECT_EQ(b.forced_by.op, "T.gemm");
    EXPECT_EQ(b.forced_by.span.line, gemms[0]->span.line);
    EXPECT_NE(b.forced_by.reason.find("the tensor cores cannot run this gemm"), std::string::npos)
        << b.forced_by.reason;
  }
  EXPECT_TRUE(found);
}

// Note [Fitting the stages]: when two stages of every prefetched tile do
// not fit, the smallest ring goes first and the loop stays pipelined (MLA
// decoding's shape: a large K/V tile, a small rotary one, large query tiles
// live across the loop); the copy that lost its prefetch says why.
TEST(CudaLoweringReport, TheSmallestStageGoesFirstWhenStagesDoNotFit) {
  ir::TileBuilder b("fit");
  const DataType f16 = DataType::float16(), f32 = DataType::float32();
  const ir::Buffer Q = b.tensor_param("Q", {Expr(64), Expr(512)}, f16);
  const ir::Buffer X = b.tensor_param("X", {Expr(64), Expr(160)}, f16);
  const ir::Buffer KV = b.tensor_param("KV", {Expr(512), Expr(512)}, f16);
  const ir::Buffer KP = b.tensor_param("KP", {Expr(512), Expr(64)}, f16);
  const ir::Buffer O = b.tensor_param("O", {Expr(64), Expr(64)}, f32);
  b.begin_kernel({Expr(1)}, {128});
  const ir::Buffer Q_s = b.alloc("Q_s", {64, 512}, f16, ir::Scope::kShared);
  const ir::Buffer X_s = b.alloc("X_s", {64, 160}, f16, ir::Scope::kShared);
  const ir::Buffer KV_s = b.alloc("KV_s", {64, 512}, f16, ir::Scope::kShared);
  const ir::Buffer KP_s = b.alloc("KP_s", {64, 64}, f16, ir::Scope::kShared);
  b.copy(ir::whole(Q), ir::whole(Q_s));
  b.copy(ir::whole(X), ir::whole(X_s));
  const Expr k = b.begin_for("k", 0, 8, ir::ForKind::kPipelined, 2);
  b.copy(ir::region(KV, {{k * 64, Expr(64)}, {Expr(0), Expr(512)}}), ir::whole(KV_s));
  b.copy(ir::region(KP, {{k * 64, Expr(64)}, {Expr(0), Expr(64)}}), ir::whole(KP_s));
  const Expr i = b.begin_for("i", 0, 64, ir::ForKind::kParallel);
  const Expr j = b.begin_for("j", 0, 64, ir::ForKind::kParallel);
  b.store(O, {i, j},
          ir::load(O, {i, j}) +
              ir::cast(f32, ir::load(KV_s, {i, j}) + ir::load(KP_s, {i, j}) +
                                ir::load(Q_s, {i, j}) + ir::load(X_s, {i, j})));
  b.end_for();
  b.end_for();
  b.end_for();
  b.end_kernel();
  const runtime::LoweringReport r = report_of(b.finish());
  const auto pipelined = ops(r, "T.Pipelined");
  ASSERT_EQ(pipelined.size(), 1u);
  EXPECT_EQ(pipelined[0]->path, "pipelined, 2 stages");
  const auto copies = ops(r, "T.copy");
  ASSERT_EQ(copies.size(), 4u);
  EXPECT_EQ(copies[2]->path, "cp_async") << copies[2]->reason;
  EXPECT_EQ(copies[2]->reason, "");
  EXPECT_NE(copies[3]->reason.find("its stages (8192 bytes each) did not fit"), std::string::npos)
      << copies[3]->path << ": " << copies[3]->reason;
  EXPECT_EQ(buffer(r, "KV_s").bytes, 2 * 64 * 512 * 2);
  EXPECT_EQ(buffer(r, "KP_s").bytes, 64 * 64 * 2);
}

// Note [Copies inside their tensor]: a copy whose rectangle the grid keeps
// inside its tensor is lowered without copy.h's edge walk (INSIDE = true),
// its prefetches too; one that may reach past the tensor's end keeps it.
TEST(CudaLoweringReport, CopiesProvenInsideTheirTensorCompileNoEdgeWalk) {
  auto source = [](int64_t rows) {
    ir::TileBuilder b("inside");
    const DataType f16 = DataType::float16();
    const ir::Buffer A = b.tensor_param("A", {Expr(rows), Expr(64)}, f16);
    const ir::Buffer O = b.tensor_param("O", {Expr(rows), Expr(64)}, f16);
    const Expr bx = b.begin_kernel({Expr(2)}, {128})[0];
    const ir::Buffer A_s = b.alloc("A_s", {64, 64}, f16, ir::Scope::kShared);
    const Expr k = b.begin_for("k", 0, 2, ir::ForKind::kPipelined, 2);
    b.copy(ir::region(A, {{bx * 128 + k * 64, Expr(64)}, {Expr(0), Expr(64)}}), ir::whole(A_s));
    b.copy(ir::whole(A_s), ir::region(O, {{bx * 128 + k * 64, Expr(64)}, {Expr(0), Expr(64)}}));
    b.end_for();
    b.end_kernel();
    const ir::PrimFunc func = transform::plan_workspaces(transform::verify(b.finish()));
    const std::vector<std::string> symbols = symbols_of(func);
    runtime::SourceRequest request;
    request.func = &func;
    request.symbols = symbols;
    return cuda_backend().generate(request).source;
  };
  const std::string inside = source(256), edge = source(250);
  // The prefetches and the copy in the loop read A; the store writes O.
  EXPECT_NE(inside.find("tilejit::cuda::copy<64, 64, tilejit_nthreads, true, true>"),
            std::string::npos) << inside;
  EXPECT_NE(inside.find("tilejit::cuda::copy<64, 64, tilejit_nthreads, false, true>"),
            std::string::npos) << inside;
  EXPECT_EQ(edge.find(", true, true>"), std::string::npos) << edge;
  EXPECT_EQ(edge.find(", false, true>"), std::string::npos) << edge;
}

}  // namespace
}  // namespace tilejit::cuda::testing
