// The user's guard that the static shapes prove leaves the generated C++
// (transform::predicate, Note [Folded guards]), and one they do not prove
// stays; both kernels compute the same.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu_test_util.h"
#include "common/guarded_program.h"
#include "tilejit/ir/tile_builder.h"

namespace tilejit::cpu::testing {
namespace {

using ir::Buffer;
using ir::Expr;

using tilejit::testing::guarded;

// The generated body of the blocks: what the entry runs inside its try.
std::string block_body(const std::string& src) {
  const size_t begin = src.find("    try {\n");
  const size_t end = src.find("    } catch (...) {", begin);
  if (begin == std::string::npos || end == std::string::npos) return "(no body in)\n" + src;
  return src.substr(begin, end - begin);
}

TEST(CpuFoldedGuards, AGuardTheShapesProveLeavesTheSource) {
  for (const int64_t n : {int64_t{1024}, int64_t{1000}}) {
    const ir::PrimFunc f = guarded(n);
    const std::string body = block_body(cpu_backend().generate_source({&f, {}}));
    if (n == 1024) {
      EXPECT_EQ(body.find("if ("), std::string::npos) << body;
    } else {  // the last block's tail is past the end: the guard stays
      EXPECT_NE(body.find("if ((((bx * 128) + i) < 1000)) {"), std::string::npos) << body;
    }
    std::unique_ptr<runtime::Module> m = build(f);
    std::vector<float> a(static_cast<size_t>(n)), out(static_cast<size_t>(n), -1.0f);
    for (int64_t k = 0; k < n; ++k) a[size_t(k)] = float(k);
    launch(*m, {a.data(), out.data()}, {}, {(n + 127) / 128, 1, 1});
    for (int64_t k = 0; k < n; ++k) ASSERT_EQ(out[size_t(k)], 2.0f * float(k)) << n << " " << k;
  }
}

}  // namespace
}  // namespace tilejit::cpu::testing
