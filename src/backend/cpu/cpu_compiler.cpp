// The CPU backend's compile stage: generated C++ -> shared-object bytes, by
// running the host C++ compiler (backend/common/host_compiler.h, which says
// how it is found and run) with the CPU device headers on the include path.
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/common/device_files.h"
#include "backend/common/host_compiler.h"
#include "backend/cpu/cpu_backend_internal.h"
#include "tilejit/core/error.h"

namespace tilejit::cpu {
namespace {

std::vector<std::string> user_flags(const runtime::CompileOptions& options) {
  std::vector<std::string> flags = options.flags;
  if (flags.empty()) flags = {"-O3", "-march=native"};
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

// -march=native makes the binary depend on the host CPU.
const std::string& cpu_model() {
  static const std::string model = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("model name", 0) == 0) {
        size_t colon = line.find(':');
        if (colon != std::string::npos) {
          size_t start = line.find_first_not_of(" \t", colon + 1);
          return start == std::string::npos ? std::string() : line.substr(start);
        }
      }
    }
    return std::string("unknown");
  }();
  return model;
}

backend::HostCompile cpu_compile() {
  backend::HostCompile how;
  how.backend = "cpu";
  how.display = "CPU";
  how.device_files = backend::cpu_device_files();
  return how;
}

}  // namespace

std::string toolchain_key(const runtime::CompileOptions& options) {
  const std::string compiler = backend::resolve_in_path(backend::host_compiler_name());
  std::ostringstream key;
  key << "cpu abi " << kAbiVersion << "; compiler " << compiler << "; version "
      << backend::host_compiler_version(compiler) << "; flags";
  bool native = false;
  for (const std::string& f : user_flags(options)) {
    key << ' ' << f;
    native = native || f == "-march=native" || f == "-mcpu=native" || f == "-mtune=native";
  }
  for (const std::string& f : backend::host_required_flags()) key << ' ' << f;
  if (native) key << "; cpu " << cpu_model();
  static const std::string headers = backend::device_files_digest(backend::cpu_device_files());
  key << "; device headers " << headers;
  return key.str();
}

std::string compile_source(const std::string& source, const std::string& kernel_name,
                           const runtime::CompileOptions& options) {
  return backend::compile_host_library(cpu_compile(), {{backend::file_stem(kernel_name) + ".cpp", source}},
                                       {}, kernel_name, user_flags(options), {});
}

std::string compile_library(const std::vector<SourceUnit>& units,
                            const std::vector<SourceUnit>& files, const std::string& kernel_name,
                            const std::vector<std::string>& flags,
                            const std::vector<std::string>& link_flags) {
  return backend::compile_host_library(cpu_compile(), units, files, kernel_name, flags, link_flags);
}

}  // namespace tilejit::cpu
