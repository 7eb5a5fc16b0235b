// The CPU backend's stages one by one: registration, memory, generated
// source (against golden files), compile errors, toolchain keys and loading.
// Launching is in test_cpu_launch.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "backend/common/device_files.h"
#include "backend/cpu_test_util.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cpu::testing {
namespace {

using ir::Expr;


TEST(CpuBackend, IsRegistered) {
  runtime::Backend& be = cpu_backend();
  EXPECT_EQ(be.target(), "cpu");
  EXPECT_EQ(be.device_type(), DeviceType::kCPU);
  EXPECT_TRUE(be.available());
  EXPECT_EQ(runtime::find_backend(DeviceType::kCPU), &be);
  EXPECT_EQ(be.current_stream(Device::cpu()), nullptr);
  EXPECT_EQ(be.record_event(Device::cpu(), nullptr), nullptr);
}

TEST(CpuBackend, DefaultDeviceRankAndValidation) {
  runtime::Backend& be = cpu_backend();
  EXPECT_EQ(be.default_device(), Device::cpu());
  const ir::PrimFunc both = ir::prim_func("both").body("cpu", "").body("cuda", "").build();
  const ir::PrimFunc gpu_only = ir::prim_func("gpu_only").body("cuda", "").build();
  EXPECT_EQ(be.auto_rank(both), 0);
  EXPECT_EQ(be.auto_rank(gpu_only), -1);
  // A block runs on one thread: the CPU limits no thread count.
  const ir::PrimFunc wide = ir::prim_func("wide").threads(1 << 20).body("cpu", "").build();
  EXPECT_NO_THROW(be.validate(wide));
}

TEST(CpuBackend, AllocatorAlignsAndFrees) {
  runtime::Allocator& a = cpu_backend().allocator();
  for (size_t bytes : {size_t(0), size_t(1), size_t(255), size_t(256), size_t(1000)}) {
    void* p = a.allocate(bytes, Device::cpu(), nullptr);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << bytes;
    std::memset(p, 0xab, bytes);  // the sanitizers check the whole size is usable
    a.deallocate(p, bytes, Device::cpu(), nullptr);
  }
  EXPECT_EQ(a.allocate(SIZE_MAX - 16, Device::cpu(), nullptr), nullptr);  // overflows rounding
  EXPECT_EQ(error_message([&] { a.allocate(16, Device::cuda(0), nullptr); },
                          ErrorKind::kValueError),
            "cpu backend: allocate on device 'cuda:0', which is not a CPU");
}

TEST(CpuBackend, TensorAllocatorMakesContiguousTensors) {
  Tensor t = runtime::empty({3, 5}, DataType::bfloat16());
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(t.shape_str(), "[3, 5]");
  EXPECT_EQ(t.dtype(), DataType::bfloat16());
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 256, 0u);
  cpu_backend().memset_async(t.data(), 0x7f, size_t(t.nbytes()), Device::cpu(), nullptr);
  EXPECT_EQ(t.data_as<uint16_t>()[14], 0x7f7f);
  Tensor empty = runtime::empty({0, 4}, DataType::float32());
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_NE(empty.data(), nullptr);
  const int64_t rank9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(error_message([&] { runtime::empty(rank9, DataType::float32()); },
                          ErrorKind::kValueError),
            "tensor rank 9 exceeds the maximum of 8");  // and the memory is freed (ASan)
  const int64_t huge[] = {int64_t(1) << 62, 8};
  std::string msg = error_message(
      [&] { cpu_backend().tensor_allocator().empty(huge, DataType::float32(), Device::cpu(), nullptr); },
      ErrorKind::kValueError);
  EXPECT_EQ(msg, "empty: shape [4611686018427387904, 8] has more elements than int64 can count");
}

// The sanitizers' allocators abort on an impossible size instead of
// returning nullptr (unless allocator_may_return_null=1).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizedAllocator = true;
#else
constexpr bool kSanitizedAllocator = false;
#endif

TEST(CpuBackend, OutOfMemory) {
  if (kSanitizedAllocator) GTEST_SKIP() << "the sanitizer's allocator aborts instead";
  EXPECT_EQ(cpu_backend().allocator().allocate(size_t(1) << 62, Device::cpu(), nullptr), nullptr);
  const int64_t big[] = {int64_t(1) << 60};
  std::string msg = error_message(
      [&] { cpu_backend().tensor_allocator().empty(big, DataType::uint8(), Device::cpu(), nullptr); },
      ErrorKind::kOutOfMemoryError);
  EXPECT_EQ(msg,
            "empty: cannot allocate 1152921504606846976 bytes of host memory for a tensor of "
            "shape [1152921504606846976] and dtype uint8");
}

// --- generated source -------------------------------------------------------

ir::PrimFunc static_func() {
  return ir::prim_func("copy_static")
      .tensor("A", {4, 8}, DataType::float32())
      .tensor("B", {4, 8}, DataType::float32())
      .grid({4})
      .body("cpu", "for (int j = 0; j < 8; ++j) B(bx, j) = 2.0f * A(bx, j);\n")
      .build();
}

ir::PrimFunc dynamic_func() {
  Expr b = Expr::var("b"), s = Expr::var("s"), k = Expr::var("k");
  return ir::prim_func("scale_rows")
      .tensor("X", {b, s * 2}, DataType::bfloat16())
      .tensor("Y", {b * (s + 1), ir::ceildiv(s, 64), 64}, DataType::float32())
      .tensor("Z", {ir::max(k - (b - 1), 1), ir::floordiv(s, 4), ir::floormod(s, 3)},
              DataType::int8())
      .scalar("alpha", DataType::float32())
      .scalar("k", DataType::int64())
      .scalar("flag", DataType::int32())
      .grid({b, ir::ceildiv(s, 64)})
      .body("cpu", "Y(bx, by, 0) = alpha * float(X(bx, 0));")
      .body("cuda", "unused")
      .build();
}

// The prelude is included by name, so the golden file pins only what is
// particular to the kernel.
void check_golden(const std::string& name, const std::string& text) {
  tilejit::testing::check_golden("backend", name, text, "generated source");
}

TEST(CpuCodegen, GoldenStatic) {
  ir::PrimFunc f = static_func();
  check_golden("cpu_copy_static.cpp", cpu_backend().generate_source({&f, {}}));
}

TEST(CpuCodegen, GoldenDynamic) {
  ir::PrimFunc f = dynamic_func();
  const std::vector<std::string> symbols = {"b", "s", "k"};
  const std::string source = cpu_backend().generate_source({&f, symbols});
  check_golden("cpu_scale_rows.cpp", source);
  // The parts the golden file pins down, spelled out.
  EXPECT_NE(source.find("  [[maybe_unused]] const int64_t s = tilejit_syms[1];\n"),
            std::string::npos);
  EXPECT_NE(source.find("tilejit::View<float, -1, -1, 64> Y(static_cast<float*>(tilejit_args[1]), "
                        "{b * (s + 1), tilejit::ceildiv(s, 64)});"),
            std::string::npos);
  EXPECT_NE(source.find("{tilejit::max(k - (b - 1), 1), tilejit::floordiv(s, 4), "
                        "tilejit::floormod(s, 3)}"),
            std::string::npos);
  // Note [Slot layout]: the scalar's bytes are in its slot.
  EXPECT_NE(source.find("const float alpha = [&] { float v; __builtin_memcpy(&v, &tilejit_args[3], "
                        "sizeof v); return v; }();"),
            std::string::npos);
  EXPECT_NE(source.find("// k: the symbol declared above"), std::string::npos);
  EXPECT_NE(source.find("#line 1 \"scale_rows_body\"\nY(bx, by, 0) = alpha * float(X(bx, 0));\n"),
            std::string::npos);
}

TEST(CpuCodegen, GeneratedSourcesCompile) {
  // The generated sources are valid C++ as they stand (-Wall -Wextra -Werror:
  // the unused parameters of these bodies must not warn).
  runtime::CompileOptions options{{"-O1"}, {"-Wall", "-Wextra", "-Werror"}};
  ir::PrimFunc a = static_func(), b = dynamic_func();
  const std::vector<std::string> symbols = {"b", "s", "k"};
  EXPECT_NO_THROW(build(a, {}, options));
  EXPECT_NO_THROW(build(b, symbols, options));
}

TEST(CpuCodegen, MissingCpuBody) {
  ir::PrimFunc f = ir::prim_func("only_cuda")
                       .tensor("A", {4}, DataType::float32())
                       .body("cuda", "A[0] = 1;")
                       .build();
  EXPECT_EQ(error_message([&] { cpu_backend().generate_source({&f, {}}); }, ErrorKind::kValueError),
            "only_cuda: no body for target 'cpu' (bodies given: cuda)");
  f.mutable_sources().clear();
  EXPECT_EQ(error_message([&] { cpu_backend().generate_source({&f, {}}); }, ErrorKind::kValueError),
            "only_cuda: no body for target 'cpu' (bodies given: none)");
}

TEST(CpuCodegen, SymbolMissingFromRequest) {
  Expr n = Expr::var("n"), m = Expr::var("m");
  ir::PrimFunc f = ir::prim_func("needs_m")
                       .tensor("A", {n, m}, DataType::float32())
                       .body("cpu", "")
                       .build();
  const std::vector<std::string> symbols = {"n"};
  EXPECT_EQ(error_message([&] { cpu_backend().generate_source({&f, symbols}); },
                          ErrorKind::kValueError),
            "needs_m: symbol 'm' in the shape of parameter 'A' is not among the request's "
            "symbols (n)");
}

TEST(CpuCodegen, UnsupportedDtype) {
  // Past validate(): a PrimFunc made by hand.
  ir::PrimFunc f = static_func();
  f.params[1].tensor.dtype = DataType(DataType::kUInt, 4);
  EXPECT_EQ(error_message([&] { cpu_backend().generate_source({&f, {}}); }, ErrorKind::kTypeError),
            "copy_static: parameter 'B' has dtype uint4, which the CPU backend does not support");
}

// --- compiling --------------------------------------------------------------

// An executable shell script standing in for the compiler, in a directory
// removed afterwards.
class FakeCompiler {
 public:
  explicit FakeCompiler(const std::string& script) {
    dir_ = std::filesystem::temp_directory_path() /
           ("tilejit-fake-cxx-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "fake-c++").string();
    std::ofstream(path_) << "#!/bin/sh\n" << script << "\n";
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all);
  }
  ~FakeCompiler() { std::filesystem::remove_all(dir_); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::string path_;
};

TEST(CpuCompile, CompilerFailuresOfEveryKind) {
  ir::PrimFunc f = static_func();
  {
    FakeCompiler cxx("echo 'it broke' >&2; exit 3");
    ScopedEnv env("TILEJIT_CXX", cxx.path().c_str());
    std::string msg = error_message([&] { build(f); }, ErrorKind::kCompileError);
    EXPECT_EQ(msg.rfind("copy_static: the CPU compiler failed (exit code 3)\ncommand: " +
                            cxx.path() + " -O3 -march=native -std=c++17 -fPIC -shared -I",
                        0),
              0u)
        << msg;
    // No "file:line: error" in the log: no excerpt.
    EXPECT_TRUE(msg.ends_with("\nit broke")) << msg;
  }
  {
    FakeCompiler cxx("kill -9 $$");
    ScopedEnv env("TILEJIT_CXX", cxx.path().c_str());
    std::string msg = error_message([&] { build(f); }, ErrorKind::kCompileError);
    EXPECT_EQ(msg.rfind("copy_static: the CPU compiler failed (killed by signal 9)\n", 0), 0u)
        << msg;
  }
  {
    FakeCompiler cxx("exit 0");
    ScopedEnv env("TILEJIT_CXX", cxx.path().c_str());
    std::string msg = error_message([&] { build(f); }, ErrorKind::kCompileError);
    EXPECT_EQ(msg.rfind("copy_static: the CPU compiler exited with 0 but wrote no shared object\n"
                        "command: ",
                        0),
              0u)
        << msg;
  }
  {
    FakeCompiler cxx("exit 0");
    std::filesystem::permissions(cxx.path(), std::filesystem::perms::owner_read);
    ScopedEnv env("TILEJIT_CXX", cxx.path().c_str());
    EXPECT_EQ(error_message([&] { build(f); }, ErrorKind::kCompileError),
              "copy_static: cannot run the C++ compiler '" + cxx.path() +
                  "': Permission denied (set TILEJIT_CXX)");
  }
}

TEST(CpuCompile, NoTemporaryDirectory) {
  ScopedEnv tmp("TMPDIR", "/nonexistent/tmp");
  ir::PrimFunc f = static_func();
  EXPECT_EQ(error_message([&] { build(f); }, ErrorKind::kRuntimeError),
            "cpu backend: cannot create a temporary directory '/nonexistent/tmp/tilejit-cpu-XXXXXX'"
            ": No such file or directory");
}

TEST(CpuCompile, SyntaxErrorShowsCommandLogAndBodyLine) {
  ir::PrimFunc f = ir::prim_func("broken")
                       .tensor("A", {4}, DataType::float32())
                       .grid({4})
                       .body("cpu", "float x = A(bx);\nfloat y = x +;\nA(bx) = y;\n")
                       .build();
  std::string msg = error_message([&] { build(f, {}, {{"-O0"}, {}}); }, ErrorKind::kCompileError);
  EXPECT_EQ(msg.rfind("broken: the CPU compiler failed (exit code 1)\ncommand: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(" -O0 -std=c++17 -fPIC -shared -I"), std::string::npos) << msg;
  EXPECT_NE(msg.find("broken_body:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("error"), std::string::npos) << msg;
  // Only the body's own lines are numbered; the wrapper's lines after it
  // are shown without a number.
  EXPECT_TRUE(msg.ends_with("\nsource around line 2 of broken_body:\n"
                            "   1 | float x = A(bx);\n"
                            ">  2 | float y = x +;\n"
                            "   3 | A(bx) = y;\n"
                            "     |       }();\n"
                            "     |     } catch (...) {"))
      << msg;
}

TEST(CpuCompile, ErrorAfterTheBodyIsShownInTheGeneratedLines) {
  // A block the body leaves open ends in the wrapper's code: the compiler
  // reports a line past the body's, which is not numbered as one of them.
  ir::PrimFunc f = ir::prim_func("unclosed")
                       .tensor("A", {4}, DataType::float32())
                       .grid({4})
                       .body("cpu", "if (bx > 0) {\n  A(bx) = 1;\n")
                       .build();
  std::string msg = error_message([&] { build(f, {}, {{"-O0"}, {}}); }, ErrorKind::kCompileError);
  EXPECT_NE(msg.find("unclosed_body:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\nsource around line 3 of unclosed_body, in the code generated after the "
                     "body's 2 lines:\n"
                     "   1 | if (bx > 0) {\n"
                     "   2 |   A(bx) = 1;\n"
                     ">    |       }();\n"
                     "     |     } catch (...) {\n"),
            std::string::npos)
      << msg;
}

// The CompileError of a body that does not compile: carries the source.
const CompileError& failed_compile(const ir::PrimFunc& f, std::string* source,
                                   std::optional<CompileError>* holder) {
  *source = cpu_backend().generate_source({&f, {}});
  try {
    cpu_backend().compile(*source, f.name, {{"-O0"}, {}}, Device::cpu());
  } catch (const CompileError& e) {
    holder->emplace(e);
    return **holder;
  }
  ADD_FAILURE() << "no CompileError";
  holder->emplace("none", "", "");
  return **holder;
}

// The directory of `path`, a file in a compile's temporary directory.
std::string dir_of(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

TEST(CpuCompile, FailedSourceIsCarriedAndKeptOnlyWhenAsked) {
  ir::PrimFunc f = ir::prim_func("kept")
                       .tensor("A", {4}, DataType::float32())
                       .body("cpu", "A(0) = ;\n")
                       .build();
  std::string source;
  std::optional<CompileError> holder;
  {
    ScopedEnv keep("TILEJIT_KEEP_FAILED", nullptr);
    const CompileError& e = failed_compile(f, &source, &holder);
    EXPECT_EQ(e.kind(), ErrorKind::kCompileError);
    EXPECT_EQ(e.source(), source);
    EXPECT_EQ(e.kept_path(), "");
    const std::string& msg = e.message();
    const size_t at = msg.find(" -o ");
    ASSERT_NE(at, std::string::npos) << msg;
    const std::string object = msg.substr(at + 4, msg.find('\n', at) - at - 4);
    EXPECT_TRUE(object.ends_with("/kept.so")) << msg;
    EXPECT_FALSE(std::filesystem::exists(dir_of(object))) << msg;  // nothing left behind
    EXPECT_NE(msg.find("/kept.so\n(its files are removed; set TILEJIT_KEEP_FAILED=1 to keep them "
                       "and run it again)\n"),
              std::string::npos)
        << msg;
  }
  {
    ScopedEnv keep("TILEJIT_KEEP_FAILED", "1");
    const CompileError& e = failed_compile(f, &source, &holder);
    EXPECT_EQ(e.source(), source);
    const std::string path = e.kept_path();
    ASSERT_TRUE(path.ends_with("/kept.cpp")) << path;
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), source);
    EXPECT_NE(e.message().find("/kept.so\nkept: " + path +
                               " and the command's other files (TILEJIT_KEEP_FAILED=1)\n"),
              std::string::npos)
        << e.message();
    // The command compiles the kept file: it can be run again as it is.
    EXPECT_NE(e.message().find(" -O0 -std=c++17 -fPIC -shared -I" + dir_of(path) + "/include -x c++ " + path + " -o "),
              std::string::npos)
        << e.message();
    std::filesystem::remove_all(dir_of(path));
  }
  {
    // "0" is off; a kernel that compiles leaves nothing behind either way.
    ScopedEnv keep("TILEJIT_KEEP_FAILED", "0");
    EXPECT_EQ(failed_compile(f, &source, &holder).kept_path(), "");
  }
}

TEST(CpuCompile, ErrorInGeneratedSourceShowsItsLines) {
  // A source that is not from generate_source(): the excerpt comes from the
  // file itself.
  const std::string source = "int ok = 1;\nint bad = ;\nint fine = 2;\n";
  std::string msg = error_message(
      [&] { cpu_backend().compile(source, "raw", {{"-O0"}, {}}, Device::cpu()); },
      ErrorKind::kCompileError);
  EXPECT_NE(msg.find("/raw.cpp:\n   1 | int ok = 1;\n>  2 | int bad = ;\n   3 | int fine = 2;"),
            std::string::npos)
      << msg;
}

TEST(CpuCompile, MissingCompiler) {
  ScopedEnv cxx("TILEJIT_CXX", "/nonexistent");
  ir::PrimFunc f = static_func();
  EXPECT_EQ(error_message([&] { build(f); }, ErrorKind::kCompileError),
            "copy_static: cannot run the C++ compiler '/nonexistent': No such file or directory "
            "(set TILEJIT_CXX)");
  // The key still answers (the cache asks before compiling); the failure is
  // reported by compile(), which knows the kernel.
  std::string key = cpu_backend().toolchain_key({}, Device::cpu());
  EXPECT_NE(key.find("compiler /nonexistent; version unknown;"), std::string::npos) << key;
}

TEST(CpuCompile, CompilerFromCxxWhenTilejitCxxUnset) {
  ScopedEnv tilejit_cxx("TILEJIT_CXX", nullptr);
  ScopedEnv cxx("CXX", "/also/nonexistent");
  ir::PrimFunc f = static_func();
  EXPECT_EQ(error_message([&] { build(f); }, ErrorKind::kCompileError),
            "copy_static: cannot run the C++ compiler '/also/nonexistent': No such file or "
            "directory (set TILEJIT_CXX)");
}

TEST(CpuCompile, ToolchainKey) {
  ScopedEnv cxx("TILEJIT_CXX", "c++");
  runtime::Backend& be = cpu_backend();
  const std::string native = be.toolchain_key({}, Device::cpu());
  EXPECT_NE(native.find("compiler /"), std::string::npos) << native;  // resolved in PATH
  EXPECT_NE(native.find("flags -O3 -march=native -std=c++17 -fPIC -shared; cpu "),
            std::string::npos)
      << native;
  EXPECT_EQ(native.find("version unknown"), std::string::npos) << native;
  EXPECT_EQ(be.toolchain_key({}, Device::cpu()), native);  // stable
  const std::string o1 = be.toolchain_key({{"-O1"}, {"-DX=1"}}, Device::cpu());
  EXPECT_NE(o1.find("flags -O1 -DX=1 -std=c++17 -fPIC -shared"), std::string::npos) << o1;
  EXPECT_EQ(o1.find("; cpu "), std::string::npos) << o1;  // no -march=native
  EXPECT_NE(o1, be.toolchain_key({{"-O2"}, {"-DX=1"}}, Device::cpu()));
  // The device headers are not in the source, so their hash is in the key.
  const std::string headers =
      "; device headers " + backend::device_files_digest(backend::cpu_device_files());
  EXPECT_EQ(o1.substr(o1.size() - headers.size()), headers) << o1;
}

// --- loading ----------------------------------------------------------------

TEST(CpuLoad, GarbageIsRefused) {
  runtime::Backend& be = cpu_backend();
  const std::string prefix = "cpu backend: cannot load the kernel binary: ";
  EXPECT_EQ(error_message([&] { be.load("", pointer_abi(1), Device::cpu()); }, ErrorKind::kRuntimeError),
            prefix + "the binary is empty");
  EXPECT_EQ(error_message([&] { be.load("definitely not a shared object", pointer_abi(1), Device::cpu()); },
                          ErrorKind::kRuntimeError),
            prefix + "the binary is not an ELF file (30 bytes)");
  std::string elf_noise = "\x7f" "ELF" + std::string(200, '\x01');
  EXPECT_EQ(error_message([&] { be.load(elf_noise, pointer_abi(1), Device::cpu()); }, ErrorKind::kRuntimeError),
            prefix + "the binary is not a shared object for this machine");

  ir::PrimFunc f = static_func();
  const std::string good = be.compile(be.generate_source({&f, {}}), f.name, {{"-O0"}, {}},
                                      Device::cpu());
  for (size_t cut : {size_t(64), size_t(100), good.size() / 2, good.size() - 1}) {
    std::string msg = error_message([&] { be.load(good.substr(0, cut), pointer_abi(1), Device::cpu()); },
                                    ErrorKind::kRuntimeError);
    EXPECT_EQ(msg.rfind(prefix, 0), 0u) << cut << ": " << msg;
  }
  EXPECT_NO_THROW(be.load(good, pointer_abi(1), Device::cpu()));
  EXPECT_EQ(error_message([&] { be.load(good, pointer_abi(1), Device::cuda(0)); }, ErrorKind::kValueError),
            "cpu backend: load on device 'cuda:0', which is not a CPU");
}

TEST(CpuLoad, AbiVersionAndEntryAreChecked) {
  runtime::Backend& be = cpu_backend();
  const std::string prefix = "cpu backend: cannot load the kernel binary: ";
  const std::string v2 = be.compile("extern \"C\" int tilejit_abi_version() { return 2; }\n", "v2",
                                    {{"-O0"}, {}}, Device::cpu());
  EXPECT_EQ(error_message([&] { be.load(v2, pointer_abi(1), Device::cpu()); },
                          ErrorKind::kRuntimeError),
            prefix + "its ABI version is 2; this tilejit expects 3");
  const std::string no_entry = be.compile("extern \"C\" int tilejit_abi_version() { return 3; }\n",
                                          "no_entry", {{"-O0"}, {}}, Device::cpu());
  std::string msg = error_message([&] { be.load(no_entry, pointer_abi(1), Device::cpu()); },
                                  ErrorKind::kRuntimeError);
  EXPECT_NE(msg.find("undefined symbol: tilejit_entry"), std::string::npos) << msg;
  const std::string no_name = be.compile(
      "#include <cstdint>\n"
      "extern \"C\" int tilejit_abi_version() { return 3; }\n"
      "extern \"C\" int64_t tilejit_entry() { return -1; }\n",
      "no_name", {{"-O0"}, {}}, Device::cpu());
  msg = error_message([&] { be.load(no_name, pointer_abi(1), Device::cpu()); }, ErrorKind::kRuntimeError);
  EXPECT_NE(msg.find("undefined symbol: tilejit_kernel_name"), std::string::npos) << msg;
  const std::string no_version =
      be.compile("int x = 1;\n", "no_version", {{"-O0"}, {}}, Device::cpu());
  msg = error_message([&] { be.load(no_version, pointer_abi(1), Device::cpu()); }, ErrorKind::kRuntimeError);
  EXPECT_NE(msg.find("undefined symbol: tilejit_abi_version"), std::string::npos) << msg;
}

TEST(CpuLoad, ManyModulesLoadAndUnload) {
  // Note [Loading from memory]: modules loaded and unloaded in any order
  // each run their own code, never another one's under a reused fd path.
  runtime::Backend& be = cpu_backend();
  std::vector<std::string> binaries;
  for (int v = 0; v < 3; ++v) {
    ir::PrimFunc f = ir::prim_func("value" + std::to_string(v))
                         .tensor("Out", {1}, DataType::int32())
                         .body("cpu", "Out(0) = " + std::to_string(v) + ";")
                         .build();
    binaries.push_back(be.compile(be.generate_source({&f, {}}), f.name, {{"-O0"}, {}},
                                  Device::cpu()));
  }
  for (int round = 0; round < 20; ++round) {
    std::vector<std::unique_ptr<runtime::Module>> live;
    for (int i = 0; i < 3; ++i) {
      const int v = (round + i) % 3;
      live.push_back(be.load(binaries[size_t(v)], pointer_abi(1), Device::cpu()));
      if (round % 2 && live.size() > 1) live.erase(live.begin());  // unload while others stay
      int32_t out = -1;
      launch(*live.back(), {&out}, {}, {1, 1, 1});
      EXPECT_EQ(out, v) << "round " << round;
    }
  }
}

TEST(CpuLoad, PathOfAnUnloadableLibraryIsNotReused) {
  // A library linked with -z nodelete stays mapped after dlclose, still
  // named "/proc/self/fd/N". The next module, likely handed the same N, must
  // still run its own code (Note [Loading from memory]).
  runtime::Backend& be = cpu_backend();
  auto value_func = [](int v) {
    return ir::prim_func("sticky" + std::to_string(v))
        .tensor("Out", {1}, DataType::int32())
        .body("cpu", "Out(0) = " + std::to_string(v) + ";")
        .build();
  };
  ir::PrimFunc f1 = value_func(1), f2 = value_func(2);
  const std::string sticky = be.compile(be.generate_source({&f1, {}}), f1.name,
                                        {{"-O0"}, {"-Wl,-z,nodelete"}}, Device::cpu());
  const std::string plain =
      be.compile(be.generate_source({&f2, {}}), f2.name, {{"-O0"}, {}}, Device::cpu());
  int32_t out = 0;
  for (int i = 0; i < 3; ++i) {
    be.load(sticky, pointer_abi(1), Device::cpu()).reset();
    auto m = be.load(plain, pointer_abi(1), Device::cpu());
    launch(*m, {&out}, {}, {1, 1, 1});
    EXPECT_EQ(out, 2) << "round " << i;
  }
}

}  // namespace
}  // namespace tilejit::cpu::testing
