// The CPU device headers (device/cpu/): what libtilejit embeds is the tree's
// text, and each header compiles on its own with the host compiler, in the
// language and with the warnings of a generated unit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "backend/common/device_files.h"
#include "backend/cpu/cpu_backend_internal.h"
#include "common/test_util.h"

namespace tilejit::backend {
namespace {

std::filesystem::path device_dir() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path() /
         "device" / "cpu";
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CpuDeviceHeaders, EmbeddedTextIsTheTreesText) {
  std::set<std::string> in_tree;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(device_dir())) {
    if (entry.path().extension() == ".h") {
      in_tree.insert(std::filesystem::relative(entry.path(), device_dir()).string());
    }
  }
  std::set<std::string> embedded;
  for (const DeviceFile& f : cpu_device_files()) {
    embedded.insert(std::string(f.name));
    EXPECT_EQ(read_text(device_dir() / std::string(f.name)), f.text) << f.name;
    EXPECT_EQ(f.text.data()[f.text.size()], '\0') << f.name;
  }
  EXPECT_EQ(embedded, in_tree);
  EXPECT_TRUE(embedded.count(cpu::kPreludeName));
}

TEST(CpuDeviceHeaders, DigestCoversNamesAndTexts) {
  const auto files = cpu_device_files();
  ASSERT_FALSE(files.empty());
  const std::string all = device_files_digest(files);
  EXPECT_EQ(all, device_files_digest(files));
  EXPECT_NE(all, device_files_digest(files.first(files.size() - 1)));
  const DeviceFile renamed[] = {{"x.h", files[0].text}};
  const DeviceFile edited[] = {{files[0].name, files[0].text.substr(1)}};
  EXPECT_NE(device_files_digest(files.first(1)), device_files_digest(renamed));
  EXPECT_NE(device_files_digest(files.first(1)), device_files_digest(edited));
}

// Each header alone in a unit: it includes what it uses, and it is clean
// under -Wall -Wextra -Werror, both for the host's ISA (the kernels' default
// -march=native, which takes the SIMD paths) and without it.
TEST(CpuDeviceHeaders, EachCompilesOnItsOwn) {
  const char* cxx = std::getenv("TILEJIT_CXX");
  if (cxx == nullptr || *cxx == '\0') cxx = std::getenv("CXX");
  const std::string compiler = (cxx && *cxx) ? cxx : "c++";
  testing::TempDir dir;
  const std::string include = dir / "include";
  write_device_files(cpu_device_files(), include);
  for (const DeviceFile& f : cpu_device_files()) {
    for (const char* isa : {"-march=native", ""}) {
      const std::string unit = dir / "unit.cpp";
      std::ofstream(unit) << "#include \"" << f.name << "\"\n";
      const std::string log = dir / "log.txt";
      const std::string command = compiler + " " + cpu::kCxxStandard + " " + isa +
                                  " -fsyntax-only -Wall -Wextra -Werror -I" + include + " " +
                                  unit + " > " + log + " 2>&1";
      EXPECT_EQ(std::system(command.c_str()), 0) << f.name << " " << isa << ":\n" << read_text(log);
    }
  }
}

}  // namespace
}  // namespace tilejit::backend
