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
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

namespace ex = ::examples::tile;

runtime::LoweringReport report_of(const ir::PrimFunc& f) {
  const ir::PrimFunc func = transform::plan_workspaces(transform::verify(f));
  const std::vector<std::string> symbols = symbols_of(func);
  runtime::SourceRequest request;
  request.func = &func;
  request.symbols = symbols;
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
  EXPECT_EQ(ops(r, "T.gemm")[0]->path, "mma");
  EXPECT_EQ(ops(r, "T.gemm")[0]->reason, "");
  const auto pipelined = ops(r, "T.Pipelined");
  ASSERT_EQ(pipelined.size(), 1u);
  EXPECT_EQ(pipelined[0]->path, "pipelined, 3 stages");
  // The tile loads go through cp.async; the accumulator's store through its
  // register layout.
  const auto copies = ops(r, "T.copy");
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(copies[0]->path, "cp_async");
  EXPECT_EQ(copies[1]->path, "cp_async");
  EXPECT_EQ(copies[2]->path, "registers");
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
  for (const runtime::Diagnostic* g : gemms) EXPECT_EQ(g->path, "mma") << g->reason;
  // Q, K and V through cp.async, the output through the registers' layout
  // or 16-byte chunks; nothing element by element.
  int async = 0;
  for (const runtime::Diagnostic* c : ops(r, "T.copy")) {
    EXPECT_NE(c->path, "elementwise") << c->reason;
    async += c->path == "cp_async";
  }
  EXPECT_GE(async, 3);
  const auto pipelined = ops(r, "T.Pipelined");
  ASSERT_EQ(pipelined.size(), 1u);
  EXPECT_EQ(pipelined[0]->path, "pipelined, 2 stages");
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

}  // namespace
}  // namespace tilejit::cuda::testing
