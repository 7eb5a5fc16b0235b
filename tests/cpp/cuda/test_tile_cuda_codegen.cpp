// The CUDA lowering of every tile example, compiled by NVRTC for sm_90a:
// no GPU is needed, so CI catches a codegen regression before any device
// run. Also the shape of what the lowering plans (shared memory, launches).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "tile/flash_attention.h"
#include "tile/flash_decoding.h"
#include "tile/gated_delta_rule.h"
#include "tile/sparse_attention.h"
#include "tile/tile_kernels.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

namespace ex = ::examples::tile;

struct Lowered {
  ir::PrimFunc func;  // after plan_workspaces, as jit() hands it on
  std::vector<std::string> symbols;
  runtime::GeneratedSource generated;
};

Lowered lower(const ir::PrimFunc& f) {
  Lowered out{transform::plan_workspaces(transform::verify(f)), {}, {}};
  out.symbols = symbols_of(out.func);
  runtime::SourceRequest request{&out.func, out.symbols};
  out.generated = cuda_backend().generate(request);
  return out;
}

// Generates and compiles `f`; returns the lowering for further checks.
Lowered compiles(const ir::PrimFunc& f) {
  Lowered l = lower(f);
  runtime::Backend& be = cuda_backend();
  const std::string binary = be.compile(l.generated.source, l.func.name, {}, Device::cuda(0));
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

TEST_F(CudaTileCodegen, ElementwiseAndNormalisations) {
  compiles(ex::elementwise_add(DataType::float32()));
  compiles(ex::elementwise_add_1d());
  compiles(ex::rms_norm(256));
  compiles(ex::softmax(256));
}

TEST_F(CudaTileCodegen, SplitKInBothWorkspaceForms) {
  compiles(ex::splitk_gemm(4, false));
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

TEST_F(CudaTileCodegen, FlashDecodingIsTwoEntries) {
  const Lowered l = compiles(ex::flash_decoding({}));
  ASSERT_EQ(l.generated.abi.launches.size(), 2u);
  EXPECT_EQ(l.generated.abi.launches[0].entry, "tilejit_kernel");
  EXPECT_EQ(l.generated.abi.launches[1].entry, "tilejit_kernel_1");
  EXPECT_NE(l.generated.source.find("tilejit_kernel_1("), std::string::npos);
}

TEST_F(CudaTileCodegen, SparseAttentionAndGatedDeltaRule) {
  compiles(ex::sparse_attention_tile({}));
  compiles(ex::gated_delta_rule({}));
}

}  // namespace
}  // namespace tilejit::cuda::testing
