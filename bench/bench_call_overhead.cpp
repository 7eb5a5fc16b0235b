// Per-call overhead of tilejit on the CPU: a 1-block no-op kernel with 3
// inputs, 1 output, 4 workspaces and 2 dynamic symbols,
//  - Direct:       its compiled entry point called with preallocated buffers
//                  (the floor: what a hand-written caller pays);
//  - SeedApproach: a fresh allocation for the output and every workspace on
//                  every call, then the direct call (what reallocating
//                  frameworks pay);
//  - Tilejit:      kernel(a, b, c): checks, symbol solving, output allocation,
//                  one pooled arena lease, launch.
// tilejit's own work per call is Tilejit - Direct. Run:
//   build/bench/bench_call_overhead --benchmark_repetitions=10 \
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "noop_kernel.h"

namespace {

using namespace tilejit;
// The generated entry (backend/cpu/cpu_backend_internal.h): the argument
// block (Note [Slot layout]: a pointer per parameter, then the symbols), the
// grid, the blocks to run, and where a block's exception goes, which the
// no-op body never throws.
using FaultFn = void (*)(void*, int, const char*, const char*) noexcept;
using Entry = int64_t (*)(const void*, const int64_t*, int64_t, int64_t, FaultFn, void*);
struct Block {
  void* ptrs[8];
  int64_t syms[2];
};

using bench::kM;
using bench::kN;

struct Fixture {
  Kernel kernel;
  Entry entry = nullptr;
  Tensor a, b, c;
  Fixture() {
    kernel = jit(bench::noop_kernel(), bench::noop_options("cpu"));
    // The same translation unit, compiled and opened by hand: the direct path.
    auto& backend = runtime::get_backend("cpu");
    const std::string so = backend.compile(kernel.source(), "noop", {}, Device::cpu());
    char path[] = "/tmp/tilejit_bench_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0 || write(fd, so.data(), so.size()) != ssize_t(so.size())) std::abort();
    close(fd);
    void* lib = dlopen(path, RTLD_NOW);
    unlink(path);
    if (!lib) std::abort();
    entry = reinterpret_cast<Entry>(dlsym(lib, "tilejit_entry"));
    if (!entry) std::abort();
    a = empty({kM, kN}, DataType::float32());
    b = empty({kN}, DataType::float32());
    c = empty({kM}, DataType::float32());
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void Direct(benchmark::State& state) {
  Fixture& f = fixture();
  Tensor d = empty({kM, kN}, DataType::float32());
  Tensor arena = empty({1 << 16}, DataType::uint8());
  char* ws = static_cast<char*>(arena.data());
  const Block block{{f.a.data(), f.b.data(), f.c.data(), d.data(), ws, ws + 256, ws + 512, ws + 8704},
                    {kM, kN}};
  const int64_t grid[3] = {1, 1, 1};
  for (auto _ : state) {
    f.entry(&block, grid, 0, 1, nullptr, nullptr);
    benchmark::ClobberMemory();
  }
}

void SeedApproach(benchmark::State& state) {
  Fixture& f = fixture();
  const int64_t grid[3] = {1, 1, 1};
  for (auto _ : state) {
    Tensor d = empty({kM, kN}, DataType::float32());
    Tensor w1 = empty({kM}, DataType::float32());
    Tensor w2 = empty({kN}, DataType::float32());
    Tensor w3 = empty({kM, kN}, DataType::float32());
    Tensor w4 = empty({64}, DataType::int32());
    const Block block{{f.a.data(), f.b.data(), f.c.data(), d.data(), w1.data(), w2.data(),
                       w3.data(), w4.data()},
                      {kM, kN}};
    f.entry(&block, grid, 0, 1, nullptr, nullptr);
    benchmark::DoNotOptimize(d.data());
  }
}

void Tilejit(benchmark::State& state) {
  Fixture& f = fixture();
  const auto before = runtime::WorkspacePool::get(runtime::get_backend("cpu"), Device::cpu()).stats();
  for (auto _ : state) {
    Tensor d = f.kernel(f.a, f.b, f.c);
    benchmark::DoNotOptimize(d.data());
  }
  const auto after = runtime::WorkspacePool::get(runtime::get_backend("cpu"), Device::cpu()).stats();
  state.counters["pool_allocs_per_call"] =
      double(after.device_allocs - before.device_allocs) / double(state.iterations());
}

BENCHMARK(Direct);
BENCHMARK(SeedApproach);
BENCHMARK(Tilejit);

}  // namespace

BENCHMARK_MAIN();
