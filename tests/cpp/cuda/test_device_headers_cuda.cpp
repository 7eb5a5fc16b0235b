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

TEST(CudaDeviceHeaders, EachCompilesOnItsOwnUnderNvrtc) {
  TILEJIT_SKIP_WITHOUT_NVRTC();
  const cuda::NvrtcApi& api = cuda::nvrtc();
  ASSERT_FALSE(api.include_dirs.empty()) << "no CUDA headers for NVRTC";
  std::vector<const char*> texts, names;
  for (const DeviceFile& f : cuda_device_files()) {
    texts.push_back(f.text.data());
    names.push_back(f.name.data());
  }
  std::vector<std::string> flags = {"--gpu-architecture=sm_90a", "-std=c++17", "-default-device"};
  for (const std::string& d : api.include_dirs) flags.push_back("--include-path=" + d);
  std::vector<const char*> argv;
  for (const std::string& f : flags) argv.push_back(f.c_str());
  for (const DeviceFile& f : cuda_device_files()) {
    const std::string unit = "#include \"" + std::string(f.name) + "\"\n";
    nvrtcProgram prog = nullptr;
    ASSERT_EQ(api.nvrtcCreateProgram(&prog, unit.c_str(), "unit.cu", int(texts.size()),
                                     texts.data(), names.data()),
              NVRTC_SUCCESS);
    const nvrtcResult r = api.nvrtcCompileProgram(prog, int(argv.size()), argv.data());
    size_t size = 0;
    api.nvrtcGetProgramLogSize(prog, &size);
    std::string log(size, '\0');
    api.nvrtcGetProgramLog(prog, log.data());
    api.nvrtcDestroyProgram(&prog);
    EXPECT_EQ(r, NVRTC_SUCCESS) << f.name << ":\n" << log;
  }
}

}  // namespace
}  // namespace tilejit::backend
