// Per-call cost on a CUDA device of a 1-block no-op kernel with 3 inputs,
// 1 output, 4 workspaces and 2 dynamic symbols:
//   bare     cuLaunchKernel of the same cubin with preallocated buffers and a
//            prebuilt argument struct (the floor);
//   tilejit  kernel(a, b, c): checks, symbols, output allocation, pooled
//            workspace lease, launch;
//   tilejit(out=)  the same with a caller-supplied output;
//   seed     a fresh allocation for the output and each workspace on every
//            call, then the bare launch.
// Each row is the median over 21 batches of 2000 calls of (host time of the
// batch + stream synchronize) / 2000; the paths' batches are interleaved
// round by round. Plain C++ (no Google Benchmark), so it
// builds wherever the toolkit is.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "interleave.h"
#include "noop_kernel.h"

namespace {

using namespace tilejit;
using Clock = std::chrono::steady_clock;
constexpr int kBatch = 2000, kBatches = 21;
using bench::kM;
using bench::kN;

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
    std::exit(1);
  }
}

template <typename F>
double per_call_us(F&& body) {
  std::vector<double> samples;
  for (int b = 0; b < kBatches; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i) body();
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kBatch);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// Medians per path (bench/interleave.h), in microseconds.
std::vector<double> interleaved_us(const std::vector<std::function<void()>>& paths) {
  std::vector<double> t = bench::interleaved_ns(
      paths, [] { check(cuCtxSynchronize(), "cuCtxSynchronize"); }, kBatch, kBatches);
  for (double& x : t) x /= 1000;
  return t;
}

}  // namespace

// `bench_cuda_call count <abc|out> <n>`: only `n` calls of one path after
// the warm-up, nothing timed, for an instruction counter
// (scripts/count_call_instructions.sh runs it under callgrind for two `n`
// and divides the difference by the calls).
int main(int argc, char** argv) {
  const bool count_mode = argc == 4 && std::strcmp(argv[1], "count") == 0;
  runtime::Backend& backend = runtime::get_backend("cuda");
  if (!backend.available()) {
    std::printf("no CUDA device: skipped\n");
    return 0;
  }
  const PrimFunc f = bench::noop_kernel();
  const JitOptions o = bench::noop_options("cuda");
  const Kernel k = jit(f, o);
  Tensor a = empty({kM, kN}, DataType::float32(), Device::cuda(0));
  Tensor b = empty({kN}, DataType::float32(), Device::cuda(0));
  Tensor c = empty({kM}, DataType::float32(), Device::cuda(0));

  // The same translation unit as a bare module: strip the binary's tag byte
  // (see src/backend/cuda/cuda_backend_internal.h).
  const std::string binary = backend.compile(k.source(), "noop", {}, Device::cuda(0));
  const std::string cubin = binary.substr(1);
  CUmodule module;
  CUfunction fn;
  check(cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  check(cuModuleGetFunction(&fn, module, "tilejit_kernel"), "cuModuleGetFunction");
  Tensor d = empty({kM, kN}, DataType::float32(), Device::cuda(0));
  Tensor arena = empty({1 << 16}, DataType::uint8(), Device::cuda(0));
  char* ws = static_cast<char*>(arena.data());
  struct Args {
    void* ptrs[8];
    int64_t syms[2];
  } args{{a.data(), b.data(), c.data(), d.data(), ws, ws + 256, ws + 512, ws + 8704}, {kM, kN}};
  void* params[] = {&args};

  auto& pool = runtime::WorkspacePool::get(backend, Device::cuda(0));
  k(a, b, c);  // warm
  const Tensor outs[] = {d};
  CallOptions with_out;
  with_out.out = outs;
  const Arg call_args[] = {Arg(a), Arg(b), Arg(c)};
  // The same signature with every parameter an input: binding and launch
  // only, no pool, no output.
  JitOptions all_inputs;
  all_inputs.target = "cuda";
  const Kernel k_all = jit(f, all_inputs);
  Tensor w1 = empty({kM}, DataType::float32(), Device::cuda(0));
  Tensor w2 = empty({kN}, DataType::float32(), Device::cuda(0));
  Tensor w3 = empty({kM, kN}, DataType::float32(), Device::cuda(0));
  Tensor w4 = empty({64}, DataType::int32(), Device::cuda(0));
  const Arg all_args[] = {Arg(a), Arg(b), Arg(c), Arg(d), Arg(w1), Arg(w2), Arg(w3), Arg(w4)};
  k_all.call(all_args);  // warm

  if (count_mode) {
    const long n = std::strtol(argv[3], nullptr, 10);
    const bool with_out_path = std::strcmp(argv[2], "out") == 0;
    for (long i = 0; i < n; ++i) {
      if (with_out_path) {
        k.call(call_args, with_out);
      } else {
        Tensor out = k(a, b, c);
      }
    }
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    return 0;
  }
  const auto before = pool.stats();
  const std::vector<double> t = interleaved_us({
      [&] { check(cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel"); },
      [&] { Tensor out = k(a, b, c); },
      [&] { k.call(call_args, with_out); },
      [&] { k_all.call(all_args); },
      [&] {
        Tensor out = empty({kM, kN}, DataType::float32(), Device::cuda(0));
        Tensor v1 = empty({kM}, DataType::float32(), Device::cuda(0));
        Tensor v2 = empty({kN}, DataType::float32(), Device::cuda(0));
        Tensor v3 = empty({kM, kN}, DataType::float32(), Device::cuda(0));
        Tensor v4 = empty({64}, DataType::int32(), Device::cuda(0));
        Args fresh{{a.data(), b.data(), c.data(), out.data(), v1.data(), v2.data(), v3.data(), v4.data()},
                   {kM, kN}};
        void* p[] = {&fresh};
        check(cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, nullptr, p, nullptr), "cuLaunchKernel");
      },
  });
  const auto after = pool.stats();
  const double bare = t[0], tj = t[1], tj_out = t[2], bind_launch = t[3], seed = t[4];
  // Where the time goes: the pieces of a call, each alone.
  CUstream legacy = nullptr;
  const double is_capturing = per_call_us([&] {
    CUstreamCaptureStatus st;
    check(cuStreamIsCapturing(legacy, &st), "cuStreamIsCapturing");
  });
  const double ctx_get = per_call_us([&] {
    CUcontext ctx;
    check(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
  });
  const double lease = per_call_us([&] {
    auto l = pool.acquire(9216, {pool.device(), nullptr, false});
    pool.release(l, nullptr);
  });
  const double alloc_free = per_call_us([&] {
    Tensor out = empty({kM, kN}, DataType::float32(), Device::cuda(0));
  });
  const double checks = per_call_us([&] { (void)k.workspace_bytes(call_args); });
  const double calls = 2.0 * kBatch * kBatches;  // with and without out=
  std::printf("| path | median us/call | vs bare |\n|---|---|---|\n");
  std::printf("| bare cuLaunchKernel | %.3f | 1.00x |\n", bare);
  std::printf("| tilejit kernel(a, b, c) | %.3f | %.2fx |\n", tj, tj / bare);
  std::printf("| tilejit with out= | %.3f | %.2fx |\n", tj_out, tj_out / bare);
  std::printf("| tilejit, all 8 parameters as inputs (bind + launch only) | %.3f | %.2fx |\n",
              bind_launch, bind_launch / bare);
  std::printf("| seed: allocate output + 4 workspaces, launch | %.3f | %.2fx |\n", seed, seed / bare);
  std::printf("\n| piece | median us |\n|---|---|\n| cuStreamIsCapturing | %.3f |\n"
              "| cuCtxGetCurrent | %.3f |\n| pool acquire + release | %.3f |\n"
              "| output empty() + free | %.3f |\n| checks + shapes (workspace_bytes) | %.3f |\n",
              is_capturing, ctx_get, lease, alloc_free, checks);
  std::printf("pool over %.0f tilejit calls: %llu device allocations, %llu hits\n", calls,
              (unsigned long long)(after.device_allocs - before.device_allocs),
              (unsigned long long)(after.hits - before.hits));
  char name[128] = {};
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
  std::printf("device: %s\n", name);
  if (std::strcmp(name, "null CUDA device") == 0) {
    std::printf("(bench/null_driver: launches do nothing; each tilejit row is tilejit's own host "
                "work per call, the ratios mean nothing)\n");
  }
  return 0;
}
