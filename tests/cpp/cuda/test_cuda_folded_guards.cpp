// The user's guard that the static shapes prove leaves the generated CUDA
// too (transform::predicate runs for both targets, Note [Folded guards]);
// one they do not prove stays. Compiled by NVRTC, no GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "common/guarded_program.h"
#include "tilejit/ir/tile_builder.h"

namespace tilejit::cuda::testing {
namespace {

using ir::Buffer;
using ir::Expr;

using tilejit::testing::guarded;

TEST(CudaFoldedGuards, AGuardTheShapesProveLeavesTheSource) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  for (const int64_t n : {int64_t{1024}, int64_t{1000}}) {
    const ir::PrimFunc f = guarded(n);
    const std::string src = cuda_backend().generate_source({&f, {}});
    if (n == 1024) {
      EXPECT_EQ(src.find("if ("), std::string::npos) << src;
    } else {  // the last block's tail is past the end: the guard stays
      EXPECT_NE(src.find("if ((((bx * 128) + i) < 1000)) {"), std::string::npos) << src;
    }
    EXPECT_FALSE(compile(f, {}).empty());
  }
}

}  // namespace
}  // namespace tilejit::cuda::testing
