// The tile-language GEMM (examples/tile/tile_kernels.h, TileLang's README
// program built with the C++ builder) on the CPU: median time of C = A @ B
// at M = N = K = 1024 (or the size given), f32 and bf16 inputs with f32
// accumulation, 128 x 128 x 64 tiles.
//
//   bench_tile_gemm [size] [threads] [repeats]
//
// Prints one line per dtype: "tile_gemm <dtype> <size>^3 threads=<t>:
// median <ms> ms, <GFLOP/s>" and, first, the time from the factory call to a
// callable kernel (the front end, the lowering and the host compiler; the
// disk cache is off for it). bench/bench_tile_gemm.sh runs it beside numpy.
#include <tilejit/backend/cpu.h>
#include <tilejit/tilejit.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/bf16.h"
#include "tile/tile_kernels.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void run(tilejit::DataType dtype, int64_t n, int repeats) {
  using namespace tilejit;
  examples::tile::GemmConfig cfg;
  cfg.in = dtype;
  JitOptions options;
  options.out_idx = {2};
  options.target = "cpu";
  options.disk_cache = false;
  const Clock::time_point t0 = Clock::now();
  const Kernel k = jit(examples::tile::gemm(cfg), options);
  Tensor a = empty({n, n}, dtype), b = empty({n, n}, dtype);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (Tensor* t : {&a, &b}) {
    for (int64_t i = 0; i < t->numel(); ++i) {
      if (dtype == DataType::float32()) {
        t->data_as<float>()[i] = dist(rng);
      } else {
        t->data_as<uint16_t>()[i] = examples::to_bf16(dist(rng));
      }
    }
  }
  Tensor c = k(a, b);  // compiles
  const double first = seconds_since(t0);
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    const Clock::time_point t = Clock::now();
    c = k(a, b);
    times.push_back(seconds_since(t));
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("tile_gemm %s %lld^3 threads=%d: median %.2f ms, %.1f GFLOP/s (first call %.2f s)\n",
              dtype.name().c_str(), static_cast<long long>(n), cpu::num_threads(), median * 1e3,
              2.0 * double(n) * double(n) * double(n) / median / 1e9, first);
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1024;
  if (argc > 2) tilejit::cpu::set_num_threads(std::atoi(argv[2]));
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 15;
  run(tilejit::DataType::float32(), n, repeats);
  run(tilejit::DataType::bfloat16(), n, repeats);
  return 0;
}
