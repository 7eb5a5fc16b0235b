// infer_layouts (backend/cuda/infer_layouts.h, Note [Layouts]): the IR the
// CUDA layout pass leaves, printed with each buffer's layout and pinned by
// golden files (TILEJIT_UPDATE_GOLDEN=1 rewrites them); and what the rest
// of the lowering reads from it. No GPU is needed.
#include <gtest/gtest.h>

#include <string>

#include "backend/cuda/fragments.h"
#include "backend/cuda/infer_layouts.h"
#include "common/test_util.h"
#include "tile/flash_attention.h"
#include "tile/flash_decoding.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"
#include "tilejit/transform/predicate.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

namespace ex = ::examples::tile;

// Kernel `index` of `f` as the CUDA lowering lays it out.
LaidOutKernel laid_out(const ir::PrimFunc& f, int threads, bool warpgroups, size_t index = 0) {
  const ir::PrimFunc g = transform::select_layouts(
      transform::predicate(transform::verify(transform::plan_workspaces(transform::verify(f)))),
      transform::LayoutTarget::kCuda);
  return infer_layouts(g, index, threads, {}, warpgroups);
}

void check_golden(const std::string& name, const LaidOutKernel& l) {
  tilejit::testing::check_golden("cuda", name, ir::print(l.func), "laid-out IR");
}

TEST(Layouts, FlashAttentionOnMmaSync) {
  ex::FlashAttentionConfig cfg;
  cfg.dtype = DataType::bfloat16();
  cfg.dim = 128;
  cfg.block_m = 128;
  cfg.block_n = 128;
  cfg.threads = 256;
  check_golden("layouts_flash_attention_mma.txt", laid_out(ex::flash_attention(cfg), 256, false));
}

TEST(Layouts, FlashAttentionOnWgmma) {
  ex::FlashAttentionConfig cfg;
  cfg.dtype = DataType::bfloat16();
  cfg.dim = 128;
  cfg.block_m = 128;
  cfg.block_n = 128;
  cfg.threads = 256;
  const LaidOutKernel l = laid_out(ex::flash_attention(cfg), 256, true);
  check_golden("layouts_flash_attention_wgmma.txt", l);
  // The scores and output are in the warpgroup layout, K and V swizzled.
  int swizzled = 0, interleaved = 0;
  for (const ir::Buffer& b : kernel_tiles(*l.kernel)) {
    swizzled += swizzle_of(b) != 0;
    if (const FragmentLayout* f = register_layout(b)) interleaved += f->il_rows;
  }
  EXPECT_GE(swizzled, 2);
  EXPECT_GE(interleaved, 3);
}

TEST(Layouts, GemmOnWgmma) {
  ex::GemmConfig cfg;
  cfg.in = DataType::bfloat16();
  cfg.block_k = 64;
  const LaidOutKernel l = laid_out(ex::gemm(cfg), 128, true);
  check_golden("layouts_gemm_wgmma.txt", l);
  for (const ir::Buffer& b : kernel_tiles(*l.kernel)) {
    if (b.scope() == ir::Scope::kShared) EXPECT_EQ(swizzle_of(b), 128) << b.name();
  }
}

// Note [Short accumulators] and Note [Padded gemm operands]: the A operands
// of one-row accumulators get 16 rows, and their rows are padded.
TEST(Layouts, DecodingPadsItsShortOperands) {
  ex::FlashDecodingConfig cfg;
  cfg.heads = 2;
  cfg.kv_heads = 2;
  cfg.dim = 128;
  cfg.block_n = 64;
  cfg.dtype = DataType::bfloat16();
  // Two kernels (split, combine), each laid out as tile_unit.cpp does.
  const LaidOutKernel split = laid_out(ex::flash_decoding(cfg), 128, false);
  const LaidOutKernel both = infer_layouts(split.func, 1, 128, {}, false);
  check_golden("layouts_flash_decoding.txt", both);
}

TEST(Layouts, NormsArePartitioned) {
  check_golden("layouts_rms_norm.txt", laid_out(ex::rms_norm(256), 128, false));
}

// Every use of a laid-out buffer carries its layout: the allocation's
// buffer and the tile ops' are one node.
TEST(Layouts, EveryUseCarriesTheLayout) {
  ex::GemmConfig cfg;
  cfg.in = DataType::bfloat16();
  const LaidOutKernel l = laid_out(ex::gemm(cfg), 128, true);
  struct Uses : ir::IRVisitor {
    int regions = 0, unset = 0;
    void visit_region(const ir::Region& r) override {
      if (r.buffer.scope() != ir::Scope::kGlobal) {
        ++regions;
        unset += !r.buffer->layout.defined() ||
                 r.buffer->layout.kind() == ir::Layout::Kind::kRowMajor;
      }
      ir::IRVisitor::visit_region(r);
    }
  } uses;
  uses.visit(l.kernel->body);
  EXPECT_GT(uses.regions, 4);
  EXPECT_EQ(uses.unset, 0);
}

}  // namespace
}  // namespace tilejit::cuda::testing
