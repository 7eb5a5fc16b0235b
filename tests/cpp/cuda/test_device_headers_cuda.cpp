// The CUDA device headers (device/cuda/): each compiles on its own under
// NVRTC, handed over by name as the backend hands them. Skips where NVRTC
// cannot be loaded (no GPU is needed).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/common/device_files.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/nvrtc_loader.h"
#include "cuda/cuda_test_util.h"

namespace tilejit::backend {
namespace {

std::filesystem::path device_dir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path() /
         "device" / "cuda";
}

TEST(CudaDeviceHeaders, EmbeddedTextIsTheTreesText) {
  std::set<std::string> in_tree;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(device_dir())) {
    if (entry.path().extension() == ".h") {
      in_tree.insert(std::filesystem::relative(entry.path(), device_dir()).string());
    }
  }
  std::set<std::string> embedded;
  for (const DeviceFile& f : cuda_device_files()) {
    embedded.insert(std::string(f.name));
    std::ifstream in(device_dir() / std::string(f.name), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str(), f.text) << f.name;
  }
  EXPECT_EQ(embedded, in_tree);
  EXPECT_TRUE(embedded.count(cuda::kPreludeName));
}

// Compiles `unit` (through ptxas: a unit with a __global__ entry is code
// generated) with the embedded headers; returns NVRTC's log on failure.
std::string nvrtc_errors(const std::string& unit) {
  const cuda::NvrtcApi& api = cuda::nvrtc();
  std::vector<const char*> texts, names;
  for (const DeviceFile& f : cuda_device_files()) {
    texts.push_back(f.text.data());
    names.push_back(f.name.data());
  }
  std::vector<std::string> flags = {"--gpu-architecture=sm_90a", "-std=c++17", "-default-device"};
  for (const std::string& d : api.include_dirs) flags.push_back("--include-path=" + d);
  std::vector<const char*> argv;
  for (const std::string& f : flags) argv.push_back(f.c_str());
  nvrtcProgram prog = nullptr;
  if (api.nvrtcCreateProgram(&prog, unit.c_str(), "unit.cu", int(texts.size()), texts.data(),
                             names.data()) != NVRTC_SUCCESS) {
    return "nvrtcCreateProgram failed";
  }
  const nvrtcResult r = api.nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  size_t size = 0;
  api.nvrtcGetProgramLogSize(prog, &size);
  std::string log(size, '\0');
  api.nvrtcGetProgramLog(prog, log.data());
  api.nvrtcDestroyProgram(&prog);
  return r == NVRTC_SUCCESS ? std::string() : log + "\n(in)\n" + unit;
}

TEST(CudaDeviceHeaders, EachCompilesOnItsOwnUnderNvrtc) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  ASSERT_FALSE(cuda::nvrtc().include_dirs.empty()) << "no CUDA headers for NVRTC";
  for (const DeviceFile& f : cuda_device_files()) {
    EXPECT_EQ(nvrtc_errors("#include \"" + std::string(f.name) + "\"\n"), "") << f.name;
  }
}

// Note [Fragment double buffering]: warp_mma's pair loop for every shape of
// K it has: one step, an odd count, the unrolled even counts and the rolled
// loop past 8 steps; both operand layouts.
TEST(CudaDeviceHeaders, WarpMmaBuildsForEveryStepCount) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  std::string unit = "#include \"tilejit/cuda/prelude.h\"\n#include \"tilejit/cuda/mma.h\"\n";
  int n = 0;
  for (int k : {16, 32, 48, 64, 128, 144, 256}) {
    for (const char* trans : {"false, false", "true, true"}) {
      unit += "extern \"C\" __global__ void k" + std::to_string(n++) +
              "(const tilejit::bfloat16* a, const tilejit::bfloat16* b, float* c) {\n"
              "  extern __shared__ __align__(16) tilejit::bfloat16 as[];\n"
              "  tilejit::bfloat16* bs = as + 256 * 264;\n"
              "  as[threadIdx.x] = a[threadIdx.x]; bs[threadIdx.x] = b[threadIdx.x];\n"
              "  __syncthreads();\n"
              "  float acc[2][4][4] = {};\n"
              "  tilejit::cuda::warp_mma<2, 4, " + std::string(trans) + ", 264, 264, " +
              std::to_string(k) + ">(acc, as, bs, 0, 0);\n"
              "  c[threadIdx.x] = acc[1][3][2];\n}\n";
    }
  }
  EXPECT_EQ(nvrtc_errors(unit), "");
}

}  // namespace
}  // namespace tilejit::backend
