// The printed IR (ir::print) of the GEMMs, split-K, attention and decoding examples, against golden
// files in golden/ next to this file. After an intended change to the
// printer, the builder or an example, rewrite them with
//
//   TILEJIT_UPDATE_GOLDEN=1 ctest --test-dir build -R TileGoldenIr
//
// and review the diff.
#include <gtest/gtest.h>

#include <string>

#include "common/test_util.h"

#include "tile/flash_attention.h"
#include "tile/flash_decoding.h"
#include "tile/gated_delta_rule.h"
#include "tile/sparse_attention.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/printer.h"

namespace {

void check_golden(const std::string& name, const tilejit::PrimFunc& f) {
  tilejit::testing::check_golden("examples", name, tilejit::ir::print(f), "printed IR");
}

TEST(TileGoldenIr, Gemm) {
  examples::tile::GemmConfig cfg;
  cfg.in = tilejit::DataType::bfloat16();
  check_golden("gemm_bf16.txt", examples::tile::gemm(cfg));
}

// TileLang's autotuning GEMM: B transposed, C through shared memory, and the
// kernel's block rasterisation (T.use_swizzle) on its line.
TEST(TileGoldenIr, AutotuneGemm) {
  check_golden("gemm_autotune.txt", examples::tile::gemm_autotune({}));
}

TEST(TileGoldenIr, SplitKGemmWithAWorkspaceParameter) {
  check_golden("splitk_gemm.txt", examples::tile::splitk_gemm(4));
}

TEST(TileGoldenIr, SplitKGemmWithACounter) {
  check_golden("splitk_gemm_counted.txt", examples::tile::splitk_gemm_counted(4));
}

TEST(TileGoldenIr, CausalFlashAttention) {
  examples::tile::FlashAttentionConfig cfg;
  cfg.causal = true;
  cfg.dtype = tilejit::DataType::float16();
  check_golden("flash_attention_causal.txt", examples::tile::flash_attention(cfg));
}

TEST(TileGoldenIr, SparseAttention) {
  check_golden("sparse_attention.txt", examples::tile::sparse_attention_tile({}));
}

// Two kernels: the split and the combine, around the two workspaces.
TEST(TileGoldenIr, FlashDecoding) {
  check_golden("flash_decoding.txt", examples::tile::flash_decoding({}));
}

TEST(TileGoldenIr, GatedDeltaRule) {
  check_golden("gated_delta_rule.txt", examples::tile::gated_delta_rule({}));
}

}  // namespace
