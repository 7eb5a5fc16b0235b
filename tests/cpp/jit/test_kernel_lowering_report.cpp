// Kernel::lowering_report(): what the target's lowering reported about each
// buffer and op when it generated the source (runtime/lowering_report.h),
// kept on the Kernel, a kernel whose binary came from the disk cache
// included.
#include <memory>

#include "common/test_util.h"
#include "runtime/fake_backend.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/runtime/compile_cache.h"

namespace tilejit {
namespace {

using testing::FakeBackend;

// A backend whose lowering reports one buffer and one op. Registered once
// for the process (--gtest_repeat).
FakeBackend& reporting_backend() {
  static FakeBackend* fake = [] {
    auto b = std::make_unique<FakeBackend>("report_fake");
    runtime::BufferRecord acc;
    acc.name = "C_local";
    acc.scope = "fragment";
    acc.placement = runtime::Placement::kShared;
    acc.bytes = 4096;
    acc.span = ir::Span{"k.py", 7, 9};
    acc.forced_by = {"T.reduce_max", ir::Span{"k.py", 15, 5}, "shared", "dim=0"};
    b->report.buffers = {acc};
    b->report.ops = {{"T.gemm", ir::Span{"k.py", 12, 9}, "simt", "A and B are float32"}};
    FakeBackend* raw = b.get();
    runtime::register_backend(std::move(b));
    return raw;
  }();
  return *fake;
}

void expect_report(const Kernel& k) {
  const runtime::LoweringReport& r = k.lowering_report();
  ASSERT_EQ(r.buffers.size(), 1u);
  EXPECT_EQ(r.buffers[0].name, "C_local");
  EXPECT_STREQ(runtime::placement_name(r.buffers[0].placement), "shared");
  EXPECT_EQ(r.buffers[0].bytes, 4096);
  EXPECT_EQ(r.buffers[0].span.str(), "k.py:7:9");
  EXPECT_EQ(r.buffers[0].forced_by.message(k.name()), "k.py:15:5: T.reduce_max: shared: dim=0");
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].message(k.name()), "k.py:12:9: T.gemm: simt: A and B are float32");
}

TEST(KernelLoweringReport, TheKernelKeepsWhatTheLoweringReported) {
  reporting_backend();
  JitOptions options;
  options.target = "report_fake";
  options.disk_cache = false;
  expect_report(jit(prim_func("gemm").body("report_fake", "").build(), options));
}

// The report is made by generate(), which runs on every jit(): a binary
// from the disk cache comes with it too.
TEST(KernelLoweringReport, AKernelFromTheDiskCacheHasItsReport) {
  reporting_backend();
  runtime::CompileCache& cache = runtime::CompileCache::global();
  testing::TempDir tmp;
  cache.set_disk_dir(tmp.path());
  cache.clear_memory();
  JitOptions options;
  options.target = "report_fake";
  const auto f = prim_func("gemm_disk").body("report_fake", "").build();
  jit(f, options);
  cache.clear_memory();
  const uint64_t disk_hits = cache.stats().disk_hits;
  const Kernel k = jit(f, options);
  EXPECT_EQ(cache.stats().disk_hits, disk_hits + 1);
  expect_report(k);
  cache.clear_memory();
  cache.set_disk_dir("");
}

TEST(KernelLoweringReport, ASourceBodyHasNone) {
  const auto f = prim_func("add").body("cpu", "").build();
  const Kernel k = jit(f, testing::cpu_options({}));
  EXPECT_TRUE(k.lowering_report().buffers.empty());
  EXPECT_TRUE(k.lowering_report().ops.empty());
}

}  // namespace
}  // namespace tilejit
