// A thread's run of consecutive elements of a T.alloc_global workspace moves
// as aligned vectors (Note [Vectorised runs]; emit_runs.cpp's run_args): a
// workspace lies at a 256-byte offset of its arena, which the pool and the
// checked caller's arena guarantee. A tensor parameter's start is the
// caller's, so its runs keep the run-time alignment test. Compiled by NVRTC
// for sm_90a, no GPU needed.
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
using ir::Range;
using ir::Scope;

// Kernel 0 adds X's rows into a workspace W; kernel 1 adds W and X into Y,
// each row a fragment of 512 over 128 threads (4 consecutive columns each).
ir::PrimFunc through_a_workspace() {
  ir::TileBuilder b("through_a_workspace");
  const DataType f32 = DataType::float32();
  const Expr M = ir::symbolic("M");
  const Buffer X = b.tensor_param("X", {M, Expr(512)}, f32);
  const Buffer Y = b.tensor_param("Y", {M, Expr(512)}, f32);
  const Buffer W = b.alloc_global("W", {M, Expr(512)}, f32);
  auto row = [&](const Buffer& t, const Expr& r) {
    return ir::region(t, {Range{r, Expr(1)}, Range{Expr(0), Expr(512)}});
  };
  for (int kernel = 0; kernel < 2; ++kernel) {
    const Expr bx = b.begin_kernel({M}, {128})[0];
    const Buffer f = b.alloc("f", {1, 512}, f32, Scope::kFragment);
    const Expr i = b.begin_for("i", 0, 1, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, 512, ForKind::kParallel);
    const Expr x = ir::load(X, {bx, j});
    b.store(f, {i, j}, kernel == 0 ? x + x : ir::load(W, {bx, j}) + x);
    b.end_for();
    b.end_for();
    b.copy(ir::whole(f), row(kernel == 0 ? W : Y, bx));
    b.end_kernel();
  }
  return b.finish();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class WorkspaceRuns : public ::testing::Test {
 protected:
  void SetUp() override { TILEJIT_SKIP_WITHOUT_NVRTC(); }
};

TEST_F(WorkspaceRuns, AWorkspacesRunsAreAlignedAndATensorsAreTested) {
  const std::string src = compiled_unit(through_a_workspace());
  EXPECT_EQ(count(src, "load_run<4, true>(W_run, &W("), 1u) << src;
  EXPECT_EQ(count(src, "load_run<4>(X_run"), 2u) << src;
}

}  // namespace
}  // namespace tilejit::cuda::testing
