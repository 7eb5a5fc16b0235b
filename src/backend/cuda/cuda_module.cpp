// The CUDA backend's load and launch stages: a binary of compile_source() and
// its KernelAbi -> a CUmodule in the device's primary context with one
// function per launch, and launches of them with the argument struct of Note
// [Kernel argument ABI].
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/common/slot_abi.h"
#include "backend/cuda/cuda_backend_internal.h"
#include "backend/cuda/cuda_driver.h"
#include "backend/cuda/tensor_maps.h"
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
  CudaModule(CUmodule module, std::vector<CUfunction> functions, int device,
             runtime::KernelAbi abi)
      : module_(module),
        device_(device),
        abi_(std::move(abi)),
        num_values_(abi_.num_values()),
        num_symbols_(abi_.num_symbols()),
        num_results_(abi_.num_results()),
        packer_(abi_),
        has_tensor_maps_(std::any_of(abi_.args.begin(), abi_.args.end(),
                                     [](const runtime::AbiArg& a) {
                                       return a.kind == runtime::AbiArgKind::kTensorMap;
                                     })),
        num_launches_(functions.size()),
        launches_(new Launch[functions.size()]) {
    for (size_t l = 0; l < num_launches_; ++l) {
      const runtime::AbiLaunch& a = abi_.launches[l];
      Launch& out = launches_[l];
      out.function = functions[l];
      for (int d = 0; d < 3; ++d) {
        out.grid[d] = a.grid[d];
        out.threads[d] = unsigned(a.threads[d]);
      }
      out.smem = a.smem;
      out.smem_bytes = a.smem_bytes;
      // Without opting in, static and dynamic shared memory share 48 KiB
      // (a kernel's static part: its mbarriers, Note [TMA copies]).
      int static_smem = 0;
      driver().cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, out.function);
      out.smem_limit.store(kDefaultSmemLimit - static_smem, std::memory_order_relaxed);
    }
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
    backend::check_launch_params(abi_, num_values_, num_symbols_, num_results_, p, "cuda");
    if (TILEJIT_UNLIKELY(p.device.type != DeviceType::kCUDA || p.device.id != device_)) {
      TILEJIT_THROW(kValueError) << "cuda launch: a kernel loaded on cuda:" << device_
                                 << " launched on " << p.device.str();
    }

    // Note [Kernel argument ABI]: the block, packed as the KernelAbi says.
    // 64-aligned: the tensor maps encoded into it are (Note [Tensor maps]).
    alignas(64) unsigned char block[runtime::KernelAbi::kMaxBlockBytes];
    packer_.pack(p.args, p.symbols, block);
    if (has_tensor_maps_) encode_tensor_maps(abi_, p.args, p.symbols, block);
    void* params[] = {block};

    ContextGuard guard(device_);
    const int64_t* results = p.results;
    for (size_t l = 0; l < num_launches_; ++l) {
      Launch& a = launches_[l];
      const int64_t gx = results[a.grid[0]], gy = results[a.grid[1]], gz = results[a.grid[2]];
      const int64_t smem = results[a.smem] + a.smem_bytes;
      if (TILEJIT_UNLIKELY(gx <= 0 || gy <= 0 || gz <= 0 || gx > INT32_MAX || gy > 65535 ||
                           gz > 65535 || smem < 0 || smem > INT32_MAX)) {
        if (gx == 0 || gy == 0 || gz == 0) {
          if (gx >= 0 && gy >= 0 && gz >= 0) continue;  // an empty grid runs no block, as on the CPU
        }
        throw_bad_launch(gx, gy, gz, smem, abi_.launches[l]);
      }
      if (smem > a.smem_limit.load(std::memory_order_acquire)) {
        raise_smem_limit(a, smem, guard.state());
      }
      const CUresult r = driver().cuLaunchKernel(
          a.function, unsigned(gx), unsigned(gy), unsigned(gz), a.threads[0], a.threads[1],
          a.threads[2], unsigned(smem), static_cast<CUstream>(p.stream), params, nullptr);
      if (TILEJIT_UNLIKELY(r != CUDA_SUCCESS)) throw_driver_error(r, "cuLaunchKernel", "cuda launch");
    }
  }

 private:
  [[noreturn, gnu::cold]] static void throw_bad_launch(int64_t gx, int64_t gy, int64_t gz,
                                                       int64_t smem, const runtime::AbiLaunch& a) {
    TILEJIT_THROW(kValueError) << "cuda launch: grid (" << gx << ", " << gy << ", " << gz
                               << ") with " << a.threads[0] * a.threads[1] * a.threads[2]
                               << " threads and " << smem
                               << " bytes of dynamic shared memory is outside what CUDA allows "
                                  "(grid x up to 2^31-1, y and z up to 65535, 1 to 1024 threads)";
  }

  // Opts the kernel in to `bytes` of dynamic shared memory. The limit only
  // grows, and is set once per increase: a launch that needs no more than
  // what was set already pays one atomic load.
  // One launch as launch() reads it: its function, where its extents are
  // among the results, its threads, and the shared memory it may use.
  struct Launch {
    CUfunction function = nullptr;
    int grid[3] = {0, 0, 0};
    int smem = 0;
    int64_t smem_bytes = 0;
    unsigned threads[3] = {1, 1, 1};
    std::atomic<int64_t> smem_limit{0};
  };

  [[gnu::cold]] void raise_smem_limit(Launch& launch, int64_t bytes, const DeviceState& state) {
    std::lock_guard<std::mutex> lock(smem_mutex_);
    if (bytes <= launch.smem_limit.load(std::memory_order_relaxed)) return;
    const CUfunction function = launch.function;
    int static_smem = 0;
    check(driver().cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function),
          "cuFuncGetAttribute");
    TILEJIT_CHECK(bytes + static_smem <= state.max_smem_optin, kValueError)
        << "cuda launch: " << bytes << " bytes of dynamic shared memory plus the kernel's "
        << static_smem << " bytes of static shared memory exceed the " << state.max_smem_optin
        << " bytes per block that cuda:" << device_ << " allows";
    const CUresult r = driver().cuFuncSetAttribute(
        function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes));
    if (r != CUDA_SUCCESS) {
      throw_driver_error(r, "cuFuncSetAttribute",
                         "cuda launch: raising the dynamic shared memory limit to " +
                             std::to_string(bytes) + " bytes");
    }
    launch.smem_limit.store(bytes, std::memory_order_release);
  }

  CUmodule module_;
  int device_;
  runtime::KernelAbi abi_;
  int num_values_;
  int num_symbols_;
  int num_results_;
  runtime::AbiPacker packer_;  // Note [Kernel ABI]: the one packing
  bool has_tensor_maps_;  // Note [Tensor maps]: encoded at each launch
  size_t num_launches_;
  std::unique_ptr<Launch[]> launches_;  // one per KernelAbi launch
  std::mutex smem_mutex_;
};

}  // namespace

std::unique_ptr<runtime::Module> load_module(const std::string& binary,
                                             const runtime::KernelAbi& abi, Device device) {
  check_cuda_device(device, "load");
  if (binary.empty()) throw_load_error("the binary is empty");
  const char tag = binary[0];
  if (tag != 'C' && tag != 'P') throw_load_error("the binary has an unknown tag byte");
  if (std::string problem = abi.problem(); !problem.empty()) {
    throw_load_error("its KernelAbi is not well formed: " + problem);
  }
  for (const runtime::AbiLaunch& l : abi.launches) {
    const int64_t threads = int64_t(l.threads[0]) * l.threads[1] * l.threads[2];
    if (threads > 1024) {
      throw_load_error("launch '" + l.entry + "' has " + std::to_string(threads) +
                       " threads per block; CUDA allows 1 to 1024");
    }
  }
  const char* code = binary.data() + 1;
  const size_t size = binary.size() - 1;
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
  std::vector<CUfunction> functions;
  for (const runtime::AbiLaunch& l : abi.launches) {
    CUfunction function = nullptr;
    r = api.cuModuleGetFunction(&function, module, l.entry.c_str());
    if (r != CUDA_SUCCESS) {
      api.cuModuleUnload(module);
      throw_driver_error(r, "cuModuleGetFunction",
                         "cuda backend: loading a kernel on " + device.str());
    }
    functions.push_back(function);
  }
  return std::make_unique<CudaModule>(module, std::move(functions), device.id, abi);
}

}  // namespace tilejit::cuda
