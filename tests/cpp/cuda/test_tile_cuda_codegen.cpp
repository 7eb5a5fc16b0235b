// The CUDA lowering of every tile example, compiled by NVRTC for sm_90a:
// no GPU is needed, so CI catches a codegen regression before any device
// run. Also the shape of what the lowering plans (shared memory, launches).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/tile_codegen.h"
#include "cuda/cuda_test_util.h"
#include "tile/flash_attention.h"
#include "tile/flash_decoding.h"
#include "tile/gated_delta_rule.h"
#include "tile/sparse_attention.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

namespace ex = ::examples::tile;
using ir::Expr;

struct Lowered {
  ir::PrimFunc func;  // after plan_workspaces, as jit() hands it on
  std::vector<std::string> symbols;
  runtime::GeneratedSource generated;
};

// `arch`: the architecture the source is for ("": the default, sm_90a);
// `warp_specialize`: SourceRequest::warp_specialize.
Lowered lower(const ir::PrimFunc& f, const std::string& arch = "", bool warp_specialize = true) {
  Lowered out{transform::plan_workspaces(transform::verify(f)), {}, {}};
  out.symbols = symbols_of(out.func);
  runtime::SourceRequest request{&out.func, out.symbols};
  request.arch = arch;
  request.warp_specialize = warp_specialize;
  out.generated = cuda_backend().generate(request);
  return out;
}

// The barriers inside the loops that spread a T.Parallel nest over the
// threads: code that some threads run and others not, where a barrier
// hangs the block (each is returned as its line).
std::vector<std::string> barriers_in_thread_loops(const std::string& source) {
  std::vector<std::string> found;
  int depth = 0;  // braces open inside the current thread loop; 0: outside
  size_t at = 0;
  while (at < source.size()) {
    size_t end = source.find('\n', at);
    if (end == std::string::npos) end = source.size();
    const std::string line = source.substr(at, end - at);
    at = end + 1;
    if (depth == 0) {
      if (line.find("+= tilejit_nthreads) {") != std::string::npos) depth = 1;
      continue;
    }
    if (line.find("__syncthreads()") != std::string::npos ||
        line.find("tilejit::cuda::barrier()") != std::string::npos) {
      found.push_back(line);
    }
    for (char c : line) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
  }
  return found;
}

// Generates and compiles `f`; returns the lowering for further checks.
// Every lowering keeps barriers out of its threads' own loops.
// `arch` as lower()'s, and the compile's too.
Lowered compiles(const ir::PrimFunc& f, const std::string& arch = "",
                 bool warp_specialize = true) {
  Lowered l = lower(f, arch, warp_specialize);
  const std::vector<std::string> bad = barriers_in_thread_loops(l.generated.source);
  EXPECT_TRUE(bad.empty()) << l.func.name << ": a barrier inside a T.Parallel nest: " << bad[0];
  runtime::Backend& be = cuda_backend();
  runtime::CompileOptions options;
  if (!arch.empty()) options.extra_flags = {"--gpu-architecture=" + arch};
  const std::string binary = be.compile(l.generated.source, l.func.name, options, Device::cuda(0));
  EXPECT_FALSE(binary.empty()) << l.func.name;
  return l;
}

class CudaTileCodegen : public ::testing::Test {
 protected:
  void SetUp() override { TILEJIT_SKIP_WITHOUT_NVRTC(); }
};

TEST_F(CudaTileCodegen, GemmInEveryDtype) {
  for (DataType t : {DataType::bfloat16(), DataType::float16(), DataType::float32()}) {
    ex::GemmConfig cfg;
    cfg.in = t;
    const Lowered l = compiles(ex::gemm(cfg));
    ASSERT_EQ(l.generated.abi.launches.size(), 1u);
    // A 32 x 64, B 64 x 32 (or as configured) tiles and the accumulator, each
    // at a 128-byte boundary.
    EXPECT_GT(l.generated.abi.launches[0].smem_bytes, 0u) << t.name();
    EXPECT_EQ(l.generated.abi.launches[0].threads[0], 128) << t.name();
  }
}

bool has(const Lowered& l, const std::string& text) {
  return l.generated.source.find(text) != std::string::npos;
}

// Note [Register accumulators]: a 16-bit GEMM's accumulator is in registers
// and its K steps run on the tensor cores; before Hopper through mma.sync,
// the operands' rows padded.
TEST_F(CudaTileCodegen, SixteenBitGemmAccumulatesInRegisters) {
  ex::GemmConfig cfg;
  cfg.in = DataType::bfloat16();
  const Lowered l = compiles(ex::gemm(cfg), "sm_80");
  EXPECT_TRUE(has(l, "// fragment in registers: tilejit::cuda::MmaAcc<")) << l.generated.source;
  EXPECT_FALSE(has(l, "wgmma")) << l.generated.source;
  EXPECT_TRUE(has(l, "tilejit::cuda::acc_gemm<")) << l.generated.source;
  EXPECT_TRUE(has(l, "tilejit::cuda::acc_store<")) << l.generated.source;
  EXPECT_TRUE(has(l, "rows padded")) << l.generated.source;
  // Note [Software pipelining]: three stages of each tile, loads two ahead.
  EXPECT_TRUE(has(l, "3 stages of")) << l.generated.source;
  EXPECT_TRUE(has(l, "tilejit::cuda::async_wait_group<1>();")) << l.generated.source;
  EXPECT_FALSE(has(l, "tma")) << l.generated.source;  // TMA is Hopper's
  // A float32 GEMM keeps its accumulator in shared memory (no tensor-core route).
  cfg.in = DataType::float32();
  EXPECT_FALSE(has(compiles(ex::gemm(cfg)), "MmaAcc<"));
}

// Note [Warpgroup gemms]: on sm_90a the same GEMM runs on wgmma, its
// accumulator in the warpgroup layout (every warp on 16 rows of each 64),
// its tiles swizzled in 128-byte panels (rows of 64 halves), 1024-aligned,
// written by copy_swizzled (its symbolic K and N make pitches TMA cannot
// rely on, Note [TMA copies]), and its pipeline fences the async proxy.
// The compile fails where ptxas serialises a wgmma (cuda_compiler.cpp).
TEST_F(CudaTileCodegen, SixteenBitGemmRunsOnWarpgroupsOnHopper) {
  ex::GemmConfig cfg;
  cfg.in = DataType::bfloat16();
  const Lowered l = compiles(ex::gemm(cfg));
  const std::string& src = l.generated.source;
  const std::string acc = "tilejit::cuda::MmaAcc<128, 128, 4, 1, 128, 1, true>";
  EXPECT_TRUE(has(l, "float C_l[128];  // fragment in registers: " + acc)) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::acc_gemm_wg<" + acc + ", 64, false, false, 128, 128, 64, 128, 128>("))
      << src;
  EXPECT_TRUE(has(l, "#include \"tilejit/cuda/wgmma/m64n128.h\"")) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::copy_swizzled<128, 128, 64, ")) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::copy_swizzled<128, 64, 128, ")) << src;
  EXPECT_TRUE(has(l, "swizzled in panels of 128 bytes")) << src;
  EXPECT_FALSE(has(l, "tma")) << src;
  EXPECT_TRUE(has(l, "__align__(1024) unsigned char tilejit_smem[]")) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::async_proxy_fence();")) << src;
  EXPECT_FALSE(has(l, "rows padded")) << src;
  EXPECT_FALSE(has(l, "tilejit::cuda::acc_gemm<")) << src;
  // Narrower rows take narrower panels: K = 32 halves are 64 bytes.
  cfg.block_k = 32;
  const Lowered k32 = compiles(ex::gemm(cfg));
  EXPECT_TRUE(has(k32, "tilejit::cuda::copy_swizzled<64, 128, 32, ")) << k32.generated.source;
  EXPECT_TRUE(has(k32, ", 32, false, false, 128, 64, 32, 128, 128>(")) << k32.generated.source;
}

// T.use_swizzle: the (bx, by) the body sees are the hardware's block remapped
// by rasterize.h, in the order asked for; enable=false and a 1-D grid keep
// blockIdx as it is.
TEST_F(CudaTileCodegen, UseSwizzleRemapsTheBlockIndices) {
  ex::AutotuneGemmConfig cfg;
  for (ir::RasterOrder order : {ir::RasterOrder::kRow, ir::RasterOrder::kColumn}) {
    cfg.order = order;
    const std::string fn = order == ir::RasterOrder::kRow ? "rows" : "columns";
    const Lowered l = compiles(ex::gemm_autotune(cfg));
    EXPECT_TRUE(has(l, "const tilejit::cuda::BlockXY tilejit_block = tilejit::cuda::rasterize_" +
                           fn + "(blockIdx.x, blockIdx.y, gridDim.x, gridDim.y, 10);"))
        << l.generated.source;
    EXPECT_TRUE(has(l, "const int64_t bx = tilejit_block.x;")) << l.generated.source;
    EXPECT_TRUE(has(l, "const int64_t by = tilejit_block.y;")) << l.generated.source;
  }
  cfg.enable_rasteration = false;
  const Lowered plain = compiles(ex::gemm_autotune(cfg));
  EXPECT_FALSE(has(plain, "rasterize_")) << plain.generated.source;
  EXPECT_TRUE(has(plain, "const int64_t bx = blockIdx.x;")) << plain.generated.source;

  ir::TileBuilder b("scale");
  const Expr n = ir::symbolic("n");
  const ir::Buffer X = b.tensor_param("X", {n}, DataType::float32());
  const Expr bx = b.begin_kernel({ir::ceildiv(n, 128)}, {128})[0];
  b.use_swizzle(4);
  const Expr i = b.begin_for("i", 0, 128, ir::ForKind::kParallel);
  b.store(X, {bx * 128 + i}, ir::load(X, {bx * 128 + i}) * 2.0);
  b.end_for();
  b.end_kernel();
  const Lowered one_row = compiles(b.finish());
  EXPECT_FALSE(has(one_row, "rasterize_")) << one_row.generated.source;
}

// The benchmark's configurations of the autotuning example's GEMM (block_M,
// block_N, block_K, stages, threads, rasterised): each compiles with its
// accumulator in registers in 64 x 64 warp tiles (bench/bench_tile_cuda.py).
TEST_F(CudaTileCodegen, AutotuneGemmConfigsAccumulateInRegisters) {
  struct Case {
    int64_t bm, bn, bk;
    int stages, threads;
    bool raster;
    const char* acc;
  };
  for (const Case& c : {Case{128, 128, 64, 3, 128, false, "MmaAcc<128, 128, 2, 2>"},
                        Case{128, 128, 64, 3, 128, true, "MmaAcc<128, 128, 2, 2>"},
                        Case{128, 256, 64, 3, 256, true, "MmaAcc<128, 256, 2, 4>"},
                        Case{256, 128, 64, 3, 256, true, "MmaAcc<256, 128, 4, 2>"},
                        Case{128, 256, 32, 4, 256, true, "MmaAcc<128, 256, 2, 4>"},
                        Case{128, 128, 32, 4, 128, true, "MmaAcc<128, 128, 2, 2>"},
                        Case{128, 128, 64, 2, 128, true, "MmaAcc<128, 128, 2, 2>"},
                        Case{128, 128, 64, 3, 256, true, "MmaAcc<128, 128, 2, 4>"}}) {
    ex::AutotuneGemmConfig cfg;
    cfg.block_m = c.bm, cfg.block_n = c.bn, cfg.block_k = c.bk;
    cfg.stages = c.stages, cfg.threads = c.threads, cfg.enable_rasteration = c.raster;
    cfg.dtype = DataType::bfloat16();
    const std::string what = std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" +
                             std::to_string(c.bk) + " " + std::to_string(c.threads);
    const Lowered l = compiles(ex::gemm_autotune(cfg), "sm_80");
    EXPECT_TRUE(has(l, std::string("// fragment in registers: tilejit::cuda::") + c.acc))
        << what << "\n" << l.generated.source;
    EXPECT_TRUE(has(l, std::to_string(c.stages) + " stages of")) << what;
    EXPECT_EQ(l.generated.abi.launches[0].threads[0], c.threads) << what;
    // Note [Warpgroup gemms]: on sm_90a, every warp on 16 rows of each 64.
    const Lowered hopper = compiles(ex::gemm_autotune(cfg));
    const std::string wg = "MmaAcc<" + std::to_string(c.bm) + ", " + std::to_string(c.bn) + ", " +
                           std::to_string(c.threads / 32) + ", 1, " + std::to_string(c.bm) +
                           ", 1, true>";
    EXPECT_TRUE(has(hopper, "// fragment in registers: tilejit::cuda::" + wg))
        << what << "\n" << hopper.generated.source;
    EXPECT_TRUE(has(hopper, "tilejit::cuda::acc_gemm_wg<tilejit::cuda::" + wg)) << what;
    EXPECT_TRUE(has(hopper, std::to_string(c.stages) + " stages of")) << what;
  }
}

// Flash attention: the accumulators, the probabilities and the row
// statistics all in registers (fragments.h), the softmax's T.Parallel loops
// register loops, the second gemm's A taken from registers; so the
// pipelined K/V loop needs no barrier but the one that publishes its
// prefetched tiles.
TEST_F(CudaTileCodegen, FlashAttentionAccumulatorsInRegisters) {
  ex::FlashAttentionConfig cfg;
  cfg.dtype = DataType::float16();
  cfg.stages = 2;
  const Lowered l = compiles(ex::flash_attention(cfg), "sm_80");
  const std::string& src = l.generated.source;
  EXPECT_TRUE(has(l, "acc_reduce_rows_to<tilejit::cuda::ReduceKind::kMax")) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::acc_gemm_rs<")) << src;
  EXPECT_TRUE(has(l, "float scores_max[2];  // fragment in registers: tilejit::cuda::MmaRows<64, 4>"))
      << src;
  EXPECT_TRUE(has(l, "tilejit::float16 acc_s_cast[32];")) << src;
  const size_t loop = src.find("for (int64_t k = 0;");
  const size_t after = src.find("tilejit::cuda::async_wait_all();", loop);
  ASSERT_NE(loop, std::string::npos);
  const std::string body = src.substr(loop, after - loop);
  size_t barriers = 0;
  for (const char* b : {"__syncthreads();", "tilejit::cuda::barrier();"}) {
    for (size_t at = body.find(b); at != std::string::npos; at = body.find(b, at + 1)) ++barriers;
  }
  EXPECT_EQ(barriers, 1u) << body;
}

// Note [Prefetched addresses]: a T.Pipelined loop whose copy reads the rows
// an index tensor names, through a value computed in the loop.
enum class RowIndex {
  kLocal,        // blk[0] = Idx[bx, k]; T.copy(A[blk[0] * 64, 0], A_s)
  kLet,          // row = Idx[bx, k] * 64; T.copy(A[row, 0], A_s)
  kConditional,  // if Idx[bx, k] >= 0: blk[0] = Idx[bx, k]
  kRunning,      // blk[0] = blk[0] + Idx[bx, k]  (a sum over the iterations)
  kWrittenIndex  // blk[0] = Idx[bx, k], and the kernel writes Idx
};

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

ir::PrimFunc gather_rows(RowIndex form) {
  ir::TileBuilder b("gather_rows");
  const Expr n = ir::symbolic("n"), m = ir::symbolic("m");
  const DataType f32 = DataType::float32(), i32 = DataType::int32();
  const ir::Buffer A = b.tensor_param("A", {n, Expr(64)}, f32);
  const ir::Buffer Idx = b.tensor_param("Idx", {m, Expr(8)}, i32);
  const ir::Buffer Out = b.tensor_param("Out", {m * 64, Expr(64)}, f32);
  const Expr bx = b.begin_kernel({m}, {128})[0];
  const ir::Buffer A_s = b.alloc("A_s", {64, 64}, f32, ir::Scope::kShared);
  const ir::Buffer acc = b.alloc("acc", {64, 64}, f32, ir::Scope::kFragment);
  const ir::Buffer blk = b.alloc("blk", {1}, i32, ir::Scope::kLocal);
  b.fill(ir::whole(acc), Expr(0.0));
  if (form == RowIndex::kRunning) b.store(blk, {Expr(0)}, ir::make_int(0, i32));
  const Expr k = b.begin_for("k", 0, 8, ir::ForKind::kPipelined, 3);
  const Expr index = ir::load(Idx, {bx, k});
  const ir::Span at11{"k.py", 11, 9};
  Expr row = ir::load(blk, {Expr(0)}) * 64;
  switch (form) {
    case RowIndex::kLocal:
    case RowIndex::kWrittenIndex: b.store(blk, {Expr(0)}, index, at11); break;
    case RowIndex::kLet: row = b.let("row", index * 64, at11); break;
    case RowIndex::kConditional:
      b.begin_if(index >= 0, ir::Span{"k.py", 10, 5});
      b.store(blk, {Expr(0)}, index, at11);
      b.end_if();
      break;
    case RowIndex::kRunning: b.store(blk, {Expr(0)}, ir::load(blk, {Expr(0)}) + index, at11); break;
  }
  b.copy(ir::corner(A, {row, Expr(0)}), ir::whole(A_s), ir::Span{"k.py", 12, 5});
  const Expr i = b.begin_for("i", 0, 64, ir::ForKind::kParallel);
  const Expr j = b.begin_for("j", 0, 64, ir::ForKind::kParallel);
  b.store(acc, {i, j}, ir::load(acc, {i, j}) + ir::load(A_s, {i, j}));
  b.end_for();
  b.end_for();
  b.end_for();
  if (form == RowIndex::kWrittenIndex) b.store(Idx, {bx, Expr(0)}, ir::make_int(0, i32));
  b.copy(ir::whole(acc), ir::corner(Out, {bx * 64, Expr(0)}));
  b.end_kernel();
  return b.finish();
}

// The prefetch recomputes the row for the iteration it loads: the prologue
// reads Idx at iterations 0 and 1, the loop at k + 2, each under the
// prefetch's guard; the body's own copy is gone.
TEST_F(CudaTileCodegen, APipelinedCopyRecomputesARowComputedInTheLoop) {
  for (RowIndex form : {RowIndex::kLocal, RowIndex::kLet}) {
    const Lowered l = compiles(gather_rows(form));
    const std::string& src = l.generated.source;
    EXPECT_TRUE(l.generated.diagnostics.empty()) << l.generated.diagnostics[0].reason;
    const size_t loop = src.find("for (int64_t k = 0;");
    const size_t end = src.find("tilejit::cuda::async_wait_all();", loop);
    ASSERT_NE(end, std::string::npos) << src;
    const std::string prologue = src.substr(0, loop), body = src.substr(loop, end - loop);
    // Iteration s into stage s, the row read at iteration s (three times:
    // the corner and the two bounds).
    for (const auto& [ahead, s] : {std::pair<std::string, std::string>{"k_ahead", "0"},
                                   std::pair<std::string, std::string>{"k_ahead_1", "1"}}) {
      EXPECT_EQ(occurrences(prologue, "const int64_t " + ahead + " = 0 + " + s + ";\n    if (0 + " +
                                          s + " < 8) {"),
                1u)
          << src;
      EXPECT_EQ(occurrences(prologue, "Idx(bx, " + ahead + ")"), 3u) << src;
      EXPECT_EQ(occurrences(prologue, "(A_s_stages + (" + s + ") * 4096)"), 1u) << src;
    }
    EXPECT_EQ(occurrences(body, "const int64_t k_ahead_2 = k + 2;\n      if (k + 2 < 8) {"), 1u)
        << src;
    EXPECT_EQ(occurrences(body, "Idx(bx, k_ahead_2)"), 3u) << src;
    EXPECT_EQ(occurrences(body, "tilejit::cuda::copy<"), 1u) << src;  // the prefetch alone
    // The body's own store or let still reads iteration k's index.
    EXPECT_EQ(occurrences(body, "Idx(bx, k)"), 1u) << src;
  }
}

// Note [Line directives]: the statements' lines carry the author's
// file:line, the unit's own numbering resumes after each body, and NVRTC's
// message for an error in a statement's lines names the author's line.
TEST_F(CudaTileCodegen, LineDirectivesNameTheAuthorsLines) {
  const Lowered l = compiles(gather_rows(RowIndex::kConditional));
  const std::string& src = l.generated.source;
  const size_t at = src.find("#line 12 \"k.py\"\n");
  ASSERT_NE(at, std::string::npos) << src;
  // Every return to the unit names the unit's next physical line.
  std::istringstream lines(src);
  std::string text;
  int physical = 0, restores = 0;
  while (std::getline(lines, text)) {
    ++physical;
    const std::string back = "#line ";
    if (text.rfind(back, 0) == 0 && text.find("\"gather_rows.cu\"") != std::string::npos) {
      EXPECT_EQ(text, "#line " + std::to_string(physical + 1) + " \"gather_rows.cu\"") << src;
      ++restores;
    }
  }
  EXPECT_EQ(restores, 1) << src;
  // A deliberate error in the lines of the statement at k.py:12.
  std::string broken = src;
  broken.insert(at + std::string("#line 12 \"k.py\"\n").size(), "int tilejit_broken = ;\n");
  const std::string msg = error_message(
      [&] { cuda_backend().compile(broken, l.func.name, {}, Device::cuda(0)); },
      ErrorKind::kCompileError);
  EXPECT_NE(msg.find("k.py(12): error: expected an expression"), std::string::npos) << msg;
}

// A row the prefetch cannot recompute leaves the copy synchronous in the
// body, with a diagnostic at the copy's line naming the buffer whose write
// prevents it.
TEST_F(CudaTileCodegen, APipelinedCopyOfARowItCannotRecomputeStaysInTheBody) {
  const std::string path = "k.py:12:5: T.copy: not pipelined, copied synchronously in each iteration: ";
  const std::string cannot =
      " in a way the prefetch cannot recompute for a later iteration (it can recompute a let or "
      "a store to a local buffer at the loop's top level before the copy)";
  const std::pair<RowIndex, std::string> cases[] = {
      {RowIndex::kConditional, "its source address reads 'blk', which the loop writes at k.py:11:9" + cannot},
      {RowIndex::kRunning, "its source address reads 'blk' (k.py:11:9), which reads 'blk', which the loop writes at k.py:11:9" + cannot},
      {RowIndex::kWrittenIndex, "its source address reads 'blk' (k.py:11:9), which reads 'Idx', which the kernel writes"},
  };
  for (const auto& [form, reason] : cases) {
    const Lowered l = compiles(gather_rows(form));
    const std::string& src = l.generated.source;
    ASSERT_EQ(l.generated.diagnostics.size(), 1u) << reason;
    const runtime::Diagnostic& d = l.generated.diagnostics[0];
    EXPECT_EQ(d.op, "T.copy");
    EXPECT_EQ(d.span.str(), "k.py:12:5");
    EXPECT_EQ(d.message("gather_rows"), path + reason);
    EXPECT_EQ(src.find("_ahead"), std::string::npos) << src;
    EXPECT_EQ(src.find("stages of"), std::string::npos) << src;
    const size_t loop = src.find("for (int64_t k = 0;");
    ASSERT_NE(loop, std::string::npos) << src;
    EXPECT_EQ(occurrences(src.substr(loop), "tilejit::cuda::copy<"), 1u) << src;  // A_s
    // acc, in registers (Note [Partitioned fragments]), to Out.
    EXPECT_EQ(occurrences(src.substr(loop), "tilejit::cuda::part_store<"), 1u) << src;
  }
}

TEST_F(CudaTileCodegen, ElementwiseAndNormalisations) {
  compiles(ex::elementwise_add(DataType::float32()));
  compiles(ex::elementwise_add_1d());
  compiles(ex::rms_norm(256));
  compiles(ex::softmax(256));
}

// int8 x int8 -> int32: the library's gemm, exact in the integer C (the
// lowering report says why not the tensor cores).
TEST_F(CudaTileCodegen, AnInt8GemmAccumulatesInInt32) {
  ir::TileBuilder b("gemm_i8");
  const DataType i8 = DataType::int8(), i32 = DataType::int32();
  const ir::Buffer A = b.tensor_param("A", {Expr(64), Expr(32)}, i8);
  const ir::Buffer B = b.tensor_param("B", {Expr(32), Expr(64)}, i8);
  const ir::Buffer C = b.tensor_param("C", {Expr(64), Expr(64)}, i32);
  b.begin_kernel({Expr(1)}, {128});
  const ir::Buffer A_s = b.alloc("A_s", {64, 32}, i8, ir::Scope::kShared);
  const ir::Buffer B_s = b.alloc("B_s", {32, 64}, i8, ir::Scope::kShared);
  const ir::Buffer acc = b.alloc("acc", {64, 64}, i32, ir::Scope::kFragment);
  b.copy(ir::whole(A), ir::whole(A_s));
  b.copy(ir::whole(B), ir::whole(B_s));
  b.gemm(ir::whole(A_s), ir::whole(B_s), ir::whole(acc), false, false, true, 0);
  b.copy(ir::whole(acc), ir::whole(C));
  b.end_kernel();
  const Lowered l = compiles(b.finish());
  EXPECT_NE(l.generated.source.find("tilejit::cuda::gemm<64, 64, 32, false, false"), std::string::npos)
      << l.generated.source;
}

TEST_F(CudaTileCodegen, SplitKInBothWorkspaceForms) {
  // The slice's end masked by an `if` on the thread's k index, inside a
  // T.Parallel loop: the branch holds no barrier (it did, and the block hung
  // on the GPU whenever a slice ended inside a K tile).
  const Lowered l = compiles(ex::splitk_gemm(4, false));
  EXPECT_NE(l.generated.source.find("if (((k0 + kk) >= k_end)) {"), std::string::npos);
  compiles(ex::splitk_gemm(4, true));
  compiles(ex::splitk_gemm_counted(4));
}

TEST_F(CudaTileCodegen, FlashAttentionCausalAndNot) {
  for (bool causal : {false, true}) {
    ex::FlashAttentionConfig cfg;
    cfg.causal = causal;
    compiles(ex::flash_attention(cfg));
  }
}

// Note [TMA copies]: flash attention's K and V tiles (K[batch, seq, heads,
// dim], heads and dim constant: every pitch a multiple of 16 bytes) are
// TMA boxes, one per 128-byte panel, issued by thread 0 on the stage's
// mbarrier through tensor maps in the argument block, which the KernelAbi
// describes: rank 4, the symbols seq and batch as slots, boxes of 64 x 1 x
// 128 x 1. Q, loaded before the loop, keeps cp.async.
TEST_F(CudaTileCodegen, FlashAttentionLoadsKAndVThroughTma) {
  ex::FlashAttentionConfig cfg;
  cfg.dtype = DataType::float16();
  cfg.dim = 128;
  cfg.stages = 2;
  const Lowered l = compiles(ex::flash_attention(cfg));
  const std::string& src = l.generated.source;
  EXPECT_TRUE(has(l, "tilejit::cuda::TensorMap tmaps[2];")) << src;
  EXPECT_TRUE(has(l, "#include \"tilejit/cuda/tma.h\"")) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::mbar_init(&K_shared_landed[1], 1);")) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::mbar_init(&V_shared_landed[1], 1);")) << src;
  // Each tile is waited for right before the gemm that reads it: V lands
  // while Q K^T runs.
  const size_t wait_k = src.find("tilejit::cuda::mbar_wait(&K_shared_landed[");
  const size_t wait_v = src.find("tilejit::cuda::mbar_wait(&V_shared_landed[");
  const size_t gemm_qk = src.find("// T.gemm(Q_shared");
  ASSERT_NE(wait_k, std::string::npos) << src;
  ASSERT_NE(wait_v, std::string::npos) << src;
  ASSERT_NE(gemm_qk, std::string::npos) << src;
  EXPECT_LT(wait_k, gemm_qk) << src;
  EXPECT_GT(wait_v, gemm_qk) << src;
  EXPECT_TRUE(has(l, "): tma, 2 boxes")) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::copy_swizzled<")) << src;  // Q
  EXPECT_FALSE(has(l, "async_wait_group")) << src;               // no cp.async in the loop
  int maps = 0;
  for (const runtime::AbiArg& a : l.generated.abi.args) {
    if (a.kind != runtime::AbiArgKind::kTensorMap) continue;
    maps += 1;
    EXPECT_TRUE(a.name == "K" || a.name == "V") << a.name;
    EXPECT_EQ(a.offset % 64, 0u) << a.name;
    EXPECT_EQ(a.tensor_map.rank, 4) << a.name;
    EXPECT_EQ(a.tensor_map.swizzle, 128) << a.name;
    EXPECT_EQ(a.tensor_map.box[0], 64u) << a.name;
    EXPECT_EQ(a.tensor_map.box[1], 1u) << a.name;
    EXPECT_EQ(a.tensor_map.box[2], uint32_t(cfg.block_n)) << a.name;
    EXPECT_EQ(a.tensor_map.box[3], 1u) << a.name;
    EXPECT_LT(a.tensor_map.dims[2], 0) << a.name;  // seq: a symbol's slot
    EXPECT_LT(a.tensor_map.dims[3], 0) << a.name;  // batch
  }
  EXPECT_EQ(maps, 2) << l.generated.abi.str();
  // Before Hopper, cp.async.
  EXPECT_FALSE(has(compiles(ex::flash_attention(cfg), "sm_80"), "tma_load"));
}

// Note [Warp specialisation]: a producer warpgroup beside the kernel's 256
// threads issues K's and V's TMA copies; the consumers hand each stage back
// after the gemm that reads it and never meet the producer at a barrier.
TEST_F(CudaTileCodegen, FlashAttentionHasAProducerWarpgroup) {
  ex::FlashAttentionConfig cfg;
  cfg.dtype = DataType::float16();
  cfg.dim = 128;
  cfg.stages = 2;
  cfg.block_m = cfg.block_n = 128;
  cfg.threads = 256;
  const Lowered l = compiles(ex::flash_attention(cfg));
  const std::string& src = l.generated.source;
  ASSERT_EQ(l.generated.abi.launches.size(), 1u);
  EXPECT_EQ(l.generated.abi.launches[0].threads[0], 384);
  EXPECT_TRUE(has(l, "__launch_bounds__(384, 1)")) << src;
  EXPECT_TRUE(has(l, "tilejit::cuda::mbar_init(&K_shared_free[1], 256);")) << src;
  // The producer: fewer registers, one thread's loop, gone before the body.
  const size_t producer = src.find("if (tilejit_tid >= 256) {");
  const size_t dec = src.find("tilejit::cuda::set_registers<false, 24>();");
  const size_t free_wait = src.find("tilejit::cuda::mbar_wait(&K_shared_free[");
  const size_t load = src.find("tilejit::cuda::tma_load(");
  const size_t leave = src.find("return;");
  const size_t inc = src.find("tilejit::cuda::set_registers<true, 240>();");
  for (size_t at : {producer, dec, free_wait, load, leave, inc}) ASSERT_NE(at, std::string::npos) << src;
  EXPECT_LT(producer, dec);
  EXPECT_LT(dec, free_wait);
  EXPECT_LT(free_wait, load);
  EXPECT_LT(load, leave);
  EXPECT_LT(leave, inc);
  // Every TMA instruction is the producer's.
  EXPECT_EQ(src.find("tilejit::cuda::tma_load(", leave), std::string::npos) << src;
  // The consumers: no __syncthreads past the split, K handed back after
  // Q K^T and before V is waited for.
  EXPECT_EQ(src.find("__syncthreads()", inc), std::string::npos) << src;
  EXPECT_NE(src.find("tilejit::cuda::block_sync<256>();", inc), std::string::npos) << src;
  const size_t gemm_qk = src.find("// T.gemm(Q_shared");
  const size_t free_k = src.find("tilejit::cuda::mbar_arrive(&K_shared_free[");
  const size_t wait_v = src.find("tilejit::cuda::mbar_wait(&V_shared_landed[");
  const size_t free_v = src.find("tilejit::cuda::mbar_arrive(&V_shared_free[");
  for (size_t at : {gemm_qk, free_k, wait_v, free_v}) ASSERT_NE(at, std::string::npos) << src;
  EXPECT_LT(gemm_qk, free_k);
  EXPECT_LT(free_k, wait_v);
  EXPECT_LT(wait_v, free_v);
  // Turned off, the loop prefetches in the kernel's own threads.
  const Lowered off = compiles(ex::flash_attention(cfg), "", /*warp_specialize=*/false);
  EXPECT_EQ(off.generated.abi.launches[0].threads[0], 256);
  EXPECT_FALSE(has(off, "set_registers")) << off.generated.source;
  EXPECT_FALSE(has(off, "_free[")) << off.generated.source;
  EXPECT_TRUE(has(off, "tma_load(")) << off.generated.source;
}

TEST_F(CudaTileCodegen, FlashDecodingIsTwoEntries) {
  const Lowered l = compiles(ex::flash_decoding({}));
  ASSERT_EQ(l.generated.abi.launches.size(), 2u);
  EXPECT_EQ(l.generated.abi.launches[0].entry, "tilejit_kernel");
  EXPECT_EQ(l.generated.abi.launches[1].entry, "tilejit_kernel_1");
  EXPECT_NE(l.generated.source.find("tilejit_kernel_1("), std::string::npos);
  // One dynamic array for the unit, of one alignment: 1024 where a tile of
  // either entry is swizzled, else 128 (NVRTC would keep one of two).
  const std::string& src = l.generated.source;
  const std::string wide = "extern __shared__ __align__(1024) unsigned char tilejit_smem[];";
  const std::string narrow = "extern __shared__ __align__(128) unsigned char tilejit_smem[];";
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
    return n;
  };
  const bool swizzled = src.find("swizzled in panels") != std::string::npos;
  EXPECT_EQ(count(swizzled ? wide : narrow), 2u) << src;
  EXPECT_EQ(src.find("@TILEJIT_SMEM_ALIGN@"), std::string::npos);
}

// T.atomic_add of one element in a T.Parallel loop is that thread's own;
// other tile ops there are refused, naming the op's line.
TEST_F(CudaTileCodegen, OneElementAtomicsInAParallelLoopAreTheThreads) {
  auto program = [](bool with_copy) {
    ir::TileBuilder b("column_sums");
    const Expr n = ir::symbolic("n");
    const DataType f32 = DataType::float32();
    const ir::Buffer A = b.tensor_param("A", {n, Expr(64)}, f32);
    const ir::Buffer S = b.tensor_param("S", {Expr(64)}, f32);
    const auto blk = b.begin_kernel({ir::ceildiv(n, 32)}, {128});
    const ir::Buffer F = b.alloc("F", {32, 64}, f32, ir::Scope::kFragment);
    b.copy(ir::corner(A, {blk[0] * 32, Expr(0)}), ir::whole(F));
    const Expr i = b.begin_for("i", 0, 32, ir::ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, 64, ir::ForKind::kParallel);
    if (with_copy) {
      b.copy(ir::whole(F), ir::corner(A, {i, j}), ir::Span{"k.py", 7, 5});
    } else {
      b.atomic_add(ir::region(S, {ir::Range{j, Expr(1)}}), ir::load(F, {i, j}));
    }
    b.end_for();
    b.end_for();
    b.end_kernel();
    return b.finish();
  };
  const Lowered l = compiles(program(false));
  EXPECT_NE(l.generated.source.find("tilejit::cuda::atomic_add(&S("), std::string::npos)
      << l.generated.source;
  const std::string msg = error_message([&] { lower(program(true)); }, ErrorKind::kValueError);
  EXPECT_NE(msg.find("k.py:7:5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a tile op inside a T.Parallel loop"), std::string::npos) << msg;
}

// Note [Shared-memory liveness]: the delta rule's float32 tiles at chunk 64
// take 295 KB laid end to end; tiles that are never live together share
// bytes, and the kernel fits the block's 227 KB.
TEST_F(CudaTileCodegen, TilesNeverLiveTogetherShareBytes) {
  ex::GatedDeltaRuleConfig cfg;
  cfg.heads = 1;
  cfg.dim_k = cfg.dim_v = cfg.chunk = 64;
  const Lowered l = compiles(ex::gated_delta_rule(cfg));
  const uint32_t smem = l.generated.abi.launches[0].smem_bytes;
  EXPECT_GT(smem, 100000u);
  EXPECT_LE(smem, uint32_t(kMaxSharedBytes));
}

TEST_F(CudaTileCodegen, SparseAttentionAndGatedDeltaRule) {
  compiles(ex::sparse_attention_tile({}));
  compiles(ex::gated_delta_rule({}));
}


// --- Note [Thread semantics] -------------------------------------------------

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// B[bx * 128 + tx] = A[...] * 2 is every thread's store; C[bx] = 1, the same
// on every thread, may be thread 0's.
TEST_F(CudaTileCodegen, AStoreWithTheThreadIndexIsEveryThreads) {
  ir::TileBuilder b("scale");
  const Expr n(1024);
  ir::Buffer A = b.tensor_param("A", {n}, DataType::float32());
  ir::Buffer B = b.tensor_param("B", {n}, DataType::float32());
  ir::Buffer C = b.tensor_param("C", {Expr(8)}, DataType::float32());
  const Expr bx = b.begin_kernel({Expr(8)}, {128})[0];
  const Expr tx = b.thread_binding(0);
  b.store(B, {bx * 128 + tx}, ir::load(A, {bx * 128 + tx}) * Expr(2.0));
  b.store(C, {bx}, Expr(1.0));
  b.end_kernel();
  const std::string src = compiles(b.finish()).generated.source;
  EXPECT_EQ(count_of(src, "if (tilejit_tid == 0) C("), 1u) << src;
  EXPECT_EQ(count_of(src, "if (tilejit_tid == 0) B("), 0u) << src;
  EXPECT_EQ(count_of(src, "\n  B(((bx * 128) + tx)) = "), 1u) << src;
}

// A copy under `if tx < 128` of 256 threads runs on those 128 (rank
// tilejit_tid), the else branch's on the other 128 (rank tilejit_tid - 128),
// each with a named barrier of its own and none inside either branch for
// the whole block.
TEST_F(CudaTileCodegen, TileOpsUnderAThreadRangeRunOnTheRange) {
  ir::TileBuilder b("halves");
  ir::Buffer A = b.tensor_param("A", {Expr(64), Expr(64)}, DataType::float32());
  ir::Buffer B = b.tensor_param("B", {Expr(64), Expr(64)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {256});
  const Expr tx = b.thread_binding(0);
  ir::Buffer A_s = b.alloc("A_s", {Expr(64), Expr(64)}, DataType::float32(), ir::Scope::kShared);
  b.begin_if(tx < Expr(128));
  b.copy(ir::whole(A), ir::whole(A_s));
  b.copy(ir::whole(A_s), ir::whole(B));
  b.begin_else();
  b.fill(ir::whole(A_s), Expr(0.0));
  b.end_if();
  b.end_kernel();
  const std::string src = compiles(b.finish()).generated.source;
  const size_t then_at = src.find("if ((tx < 128)) {"), else_at = src.find("} else {");
  ASSERT_NE(then_at, std::string::npos) << src;
  ASSERT_NE(else_at, std::string::npos) << src;
  const std::string then_part = src.substr(then_at, else_at - then_at);
  const std::string else_part = src.substr(else_at, src.find("\n  }\n", else_at) - else_at);
  // Whole-tensor copies: inside (Note [Copies inside their tensor]).
  EXPECT_NE(then_part.find("copy<64, 64, 128, true, true>("), std::string::npos) << src;
  EXPECT_NE(then_part.find("tilejit::cuda::group_barrier<1, 128, true>();"), std::string::npos)
      << src;
  EXPECT_NE(else_part.find("fill<64, 64, 128>("), std::string::npos) << src;
  EXPECT_NE(else_part.find(", int((tilejit_tid - 128)));"), std::string::npos) << src;
  EXPECT_EQ(then_part.find("__syncthreads"), std::string::npos) << src;
  EXPECT_EQ(else_part.find("__syncthreads"), std::string::npos) << src;
  EXPECT_EQ(else_part.find("group_barrier"), std::string::npos) << src;
  EXPECT_EQ(src.find("__syncthreads"), std::string::npos) << src;  // nothing before or after
}

// A loop that may run no iteration: the barrier at the top of its body
// orders what was written before it only when an iteration runs, so a read
// after the loop of a tile written before it gets a barrier of its own
// (flash decoding's split that walks no block: racecheck found the fill of
// logsum and its read after the loop unordered).
TEST_F(CudaTileCodegen, ALoopOfNoIterationLeavesItsHazardsPending) {
  ir::TileBuilder b("zero_trip");
  const Expr n = ir::symbolic("n");
  ir::Buffer A = b.tensor_param("A", {n, Expr(64)}, DataType::float32());
  ir::Buffer B = b.tensor_param("B", {Expr(64)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {128});
  ir::Buffer S = b.alloc("S", {Expr(64)}, DataType::float32(), ir::Scope::kShared);
  ir::Buffer T_s = b.alloc("T_s", {Expr(64)}, DataType::float32(), ir::Scope::kShared);
  b.fill(ir::whole(S), Expr(1.0));
  const Expr k = b.begin_for("k", 0, n, ir::ForKind::kSerial);
  b.copy(ir::region(A, {ir::Range{k, Expr(1)}, ir::Range{Expr(0), Expr(64)}}), ir::whole(T_s));
  b.copy(ir::whole(S), ir::whole(T_s));
  b.end_for();
  b.copy(ir::whole(S), ir::whole(B));
  b.end_kernel();
  const std::string src = compiles(b.finish()).generated.source;
  const size_t loop = src.find("for (int64_t k = 0;");
  ASSERT_NE(loop, std::string::npos) << src;
  const size_t after = src.find("\n  }\n", loop);
  ASSERT_NE(after, std::string::npos) << src;
  const size_t store = src.find("// T.copy(S[0:64], B[0:64])", after);
  ASSERT_NE(store, std::string::npos) << src;
  // A barrier outside the loop, before it (once) or after it, orders the
  // fill before the copy whether or not the loop runs.
  const size_t fill = src.find("// T.fill(S[0:64], 1.0)");
  ASSERT_NE(fill, std::string::npos) << src;
  auto barrier_in = [&](size_t from, size_t to) {
    const std::string text = src.substr(from, to - from);
    return text.find("__syncthreads();") != std::string::npos ||
           text.find("barrier") != std::string::npos;
  };
  EXPECT_TRUE(barrier_in(fill, loop) || barrier_in(after, store)) << src;
}

// Note [Thread-exclusive writes]: TileLang's naive GEMV fills its tiles
// element by element, thread 0 A's and each thread its own row of B; no two
// threads write one element, so the fill loop needs no barrier, and one
// barrier before the loop that reads the tiles orders them all. Filling
// columns instead (thread t writes B_s[tk, t]: its own too, but not as
// c * t + r with r in [0, c), the form the analysis proves) keeps the
// barrier at the back edge.
ir::PrimFunc naive_gemv(bool rows) {
  ir::TileBuilder b(rows ? "gemv_rows" : "gemv_cols");
  ir::Buffer A = b.tensor_param("A", {Expr(256)}, DataType::float32());
  ir::Buffer B = b.tensor_param("B", {Expr(128), Expr(256)}, DataType::float32());
  ir::Buffer C = b.tensor_param("C", {Expr(128)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {128});
  const Expr tx = b.thread_binding(0);
  ir::Buffer A_s = b.alloc("A_s", {Expr(128)}, DataType::float32(), ir::Scope::kShared);
  ir::Buffer B_s = b.alloc("B_s", {Expr(128), Expr(128)}, DataType::float32(), ir::Scope::kShared);
  ir::Buffer acc = b.alloc("acc", {Expr(1)}, DataType::float32(), ir::Scope::kLocal);
  b.store(acc, {Expr(0)}, Expr(0.0));
  const Expr bk = b.begin_for("bk", 0, 2, ir::ForKind::kSerial);
  Expr tk = b.begin_for("tk", 0, 128, ir::ForKind::kSerial);
  b.store(A_s, {tk}, ir::load(A, {bk * Expr(128) + tk}));
  if (rows) {
    b.store(B_s, {tx, tk}, ir::load(B, {tx, bk * Expr(128) + tk}));
  } else {
    b.store(B_s, {tk, tx}, ir::load(B, {tx, bk * Expr(128) + tk}));
  }
  b.end_for();
  tk = b.begin_for("tj", 0, 128, ir::ForKind::kSerial);
  const Expr bv = rows ? ir::load(B_s, {tx, tk}) : ir::load(B_s, {tk, tx});
  b.store(acc, {Expr(0)}, ir::load(acc, {Expr(0)}) + ir::load(A_s, {tk}) * bv);
  b.end_for();
  b.end_for();
  b.store(C, {tx}, ir::load(acc, {Expr(0)}));
  b.end_kernel();
  return b.finish();
}

TEST_F(CudaTileCodegen, StoresOfEachThreadsOwnElementsNeedNoBarrierBetweenThem) {
  auto count = [](const std::string& text) {
    size_t n = 0;
    for (size_t at = text.find("__syncthreads();"); at != std::string::npos;
         at = text.find("__syncthreads();", at + 1)) {
      ++n;
    }
    return n;
  };
  for (bool rows : {true, false}) {
    const std::string src = compiles(naive_gemv(rows)).generated.source;
    const size_t fill = src.find("for (int64_t tk = 0;");
    const size_t read = src.find("for (int64_t tj = 0;");
    ASSERT_NE(fill, std::string::npos) << src;
    ASSERT_NE(read, std::string::npos) << src;
    const size_t fill_end = src.rfind("\n    }\n", read);
    ASSERT_NE(fill_end, std::string::npos) << src;
    // Inside the fill loop: a barrier per element only for the columns.
    EXPECT_EQ(count(src.substr(fill, fill_end - fill)), rows ? 0u : 1u) << src;
    // Between the loops: the one barrier the reads need (for the columns,
    // the fill loop's last one).
    EXPECT_EQ(count(src.substr(fill_end, read - fill_end)), rows ? 1u : 0u) << src;
  }
}

// T.sync_threads() is the group's barrier: the block's __syncthreads(), or
// a thread range's named barrier under `if tx < 128`; it orders global
// memory too, which no hazard of the tiles would.
TEST_F(CudaTileCodegen, SyncThreadsIsTheGroupsBarrier) {
  ir::TileBuilder b("exchange");
  ir::Buffer A = b.tensor_param("A", {Expr(256)}, DataType::float32());
  ir::Buffer G = b.tensor_param("G", {Expr(256)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {256});
  const Expr tx = b.thread_binding(0);
  b.store(G, {tx}, ir::load(A, {tx}));
  b.sync_threads(ir::Span{"k.py", 6, 9});
  b.store(A, {tx}, ir::load(G, {ir::floormod(tx + 1, Expr(256))}));
  b.begin_if(tx < Expr(128));
  b.store(G, {tx}, ir::load(A, {tx}));
  b.sync_threads();
  b.store(A, {tx}, ir::load(G, {ir::floormod(tx + 1, Expr(128))}));
  b.end_if();
  b.end_kernel();
  // The lines of the code alone: a statement's every line is preceded by
  // its #line (Note [Line directives]).
  std::string src;
  std::istringstream lines(compiles(b.finish()).generated.source);
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("#line ", 0) != 0) src += l + "\n";
  }
  const size_t range = src.find("if ((tx < 128)) {");
  ASSERT_NE(range, std::string::npos) << src;
  EXPECT_EQ(occurrences(src.substr(0, range), "// T.sync_threads()\n  __syncthreads();"), 1u) << src;
  EXPECT_NE(src.substr(range).find("// T.sync_threads()\n    tilejit::cuda::group_barrier<1, 128, false>();"),
            std::string::npos)
      << src;
  EXPECT_EQ(src.substr(range).find("__syncthreads"), std::string::npos) << src;
}

TEST_F(CudaTileCodegen, ATileOpUnderAnotherThreadConditionIsAnErrorAtTheIf) {
  ir::TileBuilder b("odd");
  ir::Buffer A = b.tensor_param("A", {Expr(64)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {128});
  const Expr tx = b.thread_binding(0);
  ir::Buffer S = b.alloc("S", {Expr(64)}, DataType::float32(), ir::Scope::kShared);
  b.begin_if(ir::eq(ir::floormod(tx, Expr(2)), Expr(1)), ir::Span{"k.py", 5, 5});
  b.copy(ir::whole(A), ir::whole(S), ir::Span{"k.py", 6, 9});
  b.end_if();
  b.end_kernel();
  const ir::PrimFunc f = b.finish();
  const std::string msg = error_message([&] { lower(f); }, ErrorKind::kValueError);
  EXPECT_EQ(msg,
            "k.py:5:5: if: T.copy (line 6) runs on the block's threads together, or on a "
            "contiguous range of them, but this if depends on the thread index and is not such a "
            "range: make it uniform, or a range of the thread index (tx < c, tx >= c, c <= tx < d)");
}

// Note [Reductions in a T.Parallel nest]: s[j] += X[i, j] over T.Parallel(32,
// 64) folds 32 iterations into each s[j]: an atomic add, not a racing store.
TEST_F(CudaTileCodegen, AReductionInAParallelNestIsAtomic) {
  ir::TileBuilder b("col_sums");
  ir::Buffer X = b.tensor_param("X", {Expr(32), Expr(64)}, DataType::float32());
  ir::Buffer S = b.tensor_param("S", {Expr(64)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {128});
  ir::Buffer s = b.alloc("s", {Expr(64)}, DataType::float32(), ir::Scope::kFragment);
  b.fill(ir::whole(s), Expr(0.0));
  const Expr i = b.begin_for("i", Expr(0), Expr(32), ir::ForKind::kParallel);
  const Expr j = b.begin_for("j", Expr(0), Expr(64), ir::ForKind::kParallel);
  b.store(s, {j}, ir::load(s, {j}) + ir::load(X, {i, j}));
  b.end_for();
  b.end_for();
  b.copy(ir::whole(s), ir::whole(S));
  b.end_kernel();
  const std::string src = compiles(b.finish()).generated.source;
  EXPECT_NE(src.find("tilejit::cuda::atomic_add(&s[j], X(i, j));"), std::string::npos) << src;
}

// T.vectorized and a thread's own ops (a fill of a local, a scalar atomic)
// run on the thread, not spread over the block; a while loop that touches
// no shared memory has no barrier.
TEST_F(CudaTileCodegen, AThreadsOwnCodeIsNotSpreadOverTheBlock) {
  ir::TileBuilder b("own");
  ir::Buffer A = b.tensor_param("A", {Expr(1024)}, DataType::float16());
  ir::Buffer C = b.tensor_param("C", {Expr(128)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {128});
  const Expr tx = b.thread_binding(0);
  ir::Buffer a = b.alloc("a", {Expr(8)}, DataType::float16(), ir::Scope::kLocal);
  ir::Buffer acc = b.alloc("acc", {Expr(1)}, DataType::float32(), ir::Scope::kLocal);
  b.fill(ir::whole(acc), Expr(0.0));
  const Expr v = b.begin_for("v", Expr(0), Expr(8), ir::ForKind::kVectorized);
  b.store(a, {v}, ir::load(A, {tx * 8 + v}));
  b.end_for();
  b.begin_while(ir::load(acc, {Expr(0)}) < Expr(4.0));
  b.store(acc, {Expr(0)}, ir::load(acc, {Expr(0)}) + ir::cast(DataType::float32(), ir::load(a, {Expr(0)})) + Expr(1.0));
  b.end_while();
  b.atomic_add(ir::corner(C, {tx}), ir::load(acc, {Expr(0)}));
  b.end_kernel();
  const std::string src = compiles(b.finish()).generated.source;
  EXPECT_EQ(src.find("tilejit_nthreads) {"), std::string::npos) << src;
  EXPECT_EQ(src.find("__syncthreads"), std::string::npos) << src;
  EXPECT_NE(src.find("fill<1, 1, 1>("), std::string::npos) << src;
  EXPECT_NE(src.find("tilejit::cuda::atomic_add(&C(int64_t(tx)), acc[0]);"), std::string::npos)
      << src;
}

// Note [NaN in max and min]: T.max / T.min of floats are tilejit::maximum /
// minimum, which keep a NaN (max.NaN), never fmaxf / fminf, which drop it.
TEST_F(CudaTileCodegen, ScalarMaxAndMinKeepNaN) {
  ir::TileBuilder b("running_max");
  ir::Buffer X = b.tensor_param("X", {Expr(64)}, DataType::float32());
  ir::Buffer Y = b.tensor_param("Y", {Expr(2)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {32});
  ir::Buffer m = b.alloc("m", {Expr(2)}, DataType::float32(), ir::Scope::kLocal);
  b.store(m, {Expr(0)}, ir::load(X, {Expr(0)}));
  b.store(m, {Expr(1)}, ir::load(X, {Expr(0)}));
  const Expr i = b.begin_for("i", Expr(1), Expr(63));
  b.store(m, {Expr(0)}, ir::max(ir::load(m, {Expr(0)}), ir::load(X, {i})));
  b.store(m, {Expr(1)}, ir::min(ir::load(m, {Expr(1)}), ir::load(X, {i})));
  b.end_for();
  b.copy(ir::whole(m), ir::whole(Y));
  b.end_kernel();
  const std::string src = compiles(b.finish()).generated.source;
  EXPECT_NE(src.find("tilejit::maximum<float>("), std::string::npos) << src;
  EXPECT_NE(src.find("tilejit::minimum<float>("), std::string::npos) << src;
  EXPECT_EQ(src.find("fmaxf"), std::string::npos) << src;
  EXPECT_EQ(src.find("fminf"), std::string::npos) << src;
}

}  // namespace
}  // namespace tilejit::cuda::testing
