// Note [Source post-processing] (tilejit/runtime/source_postproc.h): a hook
// registered for a target rewrites the source jit() compiles; the compile
// cache keys on what it returns; a hook that throws fails the jit.
#include <atomic>
#include <memory>
#include <string>

#include "common/test_util.h"
#include "runtime/fake_backend.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/runtime/source_postproc.h"

namespace tilejit {
namespace {

using testing::FakeBackend;

FakeBackend& postproc_backend() {
  static FakeBackend* fake = [] {
    auto b = std::make_unique<FakeBackend>("postproc_fake");
    FakeBackend* raw = b.get();
    runtime::register_backend(std::move(b));
    return raw;
  }();
  return *fake;
}

Kernel jit_on_fake(const std::string& name) {
  JitOptions options;
  options.target = "postproc_fake";
  options.disk_cache = false;
  return jit(prim_func(name).body("postproc_fake", "").build(), options);
}

// Removes the hook whatever the test does.
struct Unhook {
  ~Unhook() { runtime::set_source_postproc("postproc_fake", {}); }
};

TEST(SourcePostproc, TheHookRewritesTheSourceThatIsCompiled) {
  FakeBackend& be = postproc_backend();
  Unhook unhook;
  std::atomic<int> calls{0};
  std::string seen_target;
  runtime::set_source_postproc("postproc_fake", [&](const std::string& src, const std::string& t) {
    ++calls;
    seen_target = t;
    return src + "// post-processed\n";
  });
  const int before = be.compile_calls.load();
  const Kernel k = jit_on_fake("postproc_a");
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(seen_target, "postproc_fake");
  EXPECT_EQ(k.source(), "// fake source\n// post-processed\n");
  EXPECT_EQ(be.compile_calls.load(), before + 1);
  // The cache keys on the returned source: without the hook the same
  // function compiles again, and with another hook again.
  runtime::set_source_postproc("postproc_fake", {});
  EXPECT_EQ(jit_on_fake("postproc_a").source(), "// fake source\n");
  EXPECT_EQ(be.compile_calls.load(), before + 2);
  runtime::set_source_postproc("postproc_fake", [](const std::string& src, const std::string&) {
    return src + "// another\n";
  });
  EXPECT_EQ(jit_on_fake("postproc_a").source(), "// fake source\n// another\n");
  EXPECT_EQ(be.compile_calls.load(), before + 3);
  // Another target's kernels do not see it.
  EXPECT_FALSE(runtime::source_postproc("cpu"));
}

TEST(SourcePostproc, AHookThatThrowsFailsTheJitAndCachesNothing) {
  FakeBackend& be = postproc_backend();
  Unhook unhook;
  runtime::set_source_postproc("postproc_fake", [](const std::string&, const std::string&) -> std::string {
    TILEJIT_THROW(kValueError) << "the callback refuses";
  });
  const int before = be.compile_calls.load();
  EXPECT_EQ(testing::error_message([] { jit_on_fake("postproc_b"); }, ErrorKind::kValueError),
            "the callback refuses");
  EXPECT_EQ(be.compile_calls.load(), before);
  // A hook that makes the source fail to compile fails the jit with the
  // compiler's error.
  runtime::set_source_postproc("postproc_fake", [](const std::string& src, const std::string&) {
    return src + "#error\n";
  });
  EXPECT_NE(testing::error_message([] { jit_on_fake("postproc_b"); }, ErrorKind::kCompileError)
                .find("#error in source"),
            std::string::npos);
}

}  // namespace
}  // namespace tilejit
