// The CUDA backend's compile stage: generated CUDA C++ -> cubin (or PTX) with
// NVRTC, in process.
//
// Note [Choosing the architecture]
// A cubin for the device's exact architecture, sm_XY, is what loads fastest
// and runs everywhere the kernel is loaded (modules are per device, see
// CompileCache). On 9.0 and 10.0 the arch-specific target (sm_90a, sm_100a)
// is used: the binary runs only on that architecture, which is all it is
// loaded on, and it unlocks wgmma / tcgen05 for bodies that use them. When
// NVRTC is older than the device (the device's architecture is not in
// nvrtcGetSupportedArchs), the unit is compiled to PTX for the newest
// architecture NVRTC knows below the device's, and the driver finishes it at
// load. Without a driver or a device (CI) the target is sm_90a, so that every
// CUDA source is still checked by a real compile. A --gpu-architecture (or
// -arch) among the flags overrides all of this; its value decides cubin
// (sm_*) or PTX (compute_*).
#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/common/cxx_source.h"
#include "backend/common/device_files.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/nvrtc_loader.h"
#include "tilejit/core/error.h"

namespace tilejit::cuda {
namespace {

// The target when there is no device to ask (Note [Choosing the architecture]).
constexpr const char* kDefaultArch = "sm_90a";

struct Target {
  std::string arch;  // "sm_90a", "compute_120"
  bool cubin = true;
};

// The architecture named by the flags, or "".
std::string arch_in_flags(const std::vector<std::string>& flags) {
  std::string arch;
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    for (const char* opt : {"--gpu-architecture", "-arch"}) {
      const std::string o = opt;
      if (f == o && i + 1 < flags.size()) arch = flags[i + 1];
      if (f.rfind(o + "=", 0) == 0) arch = f.substr(o.size() + 1);
    }
  }
  return arch;
}

bool has_include_flag(const std::vector<std::string>& flags) {
  for (const std::string& f : flags) {
    if (f.rfind("--include-path", 0) == 0 || f.rfind("-I", 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> user_flags(const runtime::CompileOptions& options) {
  // No --use_fast_math: results match the CPU backend's IEEE arithmetic
  // unless a kernel asks for it in extra_flags.
  std::vector<std::string> flags = options.flags;
  if (flags.empty()) flags = {"-std=c++17", "-default-device", "-lineinfo"};
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

[[noreturn, gnu::cold]] void throw_unsupported_arch(const NvrtcApi& api, Device device, int cc) {
  TILEJIT_THROW(kCompileError) << "cuda backend: NVRTC " << api.major << "." << api.minor << " ("
                               << api.path << ") cannot compile for " << device.str()
                               << ", compute capability " << cc / 10 << "." << cc % 10
                               << "; it supports sm_" << api.archs.front() << " to sm_"
                               << api.archs.back();
}

Target choose_target(const NvrtcApi& api, const std::vector<std::string>& flags, Device device) {
  if (std::string arch = arch_in_flags(flags); !arch.empty()) {
    return {arch, arch.rfind("compute_", 0) != 0};
  }
  const DriverApi* drv = driver_or_null();
  if (drv == nullptr || device.id < 0 || device.id >= drv->device_count) return {kDefaultArch, true};
  const DeviceState& s = device_state(device.id);
  const int cc = s.cc_major * 10 + s.cc_minor;
  if (std::binary_search(api.archs.begin(), api.archs.end(), cc)) {
    // sm_90a needs NVRTC 12.0; 11.8 knows sm_90 only.
    const bool specific = (cc == 90 && api.major >= 12) || cc == 100;
    return {"sm_" + std::to_string(cc) + (specific ? "a" : ""), true};
  }
  auto below = std::upper_bound(api.archs.begin(), api.archs.end(), cc);
  if (below == api.archs.begin()) throw_unsupported_arch(api, device, cc);
  return {"compute_" + std::to_string(*std::prev(below)), false};
}

// The first "<file>(<line>): error" (or "catastrophic error") in an NVRTC log
// whose file is `program` or `body_name`: {line, is_body}; {0, false} when
// none is.
std::pair<int, bool> first_error_line(const std::string& log, const std::string& program,
                                      const std::string& body_name) {
  for (const std::string& line : backend::split_lines(log)) {
    size_t at = line.find("): error");
    if (at == std::string::npos) at = line.find("): catastrophic error");
    if (at == std::string::npos) continue;
    const size_t open = line.rfind('(', at);
    if (open == std::string::npos) continue;
    const std::string number = line.substr(open + 1, at - open - 1);
    if (number.empty() || number.size() > 9 ||
        number.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const std::string file = line.substr(0, open);
    if (file == body_name) return {std::stoi(number), true};
    if (file == program) return {std::stoi(number), false};
  }
  return {0, false};
}

std::string join_flags(const std::vector<std::string>& flags) {
  std::string out;
  for (const std::string& f : flags) out += (out.empty() ? "" : " ") + f;
  return out;
}


std::string program_log(const NvrtcApi& api, nvrtcProgram prog) {
  size_t size = 0;
  if (api.nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (api.nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

[[noreturn, gnu::cold]] void throw_compile_failure(const NvrtcApi& api, nvrtcResult result,
                                                   const std::string& kernel_name,
                                                   const std::vector<std::string>& flags,
                                                   std::string log, const std::string& source,
                                                   const std::string& program) {
  std::ostringstream os;
  os << kernel_name << ": NVRTC " << api.major << "." << api.minor << " failed ("
     << api.nvrtcGetErrorString(result) << ")\noptions: " << join_flags(flags) << "\n";
  std::string kept;
  if (backend::keep_failed_source()) {
    kept = backend::write_kept_source(source, program, "cuda");
    if (kept.empty()) {
      os << "(TILEJIT_KEEP_FAILED=1, but the source could not be written under $TMPDIR)\n";
    } else {
      os << "kept: " << kept << " (TILEJIT_KEEP_FAILED=1)\n";
    }
  } else {
    os << "(set TILEJIT_KEEP_FAILED=1 to keep the source in a file)\n";
  }
  const std::string body_name = backend::body_file_name(kernel_name);
  auto [error_line, in_body] = first_error_line(log, program, body_name);
  os << backend::clip_log(std::move(log));
  backend::append_source_excerpt(os, source, error_line, in_body, program, body_name);
  throw CompileError(os.str(), source, std::move(kept));
}

// Destroys the program on every path out.
struct ProgramGuard {
  const NvrtcApi& api;
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) api.nvrtcDestroyProgram(&prog);
  }
};

}  // namespace

std::string program_name(const std::string& kernel_name) {
  std::string stem;
  for (char c : kernel_name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') stem += c;
  }
  if (stem.empty()) stem = "kernel";
  return stem.substr(0, 64) + ".cu";
}

std::string source_arch(const runtime::CompileOptions& options, Device device) {
  check_cuda_device(device, "source_arch");
  return choose_target(nvrtc(), user_flags(options), device).arch;
}

std::string toolchain_key(const runtime::CompileOptions& options, Device device) {
  check_cuda_device(device, "toolchain_key");
  const NvrtcApi& api = nvrtc();
  const std::vector<std::string> flags = user_flags(options);
  const Target target = choose_target(api, flags, device);
  std::ostringstream key;
  key << "cuda abi " << kAbiVersion << "; nvrtc " << api.major << "." << api.minor << "; arch "
      << target.arch << (target.cubin ? " cubin" : " ptx") << "; flags " << join_flags(flags);
  for (const std::string& dir : api.include_dirs) key << "; include " << dir;
  static const std::string headers = backend::device_files_digest(backend::cuda_device_files());
  key << "; device headers " << headers;
  return key.str();
}

std::string target_arch(const runtime::CompileOptions& options, Device device) {
  check_cuda_device(device, "target_arch");
  return choose_target(nvrtc(), user_flags(options), device).arch;
}

std::string compile_source(const std::string& source, const std::string& kernel_name,
                           const runtime::CompileOptions& options, Device device) {
  check_cuda_device(device, "compile");
  const NvrtcApi& api = nvrtc();
  std::vector<std::string> flags = user_flags(options);
  const Target target = choose_target(api, flags, device);
  if (arch_in_flags(flags).empty()) flags.insert(flags.begin(), "--gpu-architecture=" + target.arch);
  if (!has_include_flag(flags)) {
    TILEJIT_CHECK(!api.include_dirs.empty(), kCompileError)
        << kernel_name << ": cannot find the CUDA headers (cuda_bf16.h) for NVRTC " << api.major
        << "." << api.minor << " (" << api.path
        << "); set TILEJIT_CUDA_INCLUDE or CUDA_HOME to the toolkit";
    for (const std::string& dir : api.include_dirs) flags.push_back("--include-path=" + dir);
  }

  const std::string program = program_name(kernel_name);
  // The device headers by name (src/backend/common/device_files.h).
  std::vector<const char*> header_texts, header_names;
  for (const backend::DeviceFile& f : backend::cuda_device_files()) {
    header_texts.push_back(f.text.data());
    header_names.push_back(f.name.data());
  }
  ProgramGuard guard{api};
  nvrtcResult r = api.nvrtcCreateProgram(&guard.prog, source.c_str(), program.c_str(),
                                         int(header_texts.size()), header_texts.data(),
                                         header_names.data());
  if (r != NVRTC_SUCCESS) {
    TILEJIT_THROW(kCompileError) << kernel_name << ": nvrtcCreateProgram failed: "
                                 << api.nvrtcGetErrorString(r);
  }
  std::vector<const char*> argv;
  for (const std::string& f : flags) argv.push_back(f.c_str());
  r = api.nvrtcCompileProgram(guard.prog, int(argv.size()), argv.data());
  if (TILEJIT_UNLIKELY(r != NVRTC_SUCCESS)) {
    throw_compile_failure(api, r, kernel_name, flags, program_log(api, guard.prog), source, program);
  }

  // Note [Warpgroup gemms]: ptxas serialises wgmma it cannot pipeline (an
  // accumulator it had to move, a fence missing), a many-fold slowdown the
  // lowering must never cause; it fails the compile rather than run slow.
  // So does a wait or fence ptxas injects on its own (C7517, C7519: "is
  // injected ... registers ... GMMA"), which ends the overlap of a gemm left
  // running (measured: flash attention 601 -> 530 TFLOP/s).
  // A unit with the debug checks (kDebugChecksMarker: calls that print and
  // trap, which ptxas will not pipeline wgmma across) trades the speed for
  // the checks.
  const bool debug = source.find(kDebugChecksMarker) != std::string::npos;
  if (const std::string log = program_log(api, guard.prog);
      !debug && ((log.find("wgmma") != std::string::npos &&
                  log.find("serializ") != std::string::npos) ||
                 (log.find("is injected") != std::string::npos &&
                  log.find("GMMA") != std::string::npos))) {
    TILEJIT_THROW(kCompileError) << kernel_name << ": ptxas serialised the kernel's wgmma ("
                                 << backend::clip_log(log) << ")";
  }

  std::string binary(1, target.cubin ? 'C' : 'P');
  const size_t header = binary.size();
  size_t size = 0;
  r = target.cubin ? api.nvrtcGetCUBINSize(guard.prog, &size) : api.nvrtcGetPTXSize(guard.prog, &size);
  if (r == NVRTC_SUCCESS && size > 0) {
    binary.resize(header + size);
    r = target.cubin ? api.nvrtcGetCUBIN(guard.prog, binary.data() + header)
                     : api.nvrtcGetPTX(guard.prog, binary.data() + header);
  }
  if (TILEJIT_UNLIKELY(r != NVRTC_SUCCESS || size == 0)) {
    TILEJIT_THROW(kCompileError) << kernel_name << ": NVRTC compiled but returned no "
                                 << (target.cubin ? "cubin" : "PTX") << " for " << target.arch
                                 << " (" << api.nvrtcGetErrorString(r) << ")";
  }
  return binary;
}

}  // namespace tilejit::cuda
