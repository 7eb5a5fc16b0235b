// Kernel::diagnostics(): what the target's lowering reported when it
// generated the source (runtime/diagnostic.h), kept in order on the Kernel.
#include <memory>

#include "common/test_util.h"
#include "runtime/fake_backend.h"
#include "tilejit/runtime/backend.h"

namespace tilejit {
namespace {

using testing::FakeBackend;

// A backend whose lowering reports two diagnostics, one without a span.
// Registered once for the process (--gtest_repeat).
FakeBackend& reporting_backend() {
  static FakeBackend* fake = [] {
    auto b = std::make_unique<FakeBackend>("diag_fake");
    b->diagnostics = {
        {"T.copy", ir::Span{"k.py", 12, 5}, "not pipelined", "its address reads 'blk'"},
        {"T.gemm", ir::Span{}, "on the CUDA cores", "float32 operands"}};
    FakeBackend* raw = b.get();
    runtime::register_backend(std::move(b));
    return raw;
  }();
  return *fake;
}

TEST(KernelDiagnostics, TheKernelKeepsWhatTheLoweringReported) {
  reporting_backend();
  JitOptions options;
  options.target = "diag_fake";
  options.disk_cache = false;
  const Kernel k = jit(prim_func("gather").body("diag_fake", "").build(), options);
  ASSERT_EQ(k.diagnostics().size(), 2u);
  const runtime::Diagnostic& copy = k.diagnostics()[0];
  EXPECT_EQ(copy.op, "T.copy");
  EXPECT_EQ(copy.span.str(), "k.py:12:5");
  EXPECT_EQ(copy.path, "not pipelined");
  EXPECT_EQ(copy.reason, "its address reads 'blk'");
  // The library's error prefix: the span, or the kernel's name without one.
  EXPECT_EQ(copy.message(k.name()), "k.py:12:5: T.copy: not pipelined: its address reads 'blk'");
  EXPECT_EQ(k.diagnostics()[1].message(k.name()),
            "gather: T.gemm: on the CUDA cores: float32 operands");
}

TEST(KernelDiagnostics, AKernelWhoseLoweringReportsNothingHasNone) {
  const auto f = prim_func("add").body("cpu", "").build();
  EXPECT_TRUE(jit(f, testing::cpu_options({})).diagnostics().empty());
}

}  // namespace
}  // namespace tilejit
