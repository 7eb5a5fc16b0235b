// Tile programs run on the GPU from the C++ builder, against the CPU
// target's results on the same inputs (skipped without a GPU; the Python
// suite, tests/python/test_tile_cuda.py, checks every program against torch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "kernels/bf16.h"
#include "tile/tile_kernels.h"
#include "tilejit/jit/kernel.h"
#include "tilejit/runtime/allocator.h"

namespace tilejit::cuda::testing {
namespace {

namespace ex = ::examples::tile;

Tensor on_device(const Tensor& host) {
  Tensor dev = runtime::empty(host.shape(), host.dtype(), Device::cuda(0));
  runtime::copy(host, dev);
  return dev;
}

std::vector<float> to_host_floats(const Tensor& t) {
  Tensor host = runtime::empty(t.shape(), t.dtype());
  runtime::copy(t, host);
  std::vector<float> out(size_t(host.numel()));
  std::memcpy(out.data(), host.data(), out.size() * sizeof(float));
  return out;
}

// The bf16 GEMM through the tensor cores into register accumulators with a
// 3-stage cp.async pipeline (all three checked in the generated source by
// test_tile_cuda_codegen.cpp), at a shape no tile divides.
TEST(CudaTileRun, Bf16GemmMatchesTheCpuTarget) {
  TILEJIT_SKIP_WITHOUT_GPU();
  ex::GemmConfig cfg;
  cfg.in = DataType::bfloat16();
  const PrimFunc f = ex::gemm(cfg);
  JitOptions o;
  o.out_idx = {2};
  o.target = "cuda";
  const Kernel gpu = jit(f, o);
  o.target = "cpu";
  const Kernel cpu = jit(f, o);

  const int64_t m = 300, n = 200, k = 136;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Tensor a = runtime::empty(std::vector<int64_t>{m, k}, DataType::bfloat16());
  Tensor b = runtime::empty(std::vector<int64_t>{k, n}, DataType::bfloat16());
  for (Tensor* t : {&a, &b}) {
    auto* p = static_cast<uint16_t*>(t->data());
    for (int64_t i = 0; i < t->numel(); ++i) p[i] = examples::to_bf16(u(rng));
  }
  const std::vector<float> want = to_host_floats(cpu(a, b)[0]);
  const std::vector<float> got = to_host_floats(gpu(on_device(a), on_device(b))[0]);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::fabs(got[i] - want[i])));
  // Both accumulate bf16 products in float; only the order differs.
  EXPECT_LT(worst, 1e-3);
}

}  // namespace
}  // namespace tilejit::cuda::testing
