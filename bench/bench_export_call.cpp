// Per-call cost of a CUDA export (README, "Shipping a kernel") against the
// bare launch: bench/noop_kernel.h's no-op kernel (3 inputs, 1 output, 4
// workspaces, 2 dynamic symbols, 128 threads) exported for target "cuda",
// loaded with dlopen and called through its C functions in a loop on one
// stream, and cuLaunchKernel of the same cubin (what the export embeds: the
// same unit, options and architecture) with the same block size on the same
// stream:
//   bare          cuLaunchKernel with preallocated buffers and a prebuilt
//                 argument block (the floor);
//   noop(...)     the exported <op> with the caller's workspace: checks,
//                 shapes, the block, the launch;
//   noop_auto     the same with the workspace from the library's pool.
// Each row is the median over 21 batches of 2000 calls of (host time of the
// batch + stream synchronize) / 2000, in ns; the paths' batches are
// interleaved round by round. Over the null driver (bench/null_driver) the
// rows are the host work alone. Plain C++ (no Google Benchmark).
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "export/dlpack_c.h"
#include "interleave.h"
#include "noop_kernel.h"

namespace {

using namespace tilejit;
using Clock = std::chrono::steady_clock;
constexpr int kBatch = 2000, kBatches = 21;
using bench::kM;
using bench::kN;

using namespace export_testing;
// The exported functions' C signatures (noop.h).
extern "C" {
typedef int (*OpFn)(const DLTensorC*, const DLTensorC*, const DLTensorC*, DLTensorC*, void*, void*);
typedef int (*AutoFn)(const DLTensorC*, const DLTensorC*, const DLTensorC*, DLTensorC*, void*,
                      const void*);
typedef int64_t (*BytesFn)(const DLTensorC*, const DLTensorC*, const DLTensorC*);
typedef int64_t (*PoolFn)(void);
typedef const char* (*ErrorFn)(void);
}

// The driver, opened here (nothing links libcuda: the bench builds where
// the toolkit has no stub library, and runs over the null driver).
struct Driver {
  decltype(&::cuGetErrorName) get_error_name;
  decltype(&::cuStreamCreate) stream_create;
  decltype(&::cuStreamSynchronize) stream_synchronize;
  decltype(&::cuModuleLoadData) module_load_data;
  decltype(&::cuModuleGetFunction) module_get_function;
  decltype(&::cuLaunchKernel) launch_kernel;
  decltype(&::cuDeviceGet) device_get;
  decltype(&::cuDeviceGetName) device_get_name;
} cu;

void open_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
    std::exit(1);
  }
  auto get = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(h, name));
    if (slot == nullptr) {
      std::fprintf(stderr, "libcuda.so.1 has no %s\n", name);
      std::exit(1);
    }
  };
  get(cu.get_error_name, "cuGetErrorName");
  get(cu.stream_create, "cuStreamCreate");
  get(cu.stream_synchronize, "cuStreamSynchronize");
  get(cu.module_load_data, "cuModuleLoadData");
  get(cu.module_get_function, "cuModuleGetFunction");
  get(cu.launch_kernel, "cuLaunchKernel");
  get(cu.device_get, "cuDeviceGet");
  get(cu.device_get_name, "cuDeviceGetName");
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    cu.get_error_name(r, &name);
    std::fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
    std::exit(1);
  }
}

template <typename T>
T symbol(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    std::fprintf(stderr, "the exported library has no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<T>(p);
}

std::vector<double> interleaved_ns(CUstream stream, const std::vector<std::function<void()>>& paths) {
  return bench::interleaved_ns(
      paths, [stream] { check(cu.stream_synchronize(stream), "cuStreamSynchronize"); }, kBatch,
      kBatches);
}

}  // namespace

int main() {
  runtime::Backend& backend = runtime::get_backend("cuda");
  if (!backend.available()) {
    std::printf("no CUDA device: skipped\n");
    return 0;
  }
  open_driver();
  const Kernel k = jit(bench::noop_kernel(), bench::noop_options("cuda"));
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/bench_export_call-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string path = dir + "/libnoop.so";
  export_library(k, path);
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  std::filesystem::remove_all(dir);  // mapped already
  const OpFn op = symbol<OpFn>(lib, "noop");
  const AutoFn op_auto = symbol<AutoFn>(lib, "noop_auto");
  const BytesFn op_bytes = symbol<BytesFn>(lib, "noop_workspace_bytes");
  const PoolFn op_pool = symbol<PoolFn>(lib, "noop_pool_bytes");
  const ErrorFn op_error = symbol<ErrorFn>(lib, "noop_last_error");

  // The jit path made the context current on this thread (the export uses
  // it, as a host application's own would be); one stream for every path.
  CUstream stream = nullptr;
  check(cu.stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  Tensor a = empty({kM, kN}, DataType::float32(), Device::cuda(0));
  Tensor b = empty({kN}, DataType::float32(), Device::cuda(0));
  Tensor c = empty({kM}, DataType::float32(), Device::cuda(0));
  Tensor d = empty({kM, kN}, DataType::float32(), Device::cuda(0));
  Tensor arena = empty({1 << 16}, DataType::uint8(), Device::cuda(0));
  char* ws = static_cast<char*>(arena.data());

  // The bare launch: the cubin the export embeds (the same unit compiled
  // with the same options for the same device), its tag byte stripped.
  const std::string binary = backend.compile(k.source(), "noop", k.compile_options(), Device::cuda(0));
  const std::string cubin = binary.substr(1);
  CUmodule module;
  CUfunction fn;
  check(cu.module_load_data(&module, cubin.data()), "cuModuleLoadData");
  check(cu.module_get_function(&fn, module, "tilejit_kernel"), "cuModuleGetFunction");
  struct Args {
    void* ptrs[8];
    int64_t syms[2];
  } args{{a.data(), b.data(), c.data(), d.data(), ws, ws + 256, ws + 512, ws + 8704}, {kM, kN}};
  void* params[] = {&args};
  const unsigned threads = unsigned(k.abi().launches.at(0).threads[0]);

  int64_t sa[2] = {kM, kN}, sb[1] = {kN}, sc[1] = {kM}, sd[2] = {kM, kN};
  auto dl = [](void* data, int64_t* shape, int ndim) {
    return DLTensorC{data, {2, 0}, ndim, {2, 32, 1}, shape, nullptr, 0};
  };
  const DLTensorC A = dl(a.data(), sa, 2), B = dl(b.data(), sb, 1), C = dl(c.data(), sc, 1);
  DLTensorC D = dl(d.data(), sd, 2);
  const int64_t ws_bytes = op_bytes(&A, &B, &C);
  if (ws_bytes < 0 || ws_bytes > (1 << 16)) {
    std::fprintf(stderr, "workspace bytes %lld: %s\n", (long long)ws_bytes, op_error());
    return 1;
  }
  for (int i = 0; i < 3; ++i) {  // warm: the module in this context, the pool's arena
    if (op(&A, &B, &C, &D, ws, stream) != 0 || op_auto(&A, &B, &C, &D, stream, nullptr) != 0) {
      std::fprintf(stderr, "the exported call failed: %s\n", op_error());
      return 1;
    }
  }
  const int64_t pool_before = op_pool();
  int failed = 0;
  const std::vector<double> t = interleaved_ns(stream, {
      [&] { check(cu.launch_kernel(fn, 1, 1, 1, threads, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel"); },
      [&] { failed |= op(&A, &B, &C, &D, ws, stream); },
      [&] { failed |= op_auto(&A, &B, &C, &D, stream, nullptr); },
  });
  if (failed != 0) {
    std::fprintf(stderr, "an exported call failed: %s\n", op_error());
    return 1;
  }
  const double bare = t[0], exported = t[1], automatic = t[2];
  std::printf("| path (one stream) | median ns/call | vs bare |\n|---|---|---|\n");
  std::printf("| bare cuLaunchKernel | %.0f | 1.00x |\n", bare);
  std::printf("| exported noop(A, B, C, D, workspace, stream) | %.0f | %.2fx |\n", exported,
              exported / bare);
  std::printf("| exported noop_auto(A, B, C, D, stream, NULL) (library pool) | %.0f | %.2fx |\n",
              automatic, automatic / bare);
  std::printf("library pool: %lld bytes before the timed calls, %lld after (0 allocations per call)\n",
              (long long)pool_before, (long long)op_pool());
  char name[128] = {};
  CUdevice dev;
  check(cu.device_get(&dev, 0), "cuDeviceGet");
  check(cu.device_get_name(name, sizeof name, dev), "cuDeviceGetName");
  std::printf("device: %s\n", name);
  if (std::strcmp(name, "null CUDA device") == 0) {
    std::printf("(bench/null_driver: launches do nothing; each row is host work per call, the "
                "ratios mean nothing)\n");
  }
  return 0;
}
