// The host cost of a TMA descriptor (Note [Tensor maps] in
// src/backend/cuda/tma_copies.h): cuTensorMapEncodeTiled of a 2-D and a 4-D
// bf16 tensor, the maps a GEMM's and a flash attention's tile loads use,
// against cuLaunchKernel's floor measured in bench_cuda_call. Each row is
// the median over 21 batches of 20000 encodes.
//   g++ -O2 -std=c++17 bench/bench_tma_encode.cpp -I/usr/local/cuda/include -lcuda
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    cuGetErrorName(r, &name);
    std::fprintf(stderr, "%s failed: %s\n", what, name ? name : "?");
    std::exit(1);
  }
}

double encode_ns(void* address, int rank, const cuuint64_t* dims, const cuuint64_t* strides,
                 const cuuint32_t* box) {
  const cuuint32_t ones[5] = {1, 1, 1, 1, 1};
  CUtensorMap map;
  std::vector<double> samples;
  constexpr int kBatch = 20000;
  for (int b = 0; b < 21; ++b) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i) {
      check(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, cuuint32_t(rank), address,
                                   dims, strides, box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                   CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            "cuTensorMapEncodeTiled");
    }
    samples.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kBatch);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

int main() {
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUdeviceptr p;
  check(cuMemAlloc(&p, size_t(64) << 20), "cuMemAlloc");
  void* address = reinterpret_cast<void*>(p);
  const cuuint64_t dims2[] = {4096, 4096}, strides2[] = {8192};
  const cuuint32_t box2[] = {64, 128};
  const cuuint64_t dims4[] = {128, 32, 4096, 4}, strides4[] = {256, 8192, 33554432};
  const cuuint32_t box4[] = {64, 1, 128, 1};
  std::printf("| tensor map | ns per encode |\n|---|---|\n");
  std::printf("| 2-D 4096 x 4096, box 128 x 64 | %.0f |\n", encode_ns(address, 2, dims2, strides2, box2));
  std::printf("| 4-D 4 x 4096 x 32 x 128, box 1 x 128 x 1 x 64 | %.0f |\n",
              encode_ns(address, 4, dims4, strides4, box4));
  return 0;
}
