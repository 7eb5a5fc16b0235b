// The catalogue of bad declarations and jit() calls (issue 5), beyond
// tests/cpp/jit/test_call_plan.cpp and test_legalize.cpp: errors that come
// through jit() compile nothing and lease nothing, a body that does not
// compile gives the log and its numbered lines, and after each one a good
// kernel still builds and runs.
#include <regex>
#include <string>
#include <vector>

#include "reliability/reliability_support.h"

namespace tilejit::reliability {
namespace {

// A good kernel, built once, called after every failure: Out = X * X.
const Kernel& square() {
  static const Kernel k = [] {
    const Expr n = symbolic("n");
    return jit(prim_func("square")
                   .tensor("X", {n}, DataType::float32())
                   .tensor("Out", {n}, DataType::float32())
                   .tensor("W", {n}, DataType::float32())
                   .grid({n})
                   .body("cpu", "W(bx) = X(bx); Out(bx) = W(bx) * X(bx);")
                   .build(),
               cpu_options({1}, {2}));
  }();
  return k;
}

void good_call() {
  Tensor x = iota({5}, 1.f);
  Tensor out = square()(x);
  ASSERT_EQ(out.shape_str(), "[5]");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out.data_as<float>()[i], float((i + 1) * (i + 1)));
}

// Errors at jit() time are raised before anything is compiled.
template <typename Fn>
void expect_jit_rejected(Fn&& fn, ErrorKind kind, const std::string& message) {
  square();  // built before the counters are read
  const auto before = runtime::CompileCache::global().stats();
  const auto pool_before = cpu_pool().stats();
  expect_rejected(fn, kind, message, [] {});
  const auto after = runtime::CompileCache::global().stats();
  EXPECT_EQ(after.compiles, before.compiles) << message;
  EXPECT_EQ(after.loads, before.loads) << message;
  EXPECT_EQ(cpu_pool().stats().leases, pool_before.leases) << message;
  good_call();
}

const Expr n = symbolic("n");

ir::PrimFuncBuilder two_tensors(const std::string& name) {
  return prim_func(name)
      .tensor("X", {n}, DataType::float32())
      .scalar("alpha", DataType::float32())
      .tensor("Y", {n}, DataType::float32())
      .body("cpu", "");
}

TEST(BadJit, ScalarNamedAsOutput) {
  const auto f = two_tensors("k").build();
  expect_jit_rejected([&] { jit(f, cpu_options({1})); }, ErrorKind::kValueError,
                      "k: out_idx[0] = 1 names scalar parameter #1 'alpha'; only tensors can be "
                      "outputs");
}

TEST(BadJit, IndexOutOfRangeAsAnInt) {
  const auto f = two_tensors("k").build();
  expect_jit_rejected([&] { jit(f, cpu_options(IndexSpec(10))); }, ErrorKind::kValueError,
                      "k: out_idx[0] = 10 is out of range for a signature of 3 parameters (valid: "
                      "-3 to 2)");
}

TEST(BadJit, OverlapThroughNegativeIndex) {
  const auto f = two_tensors("k").build();
  expect_jit_rejected([&] { jit(f, cpu_options({2}, {-1})); }, ErrorKind::kValueError,
                      "k: parameter #2 'Y' is named by both out_idx and workspace_idx");
}

TEST(BadJit, UnboundSymbolInTheGrid) {
  const Expr t = symbolic("t");
  const auto f = two_tensors("k").grid({ceildiv(t, 8)}).build();
  expect_jit_rejected([&] { jit(f, cpu_options({2})); }, ErrorKind::kValueError,
                      "k: symbol 't' in the grid (extent 0: ceildiv(t, 8)) is not bound by any "
                      "input; give an input a dimension 't' (or an affine form of it such as 2 * "
                      "t) or add a scalar parameter named 't'");
}

TEST(BadJit, UnboundSymbolInAWorkspace) {
  const Expr t = symbolic("t");
  const auto f = two_tensors("k").tensor("W", {n, t}, DataType::int32()).build();
  expect_jit_rejected([&] { jit(f, cpu_options({2}, {3})); }, ErrorKind::kValueError,
                      "k: symbol 't' in the shape of workspace 'W' (parameter #3, dimension 1: t) "
                      "is not bound by any input; give an input a dimension 't' (or an affine "
                      "form of it such as 2 * t) or add a scalar parameter named 't'");
}

TEST(BadJit, SymbolBoundOnlyByOutputs) {
  // Every tensor that carries the symbol is an output: nothing the caller
  // passes can bind it.
  const auto f = prim_func("k")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Y", {n}, DataType::float32())
                     .body("cpu", "")
                     .build();
  expect_jit_rejected([&] { jit(f, cpu_options({0, 1})); }, ErrorKind::kValueError,
                      "k: symbol 'n' in the shape of output 'X' (parameter #0, dimension 0: n) is "
                      "not bound by any input; give an input a dimension 'n' (or an affine form "
                      "of it such as 2 * n) or add a scalar parameter named 'n'");
}

TEST(BadJit, UnboundSymbolInDynamicSharedMemory) {
  const Expr t = symbolic("t");
  const auto f = two_tensors("k").dynamic_smem(t * 4).build();
  expect_jit_rejected([&] { jit(f, cpu_options({2})); }, ErrorKind::kValueError,
                      "k: symbol 't' in the dynamic shared memory size (bytes: 4 * t) is not "
                      "bound by any input; give an input a dimension 't' (or an affine form of it "
                      "such as 2 * t) or add a scalar parameter named 't'");
}

TEST(BadJit, NoBodyForTheTarget) {
  const auto f = prim_func("gpu_only")
                     .tensor("X", {n}, DataType::float32())
                     .body("cuda", "X[0] = 1;")
                     .build();
  expect_jit_rejected([&] { jit(f, cpu_options({})); }, ErrorKind::kValueError,
                      "gpu_only: no body for target 'cpu' (bodies given: cuda)");
}

TEST(BadJit, UnknownTarget) {
  const auto f = two_tensors("k").build();
  JitOptions o = cpu_options({2});
  o.target = "tpu";
  std::string targets;
  for (const std::string& t : runtime::registered_targets()) {
    targets += (targets.empty() ? "" : ", ") + t;
  }
  expect_jit_rejected([&] { jit(f, o); }, ErrorKind::kValueError,
                      "unknown target 'tpu'; registered targets: " + targets);
}

TEST(BadJit, TooManyParameters) {
  ir::PrimFuncBuilder b = prim_func("wide");
  for (int i = 0; i < 65; ++i) b.tensor("p" + std::to_string(i), {4}, DataType::float32());
  const auto f = b.body("cpu", "").build();
  expect_jit_rejected([&] { jit(f, cpu_options({})); }, ErrorKind::kValueError,
                      "wide: 65 parameters; at most 64 are supported");
}

TEST(BadJit, UndefinedKernel) {
  const Kernel k;
  expect_jit_rejected([&] { k.call({}); }, ErrorKind::kValueError, "call of an undefined Kernel");
  expect_jit_rejected([&] { k.workspace_bytes({}); }, ErrorKind::kValueError,
                      "workspace_bytes of an undefined Kernel");
}

// ---- declarations (build()) ---------------------------------------------------

TEST(BadDeclaration, RankAboveTheMaximum) {
  expect_jit_rejected(
      [] { prim_func("k").tensor("X", {1, 2, 3, 4, 5, 6, 7, 8, 9}, DataType::float32()).build(); },
      ErrorKind::kValueError, "k: parameter #0 'X' has rank 9; the maximum is 8");
}

TEST(BadDeclaration, ReservedSymbolName) {
  expect_jit_rejected(
      [] { prim_func("k").tensor("X", {symbolic("bx")}, DataType::float32()).build(); },
      ErrorKind::kValueError, "k: symbol name 'bx' is reserved (a name the generated wrapper "
                      "declares)");
}

TEST(BadDeclaration, SymbolNameNotAnIdentifier) {
  expect_jit_rejected([] { symbolic("2n"); }, ErrorKind::kValueError,
                      "symbol name '2n' is not a C identifier");
}

TEST(BadDeclaration, ConstantZeroDivisor) {
  expect_jit_rejected([] { floordiv(n, 0); }, ErrorKind::kValueError,
                      "division by constant zero in n // 0");
}

TEST(BadDeclaration, ThreadsOutOfRange) {
  expect_jit_rejected([] { two_tensors("k").threads(0).build(); }, ErrorKind::kValueError,
                      "k: threads = 0; expected 1 or more");
}

TEST(BadDeclaration, NegativeGridConstant) {
  expect_jit_rejected([] { two_tensors("k").grid({4, -1}).build(); }, ErrorKind::kValueError,
                      "k: grid extent 1 is -1; extents must be positive");
}

TEST(BadDeclaration, UnsupportedTensorDtype) {
  expect_jit_rejected(
      [] { prim_func("k").tensor("X", {n}, DataType(DataType::kUInt, 4)).build(); },
      ErrorKind::kTypeError, "k: parameter #0 'X' has unsupported dtype uint4");
}

// ---- a body that does not compile -------------------------------------------------

TEST(BadBody, CompileErrorCarriesTheCommandTheLogAndNumberedLines) {
  // A token unique to this run: no cache (memory or disk) can hold it.
  const std::string body = "float x = X(bx); // " + unique_token() +
                           "\nfloat y = x +;\nOut(bx) = y;\n";
  const auto f = prim_func("bad_body")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Out", {n}, DataType::float32())
                     .grid({n})
                     .body("cpu", body)
                     .build();
  JitOptions o = cpu_options({1});
  o.compile.flags = {"-O0"};
  square();  // good_call()'s kernel is built before the counters are read: on a cold
             // disk cache it compiles, which is not the failed body's compile
  const auto before = runtime::CompileCache::global().stats();
  const std::string msg = error_message([&] { jit(f, o); }, ErrorKind::kCompileError);
  EXPECT_EQ(cpu_pool().stats().bytes_in_use, 0u);
  good_call();
  EXPECT_EQ(msg.rfind("bad_body: the CPU compiler failed (exit code 1)\ncommand: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(" -O0 -std=c++17 -fPIC -shared -I"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad_body_body:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("error"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\nsource around line 2 of bad_body_body:\n"
                     "   1 | float x = X(bx); // "),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("\n>  2 | float y = x +;\n   3 | Out(bx) = y;"), std::string::npos) << msg;
  // The error thrown through jit() is a CompileError with the whole source.
  try {
    jit(f, o);
    ADD_FAILURE() << "no CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.source().find("#line 1 \"bad_body_body\"\n" + body + "#line 4 \"bad_body_body\"\n"),
              std::string::npos)
        << e.source();
  }
  // A failed compile is not cached: trying again compiles again (and fails
  // the same way).
  EXPECT_EQ(runtime::CompileCache::global().stats().compiles, before.compiles);
  // (Each compile works in a fresh temporary directory, named in the message.)
  const std::regex tmp_dir("/tilejit-cpu-[A-Za-z0-9]{6}/");
  const std::string again = error_message([&] { jit(f, o); }, ErrorKind::kCompileError);
  EXPECT_EQ(std::regex_replace(again, tmp_dir, "/T/"), std::regex_replace(msg, tmp_dir, "/T/"));
  // The fixed body compiles and runs.
  const auto fixed = prim_func("bad_body")
                         .tensor("X", {n}, DataType::float32())
                         .tensor("Out", {n}, DataType::float32())
                         .grid({n})
                         .body("cpu", "float x = X(bx);\nfloat y = x + 1;\nOut(bx) = y;\n")
                         .build();
  Tensor x = iota({3});
  Tensor out = jit(fixed, o)(x);
  EXPECT_EQ(out.data_as<float>()[2], 3.f);
}

}  // namespace
}  // namespace tilejit::reliability
