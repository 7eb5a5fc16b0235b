// Note [Staged epilogues] (src/backend/cuda/staged_epilogue.h): a
// warp-specialised GEMM's copy of its accumulator to a tensor goes through
// a shared tile the compiler allocates, in the bytes of the loop's stages,
// and a TMA store. The kernel is the one the program would get had it staged
// the tile itself (compared line by line, comments aside); the report has the
// tile and both copies at the copy's line; off, or for a float32 tensor, the
// copy stays as written, and for the tensor the report says why.
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

struct Epilogue {
  DataType c_dtype = DataType::bfloat16();
  bool staged_by_program = false;  // T.copy(C_l, C_l_staged); T.copy(C_l_staged, C[...])
};

// TileLang's README GEMM (128 x 128 x 64 tiles, 3 stages, 128 threads),
// 2048 x 2048 x 256.
ir::PrimFunc gemm(const Epilogue& e) {
  ir::TileBuilder b("staged_gemm");
  const DataType bf = DataType::bfloat16();
  const Buffer A = b.tensor_param("A", {Expr(2048), Expr(256)}, bf);
  const Buffer B = b.tensor_param("B", {Expr(256), Expr(2048)}, bf);
  const Buffer C = b.tensor_param("C", {Expr(2048), Expr(2048)}, e.c_dtype);
  const auto blk = b.begin_kernel({Expr(16), Expr(16)}, {128});
  const Expr bx = blk[0], by = blk[1];
  const Buffer staged = e.staged_by_program
                            ? b.alloc("C_l_staged", {128, 128}, e.c_dtype, Scope::kShared)
                            : Buffer();
  const Buffer A_s = b.alloc("A_s", {128, 64}, bf, Scope::kShared);
  const Buffer B_s = b.alloc("B_s", {64, 128}, bf, Scope::kShared);
  const Buffer C_l = b.alloc("C_l", {128, 128}, DataType::float32(), Scope::kFragment);
  b.fill(ir::whole(C_l), 0);
  const Expr ko = b.begin_for("ko", 0, Expr(4), ForKind::kPipelined, 3);
  b.copy(ir::corner(A, {by * 128, ko * 64}), ir::whole(A_s));
  b.copy(ir::corner(B, {ko * 64, bx * 128}), ir::whole(B_s));
  b.gemm(ir::whole(A_s), ir::whole(B_s), ir::whole(C_l));
  b.end_for();
  if (e.staged_by_program) {
    b.copy(ir::whole(C_l), ir::whole(staged));
    b.copy(ir::whole(staged), ir::corner(C, {by * 128, bx * 128}));
  } else {
    b.copy(ir::whole(C_l), ir::corner(C, {by * 128, bx * 128}));
  }
  b.end_kernel();
  return b.finish();
}

// The T.copy entries' paths, in program order.
std::vector<std::string> copies(const Generated& g) {
  std::vector<std::string> out;
  for (const runtime::Diagnostic& r : g.generated.report.ops) {
    if (r.op == "T.copy") out.push_back(r.path);
  }
  return out;
}

// The last T.copy's reason (the accumulator's store).
std::string store_reason(const Generated& g) {
  std::string out;
  for (const runtime::Diagnostic& r : g.generated.report.ops) {
    if (r.op == "T.copy") out = r.reason;
  }
  return out;
}

Generated lower(const ir::PrimFunc& f, bool staged = true) {
  return generate(f, [&](runtime::SourceRequest& r) { r.staged_epilogue = staged; });
}

class StagedEpilogue : public ::testing::Test {
 protected:
  void SetUp() override { TILEJIT_SKIP_WITHOUT_NVRTC(); }
};

TEST_F(StagedEpilogue, TheAccumulatorGoesThroughASharedTileAndTma) {
  const Generated l = lower(gemm({}));
  Epilogue by_program;
  by_program.staged_by_program = true;
  EXPECT_EQ(l.code(), lower(gemm(by_program)).code());
  EXPECT_TRUE(l.has("acc_store_shared<")) << l.generated.source;
  EXPECT_TRUE(l.has("tilejit::cuda::tma_store_box(&tilejit_args.tmaps[")) << l.generated.source;
  EXPECT_EQ(copies(l), (std::vector<std::string>{"tma_load_multicast", "tma_load", "registers",
                                                  "tma_store"}));
  // The tile is the compiler's, at the copy's line, in the stages' bytes.
  const runtime::Diagnostic* copy = nullptr;
  for (const runtime::Diagnostic& r : l.generated.report.ops) {
    if (r.op == "T.copy" && r.path == "tma_store") copy = &r;
  }
  ASSERT_NE(copy, nullptr);
  bool tile = false;
  for (const runtime::BufferRecord& b : l.generated.report.buffers) {
    if (b.name != "C_l_staged") continue;
    tile = true;
    EXPECT_EQ(b.placement, runtime::Placement::kShared);
    EXPECT_EQ(b.bytes, 128 * 128 * 2);
    EXPECT_EQ(b.span.line, copy->span.line);
  }
  EXPECT_TRUE(tile);
  const Generated off = lower(gemm({}), /*staged=*/false);
  EXPECT_EQ(l.generated.abi.launches[0].smem_bytes, off.generated.abi.launches[0].smem_bytes);
  EXPECT_TRUE(l.compiles());
}

TEST_F(StagedEpilogue, OffOrForAFloat32TensorTheCopyStaysAsWritten) {
  const std::vector<std::string> direct{"tma_load_multicast", "tma_load", "registers"};
  const Generated off = lower(gemm({}), /*staged=*/false);
  EXPECT_EQ(copies(off), direct);
  EXPECT_FALSE(off.has("_staged")) << off.generated.source;
  EXPECT_EQ(store_reason(off), "");
  // A float32 tile would not be swizzled (Note [Swizzled store tiles]).
  Epilogue f32;
  f32.c_dtype = DataType::float32();
  const Generated l = lower(gemm(f32));
  EXPECT_EQ(copies(l), direct);
  EXPECT_FALSE(l.has("_staged")) << l.generated.source;
  EXPECT_EQ(store_reason(l),
            "not staged: a float32 tensor (Note [Staged epilogues] stages stores to bf16 and fp16 "
            "ones)");
  EXPECT_EQ(store_reason(lower(gemm({}))), "");  // staged: nothing to say
}

}  // namespace
}  // namespace tilejit::cuda::testing
