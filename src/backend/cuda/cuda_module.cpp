// The CUDA backend's load and launch stages: a binary of compile_source() ->
// a CUmodule in the device's primary context, and launches of its one
// kernel with the argument struct of Note [Kernel argument ABI].
#include <cuda.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_driver.h"
#include "tilejit/core/error.h"

namespace tilejit::cuda {
namespace {

// Dynamic shared memory a kernel may use without opting in.
constexpr int64_t kDefaultSmemLimit = 48 * 1024;
constexpr unsigned char kElfMagic[] = {0x7f, 'E', 'L', 'F'};

[[noreturn, gnu::cold]] void throw_load_error(const std::string& what) {
  TILEJIT_THROW(kRuntimeError) << "cuda backend: cannot load the kernel binary: " << what;
}

// Why a cubin's bytes cannot be a whole ELF file, or "". The driver would
// reject most damage itself; these checks make a truncated cache entry a
// clear error instead of whatever the driver makes of it.
std::string cubin_problem(const char* p, size_t size) {
  if (size < 64 || std::memcmp(p, kElfMagic, 4) != 0) {
    return "the cubin is not an ELF file (" + std::to_string(size) + " bytes)";
  }
  if (p[4] != 2) return "the cubin is not a 64-bit ELF file";
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  std::memcpy(&shoff, p + 0x28, 8);
  std::memcpy(&shentsize, p + 0x3a, 2);
  std::memcpy(&shnum, p + 0x3c, 2);
  if (shoff > size || uint64_t(shnum) * shentsize > size - shoff) {
    return "the cubin is truncated (its section headers end past its " + std::to_string(size) +
           " bytes)";
  }
  return "";
}

class CudaModule final : public runtime::Module {
 public:
  CudaModule(CUmodule module, CUfunction function, int device, ArgLayout layout)
      : module_(module), function_(function), device_(device), layout_(std::move(layout)) {
    for (int bytes : layout_.scalar_bytes) all_pointers_ = all_pointers_ && bytes == 0;
  }

  ~CudaModule() override {
    // At exit the driver may already be torn down; nothing to report then.
    try {
      ContextGuard guard(device_);
      driver().cuModuleUnload(module_);
    } catch (...) {
    }
  }
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  void launch(const runtime::LaunchParams& p) override {
    const int num_args = int(layout_.scalar_bytes.size());
    if (TILEJIT_UNLIKELY(p.num_args != num_args || p.num_symbols != layout_.num_symbols)) {
      TILEJIT_THROW(kInternalError) << "cuda launch: " << p.num_args << " arguments and "
                                    << p.num_symbols << " symbols for a kernel built for "
                                    << num_args << " and " << layout_.num_symbols;
    }
    if (TILEJIT_UNLIKELY(p.device.type != DeviceType::kCUDA || p.device.id != device_)) {
      TILEJIT_THROW(kValueError) << "cuda launch: a kernel loaded on cuda:" << device_
                                 << " launched on " << p.device.str();
    }
    const int64_t gx = p.grid[0], gy = p.grid[1], gz = p.grid[2];
    if (TILEJIT_UNLIKELY(gx <= 0 || gy <= 0 || gz <= 0 || gx > INT32_MAX || gy > 65535 ||
                         gz > 65535 || p.threads < 1 || p.threads > 1024 ||
                         p.dynamic_smem_bytes < 0 || p.dynamic_smem_bytes > INT32_MAX)) {
      if (gx == 0 || gy == 0 || gz == 0) {
        if (gx >= 0 && gy >= 0 && gz >= 0) return;  // an empty grid runs no block, as on the CPU
      }
      throw_bad_launch(p);
    }

    // Note [Kernel argument ABI]: pointers (or scalar bytes), then symbols.
    uint64_t slots[kMaxArgSlots];
    if (all_pointers_) {
      std::memcpy(slots, p.args, sizeof(void*) * size_t(num_args));
    } else {
      for (int k = 0; k < num_args; ++k) {
        const int bytes = layout_.scalar_bytes[size_t(k)];
        if (bytes == 0) {
          std::memcpy(&slots[k], &p.args[k], sizeof(void*));
        } else {
          slots[k] = 0;
          std::memcpy(&slots[k], p.args[k], size_t(bytes));
        }
      }
    }
    if (layout_.num_symbols > 0) {
      std::memcpy(&slots[num_args], p.symbols, sizeof(int64_t) * size_t(layout_.num_symbols));
    }
    void* params[] = {slots};

    ContextGuard guard(device_);
    if (p.dynamic_smem_bytes > kDefaultSmemLimit &&
        p.dynamic_smem_bytes > smem_limit_.load(std::memory_order_acquire)) {
      raise_smem_limit(p.dynamic_smem_bytes, guard.state());
    }
    const CUresult r = driver().cuLaunchKernel(
        function_, unsigned(gx), unsigned(gy), unsigned(gz), unsigned(p.threads), 1, 1,
        unsigned(p.dynamic_smem_bytes), static_cast<CUstream>(p.stream), params, nullptr);
    if (TILEJIT_UNLIKELY(r != CUDA_SUCCESS)) throw_driver_error(r, "cuLaunchKernel", "cuda launch");
  }

 private:
  [[noreturn, gnu::cold]] static void throw_bad_launch(const runtime::LaunchParams& p) {
    TILEJIT_THROW(kValueError) << "cuda launch: grid (" << p.grid[0] << ", " << p.grid[1] << ", "
                               << p.grid[2] << ") with " << p.threads << " threads and "
                               << p.dynamic_smem_bytes
                               << " bytes of dynamic shared memory is outside what CUDA allows "
                                  "(grid x up to 2^31-1, y and z up to 65535, 1 to 1024 threads)";
  }

  // Opts the kernel in to `bytes` of dynamic shared memory. The limit only
  // grows, and is set once per increase: a launch that needs no more than
  // what was set already pays one atomic load.
  [[gnu::cold]] void raise_smem_limit(int64_t bytes, const DeviceState& state) {
    std::lock_guard<std::mutex> lock(smem_mutex_);
    if (bytes <= smem_limit_.load(std::memory_order_relaxed)) return;
    int static_smem = 0;
    check(driver().cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function_),
          "cuFuncGetAttribute");
    TILEJIT_CHECK(bytes + static_smem <= state.max_smem_optin, kValueError)
        << "cuda launch: " << bytes << " bytes of dynamic shared memory plus the kernel's "
        << static_smem << " bytes of static shared memory exceed the " << state.max_smem_optin
        << " bytes per block that cuda:" << device_ << " allows";
    const CUresult r = driver().cuFuncSetAttribute(
        function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes));
    if (r != CUDA_SUCCESS) {
      throw_driver_error(r, "cuFuncSetAttribute",
                         "cuda launch: raising the dynamic shared memory limit to " +
                             std::to_string(bytes) + " bytes");
    }
    smem_limit_.store(bytes, std::memory_order_release);
  }

  CUmodule module_;
  CUfunction function_;
  int device_;
  ArgLayout layout_;
  bool all_pointers_ = true;  // no scalar slot: the pointers are copied at once
  std::mutex smem_mutex_;
  std::atomic<int64_t> smem_limit_{kDefaultSmemLimit};
};

}  // namespace

std::unique_ptr<runtime::Module> load_module(const std::string& binary, Device device) {
  check_cuda_device(device, "load");
  if (binary.empty()) throw_load_error("the binary is empty");
  const char tag = binary[0];
  if (tag != 'C' && tag != 'P') throw_load_error("the binary has an unknown tag byte");
  const size_t newline = binary.find('\n');
  ArgLayout layout;
  if (newline == std::string::npos || newline > 4096 ||
      !ArgLayout::parse(binary.substr(1, newline - 1), &layout)) {
    throw_load_error("the binary's header is missing or of another tilejit version");
  }
  const char* code = binary.data() + newline + 1;
  const size_t size = binary.size() - newline - 1;
  std::string ptx;  // NUL-terminated copy for the driver
  if (tag == 'C') {
    if (std::string problem = cubin_problem(code, size); !problem.empty()) throw_load_error(problem);
  } else {
    ptx.assign(code, size);
    while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
    if (ptx.empty() || ptx.find('\0') != std::string::npos) throw_load_error("the PTX is not text");
    code = ptx.c_str();
  }

  const DriverApi& api = driver();
  ContextGuard guard(device.id);
  CUmodule module = nullptr;
  CUresult r = api.cuModuleLoadData(&module, code);
  if (r != CUDA_SUCCESS) {
    const DeviceState& s = guard.state();
    throw_driver_error(r, "cuModuleLoadData",
                       "cuda backend: loading a " + std::string(tag == 'C' ? "cubin" : "PTX") +
                           " kernel on " + device.str() + " (compute capability " +
                           std::to_string(s.cc_major) + "." + std::to_string(s.cc_minor) +
                           ", driver CUDA " + std::to_string(api.driver_version / 1000) + "." +
                           std::to_string(api.driver_version % 1000 / 10) + ")");
  }
  CUfunction function = nullptr;
  r = api.cuModuleGetFunction(&function, module, kEntryName);
  if (r != CUDA_SUCCESS) {
    api.cuModuleUnload(module);
    throw_driver_error(r, "cuModuleGetFunction", "cuda backend: loading a kernel on " + device.str());
  }
  return std::make_unique<CudaModule>(module, function, device.id, std::move(layout));
}

}  // namespace tilejit::cuda
