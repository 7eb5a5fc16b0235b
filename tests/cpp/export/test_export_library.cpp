// export_library: the library and header it writes, loaded here with dlopen
// and called through its C functions, whose errors must read as the jit
// path's; and the export's own errors (a target that cannot export, a path
// that cannot be written), after which nothing is left behind.
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "export/dlpack_c.h"
#include "runtime/fake_backend.h"
#include "tilejit/export/export_library.h"
#include "tilejit/tilejit.h"

namespace tilejit {
namespace {

using testing::error_message;
using testing::expect_error;
using testing::TempDir;

using namespace export_testing;

DLTensorC dl(const Tensor& t, int64_t* shape) {
  for (int d = 0; d < t.ndim(); ++d) shape[d] = t.shape(d);
  return DLTensorC{t.data(), {1, 0}, t.ndim(), {t.dtype().code, t.dtype().bits, 1}, shape,
                   nullptr, 0};
}

// X: float32[2n + 1] (n solved from an affine extent), alpha: a scalar,
// Y = alpha * X through W, a zero workspace the body accumulates into.
const Kernel& scale_add() {
  static const Kernel k = [] {
    const Expr n = symbolic("n");
    const Expr len = 2 * n + 1;
    const auto f = prim_func("scale_add")
                       .tensor("X", {len}, DataType::float32())
                       .scalar("alpha", DataType::float32())
                       .tensor("Y", {len}, DataType::float32())
                       .tensor("W", {len}, DataType::float32())
                       .body("cpu", R"(
if (alpha < 0) throw std::invalid_argument("negative alpha");
for (int64_t i = 0; i < X.shape(0); ++i) { W(i) += X(i); Y(i) = alpha * W(i); }
)")
                       .build();
    JitOptions o = testing::cpu_options({2}, {3});
    o.workspace_init["W"] = WorkspaceInit::kZero;
    return jit(f, o);
  }();
  return k;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Loaded for good (RTLD_NODELETE): the library's C++ runtime, linked in
// statically, allocates its exception-handling emergency pool (72 KiB) when
// it loads and never frees it, so an unloaded library would leave that
// block behind (LeakSanitizer reports it).
class Library {
 public:
  explicit Library(const std::string& path)
      : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
    EXPECT_NE(handle_, nullptr) << dlerror();
  }
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  template <typename Fn>
  Fn get(const char* name) {
    void* p = dlsym(handle_, name);
    EXPECT_NE(p, nullptr) << name;
    return reinterpret_cast<Fn>(p);
  }

 private:
  void* handle_;
};

TEST(ExportLibrary, CName) {
  EXPECT_EQ(export_c_name("splitk_gemm"), "splitk_gemm");
  EXPECT_EQ(export_c_name("my-op.v2"), "my_op_v2");
  EXPECT_EQ(export_c_name("2x"), "_2x");
  EXPECT_EQ(export_c_name(""), "_");
}

TEST(ExportLibrary, WritesALibraryThatCallsAsTheJitPathDoes) {
  TempDir dir;
  const Kernel& k = scale_add();
  export_library(k, dir / "libscale.so");
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"libscale.h", "libscale.so"}));
  const std::string header = read_text(dir / "libscale.h");
  EXPECT_NE(header.find("int scale_add(const DLTensor* X, float alpha, DLTensor* Y, void* "
                        "workspace, void* stream);"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("int scale_add_auto(const DLTensor* X, float alpha, DLTensor* Y, void* "
                        "stream, const tilejit_allocator* allocator);"),
            std::string::npos);
  EXPECT_NE(header.find("#define SCALE_ADD_OUTPUT_SHAPES_LEN 1"), std::string::npos);

  Library lib(dir / "libscale.so");
  using Call = int (*)(const DLTensorC*, float, DLTensorC*, void*, void*);
  using Auto = int (*)(const DLTensorC*, float, DLTensorC*, void*, const void*);
  using Bytes = int64_t (*)(const DLTensorC*, float);
  using Shapes = int (*)(const DLTensorC*, float, int64_t*);
  auto call = lib.get<Call>("scale_add");
  auto call_auto = lib.get<Auto>("scale_add_auto");
  auto bytes = lib.get<Bytes>("scale_add_workspace_bytes");
  auto shapes = lib.get<Shapes>("scale_add_output_shapes");
  auto last_error = lib.get<const char* (*)()>("scale_add_last_error");

  Tensor x = testing::iota({7}, 1.f);
  Tensor y = empty({7}, DataType::float32());
  int64_t xs[1], ys[1];
  DLTensorC X = dl(x, xs), Y = dl(y, ys);
  EXPECT_EQ(bytes(&X, 2.f), 256);  // 7 floats, one aligned arena
  EXPECT_EQ(bytes(&X, 2.f), int64_t(k.workspace_bytes_of(x, 2.f)));
  int64_t out_shape[1] = {0};
  ASSERT_EQ(shapes(&X, 2.f, out_shape), 0) << last_error();
  EXPECT_EQ(out_shape[0], 7);

  // The caller's arena full of garbage: W is zeroed (kZero) on every call.
  alignas(256) float arena[64];
  for (int call_no = 0; call_no < 2; ++call_no) {
    for (float& v : arena) v = 100.f;
    ASSERT_EQ(call(&X, 3.f, &Y, arena, nullptr), 0) << last_error();
    for (int i = 0; i < 7; ++i) EXPECT_EQ(y.data_as<float>()[i], 3.f * float(i + 1));
  }
  // The library's pool, twice: W is zeroed again although the arena is reused.
  for (int call_no = 0; call_no < 2; ++call_no) {
    ASSERT_EQ(call_auto(&X, 2.f, &Y, nullptr, nullptr), 0) << last_error();
    for (int i = 0; i < 7; ++i) EXPECT_EQ(y.data_as<float>()[i], 2.f * float(i + 1));
  }
  EXPECT_EQ(lib.get<int64_t (*)()>("scale_add_pool_bytes")(), 256);

  // The errors are the jit path's, word for word.
  Tensor x64 = empty({7}, DataType::int64());
  int64_t x64s[1];
  DLTensorC X64 = dl(x64, x64s);
  EXPECT_EQ(call(&X64, 2.f, &Y, arena, nullptr), 1);
  EXPECT_EQ(last_error(), error_message([&] { k(x64, 2.f); }, ErrorKind::kTypeError));
  EXPECT_EQ(std::string(last_error()), "scale_add: argument #0 'X': expected float32, got int64");

  Tensor x4 = testing::iota({4});
  int64_t x4s[1];
  DLTensorC X4 = dl(x4, x4s);
  EXPECT_EQ(call(&X4, 2.f, &Y, arena, nullptr), 2);
  EXPECT_EQ(last_error(), error_message([&] { k(x4, 2.f); }, ErrorKind::kValueError));
  EXPECT_EQ(bytes(&X4, 2.f), -1);

  EXPECT_EQ(call(&X, -1.f, &Y, arena, nullptr), 2);
  EXPECT_EQ(last_error(), error_message([&] { k(x, -1.f); }, ErrorKind::kValueError));
  EXPECT_EQ(std::string(last_error()),
            "scale_add: block (0, 0, 0) threw std::invalid_argument: negative alpha");

  Tensor y8 = empty({8}, DataType::float32());
  int64_t y8s[1];
  DLTensorC Y8 = dl(y8, y8s);
  EXPECT_EQ(call(&X, 2.f, &Y8, arena, nullptr), 2);
  const Tensor outs[] = {y8};
  CallOptions options;
  options.out = outs;
  const Arg args[] = {x, 2.f};
  EXPECT_EQ(last_error(), error_message([&] { k.call(args, options); }, ErrorKind::kValueError));

  EXPECT_EQ(call(&X, 2.f, &Y, arena + 1, nullptr), 2);
  EXPECT_EQ(std::string(last_error()),
            "scale_add: workspace: the pointer is not 256-byte aligned (address % 256 = 4)");
}

TEST(ExportLibrary, ATargetThatCannotExportIsNamed) {
  static const bool registered = [] {
    runtime::register_backend(std::make_unique<testing::FakeBackend>("fake_export"));
    return true;
  }();
  ASSERT_TRUE(registered);
  const auto f = prim_func("noop")
                     .tensor("X", {4}, DataType::float32())
                     .tensor("Y", {4}, DataType::float32())
                     .body("fake_export", "")
                     .build();
  JitOptions o;
  o.out_idx = {1};
  o.target = "fake_export";
  o.disk_cache = false;
  const Kernel k = jit(f, o);
  TempDir dir;
  expect_error([&] { export_library(k, dir / "libnoop.so"); }, ErrorKind::kValueError,
               "noop: cannot export a kernel of target 'fake_export': export_library supports "
               "the CPU and CUDA targets only");
  EXPECT_TRUE(listing(dir.path()).empty());
  expect_error([&] { export_library(Kernel(), dir / "libnoop.so"); }, ErrorKind::kValueError,
               "export_library of an undefined Kernel");
}

TEST(ExportLibrary, AnUnwritablePathIsNamedAndLeavesNothing) {
  TempDir dir;
  std::ofstream(dir / "file") << "not a directory";
  const std::string header = dir / "file/libscale.h";
  expect_error([&] { export_library(scale_add(), dir / "file/libscale.so"); },
               ErrorKind::kRuntimeError,
               "scale_add: export_library: cannot write '" + header + "': Not a directory");
  expect_error([&] { export_library(scale_add(), dir.path() + "/"); }, ErrorKind::kValueError,
               "scale_add: export_library: '" + dir.path() +
                   "/' names a directory, not a library file");
  // The library's name is a directory: its rename fails after the header's,
  // which is taken back.
  std::filesystem::create_directory(dir / "libscale.so");
  expect_error([&] { export_library(scale_add(), dir / "libscale.so"); },
               ErrorKind::kRuntimeError,
               "scale_add: export_library: cannot write '" + (dir / "libscale.so") +
                   "': Is a directory");
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"file", "libscale.so"}));
  EXPECT_TRUE(listing(dir / "libscale.so").empty());
}

}  // namespace
}  // namespace tilejit
