// export_library for target "cuda" (Note [CUDA export] in
// src/export/export_library.cpp): what the library holds (a cubin and PTX,
// the C functions alone exported) and the errors its checks give before the
// driver is needed. Runs where the CUDA backend is available: on a GPU, and
// over the null driver (ctest export.cuda_unit, tests/c/CMakeLists.txt);
// skipped elsewhere.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "export/dlpack_c.h"
#include "tilejit/export/export_library.h"
#include "tilejit/tilejit.h"

namespace tilejit {
namespace {

using testing::TempDir;

using namespace export_testing;

bool cuda_available() {
  runtime::Backend* b = runtime::find_backend(DeviceType::kCUDA);
  return b != nullptr && b->available();
}

// X: float32[n], Y = f(X) through W, a zero workspace; an empty body: what is
// checked here is the library around it.
Kernel empty_kernel() {
  const Expr n = symbolic("n");
  const auto f = prim_func("cuda_noop")
                     .tensor("X", {n}, DataType::float32())
                     .tensor("Y", {n}, DataType::float32())
                     .tensor("W", {n}, DataType::float32())
                     .threads(64)
                     .body("cuda", "")
                     .build();
  JitOptions o;
  o.out_idx = {1};
  o.workspace_idx = {2};
  o.workspace_init["W"] = WorkspaceInit::kZero;
  o.target = "cuda";
  return jit(f, o);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CudaExport, EmbedsACubinAndPtxAndExportsTheCFunctionsOnly) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA driver";
  const Kernel k = empty_kernel();
  TempDir dir;
  const std::string path = (dir / "libcuda_noop.so");
  export_library(k, path);
  const std::string lib = read_bytes(path);
  // The library is an ELF file; the cubin, another, lies inside it.
  ASSERT_EQ(lib.compare(0, 4, "\x7f" "ELF"), 0);
  EXPECT_NE(lib.find("\x7f" "ELF", 4), std::string::npos) << "no embedded cubin";
  // The PTX: text with the entry and the virtual architecture's target.
  EXPECT_NE(lib.find(".entry tilejit_kernel"), std::string::npos) << "no embedded PTX";
  EXPECT_NE(lib.find(".target sm_"), std::string::npos);
  EXPECT_NE(lib.find("compute_"), std::string::npos);

  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  ASSERT_NE(h, nullptr) << dlerror();
  for (const char* name : {"cuda_noop", "cuda_noop_auto", "cuda_noop_auto_outputs",
                           "cuda_noop_workspace_bytes", "cuda_noop_output_shapes",
                           "cuda_noop_last_error", "cuda_noop_pool_bytes"}) {
    EXPECT_NE(dlsym(h, name), nullptr) << name;
  }
  // The launcher's hooks and the embedded binaries stay inside.
  for (const char* name : {"tilejit_export_begin", "tilejit_export_launch", "tilejit_export_alloc",
                           "tilejit_export_free", "kCubin", "kPtx", "cuLaunchKernel"}) {
    EXPECT_EQ(dlsym(h, name), nullptr) << name;
  }
  const std::string header = read_bytes((dir / "libcuda_noop.h"));
  EXPECT_NE(header.find("exported by tilejit (target 'cuda')"), std::string::npos);
  EXPECT_NE(header.find("the CUstream the launches are queued on"), std::string::npos);
  dlclose(h);
}

TEST(CudaExport, ChecksDevicesBeforeTheDriver) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA driver";
  TempDir dir;
  const std::string path = (dir / "libcuda_noop.so");
  export_library(empty_kernel(), path);
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  ASSERT_NE(h, nullptr) << dlerror();
  using Call = int (*)(const DLTensorC*, DLTensorC*, void*, void*);
  using Bytes = int64_t (*)(const DLTensorC*);
  using Error = const char* (*)();
  const auto call = reinterpret_cast<Call>(dlsym(h, "cuda_noop"));
  const auto bytes = reinterpret_cast<Bytes>(dlsym(h, "cuda_noop_workspace_bytes"));
  const auto last_error = reinterpret_cast<Error>(dlsym(h, "cuda_noop_last_error"));
  ASSERT_TRUE(call && bytes && last_error);
  alignas(256) static float data[16];
  int64_t shape[1] = {16};
  DLTensorC X{data, {2, 0}, 1, {2, 32, 1}, shape, nullptr, 0};
  DLTensorC Y = X;
  EXPECT_EQ(bytes(&X), 256);

  DLTensorC Xcpu = X;
  Xcpu.device.device_type = 1;
  EXPECT_EQ(call(&Xcpu, &Y, data, nullptr), 2);
  EXPECT_STREQ(last_error(),
               "cuda_noop: argument #0 'X': expected a tensor on cuda (target 'cuda'), got one on cpu");
  DLTensorC Y1 = Y;
  Y1.device.device_id = 1;
  EXPECT_EQ(call(&X, &Y1, data, nullptr), 2);
  EXPECT_STREQ(last_error(), "cuda_noop: out[0] 'Y': expected a tensor on cuda:0, got one on cuda:1");
  EXPECT_EQ(call(&X, &Y, nullptr, nullptr), 2);
  EXPECT_STREQ(last_error(), "cuda_noop: workspace: needs 256 bytes, got NULL");
  dlclose(h);
}

}  // namespace
}  // namespace tilejit
