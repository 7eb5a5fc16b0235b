// Tile programs run on the GPU from the C++ builder, against the CPU
// target's results on the same inputs (skipped without a GPU; the Python
// suite, tests/python/test_tile_cuda.py, checks every program against torch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "kernels/bf16.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/tile_builder.h"
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

// --- NaN in max and min reductions ------------------------------------------

// Note [NaN in max and min]: T.reduce_max / _min / _absmax return NaN where
// an element they reduce is NaN, wherever it sits, on the GPU as on the CPU
// target: over a tile in memory (reduce.h) in either dimension, and over a
// GEMM's register accumulator (mma_acc.h: a thread's registers, the
// shuffles across its quad and, with two warps across a row, the scratch
// where they meet).

using ir::Buffer;
using ir::Expr;
using ir::Scope;
using ir::TileBuilder;
using ir::whole;

const ir::ReduceKind kMaxMinKinds[] = {ir::ReduceKind::kMax, ir::ReduceKind::kMin,
                                       ir::ReduceKind::kAbsMax};

// Both kernels of f: the GPU's and the CPU target's.
std::pair<Kernel, Kernel> gpu_and_cpu(const ir::PrimFunc& f) {
  JitOptions o;
  o.out_idx = {-1};
  o.target = "cuda";
  Kernel gpu = jit(f, o);
  o.target = "cpu";
  return {std::move(gpu), jit(f, o)};
}

// got equals want element for element, NaN where want is NaN.
void expect_same(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i << ": " << got[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << i;
    }
  }
}

constexpr int64_t kSide = 40, kNanAt = 3;  // the NaN's row (dim 1) or column (dim 0)

ir::PrimFunc reduce_in_memory(ir::ReduceKind kind, int dim) {
  TileBuilder b("nan_reduce");
  const Buffer X = b.tensor_param("X", {Expr(kSide), Expr(kSide)}, DataType::float32());
  const Buffer Y = b.tensor_param("Y", {Expr(kSide)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {128});
  const Buffer s = b.alloc("s", {kSide, kSide}, DataType::float32(), Scope::kShared);
  const Buffer d = b.alloc("d", {kSide}, DataType::float32(), Scope::kFragment);
  b.copy(whole(X), whole(s));
  b.reduce(kind, whole(s), whole(d), dim);
  b.copy(whole(d), whole(Y));
  b.end_kernel();
  return b.finish();
}

TEST(CudaTileRun, ReductionsInMemoryKeepNaN) {
  TILEJIT_SKIP_WITHOUT_GPU();
  for (ir::ReduceKind kind : kMaxMinKinds) {
    for (int dim : {0, 1}) {
      auto [gpu, cpu] = gpu_and_cpu(reduce_in_memory(kind, dim));
      for (int64_t at : {int64_t(0), kSide / 2, kSide - 1}) {
        SCOPED_TRACE(::testing::Message() << ir::reduce_kind_name(kind) << " dim " << dim
                                          << " NaN at " << at);
        Tensor x = runtime::empty(std::vector<int64_t>{kSide, kSide}, DataType::float32());
        float* xs = static_cast<float*>(x.data());
        for (int64_t i = 0; i < kSide * kSide; ++i) xs[i] = float((i * 37) % 101) - 50.f;
        xs[dim == 1 ? kNanAt * kSide + at : at * kSide + kNanAt] = std::nanf("");
        const std::vector<float> want = to_host_floats(cpu(x)[0]);
        ASSERT_TRUE(std::isnan(want[size_t(kNanAt)]));
        expect_same(to_host_floats(gpu(on_device(x))[0]), want);
      }
    }
  }
}

// C = A B in registers (bf16 inputs, f32 accumulator, 4 warps as 2 x 2 or,
// with policy FullRow, 4 x 1), then Y = reduce(C) over its rows.
ir::PrimFunc reduce_accumulator(ir::ReduceKind kind, int policy) {
  TileBuilder b("nan_accumulator");
  const DataType bf16 = DataType::bfloat16(), f32 = DataType::float32();
  const Buffer A = b.tensor_param("A", {Expr(64), Expr(16)}, bf16);
  const Buffer B = b.tensor_param("B", {Expr(16), Expr(64)}, bf16);
  const Buffer Y = b.tensor_param("Y", {Expr(64)}, f32);
  b.begin_kernel({Expr(1)}, {128});
  const Buffer A_s = b.alloc("A_s", {64, 16}, bf16, Scope::kShared);
  const Buffer B_s = b.alloc("B_s", {16, 64}, bf16, Scope::kShared);
  const Buffer C = b.alloc("C", {64, 64}, f32, Scope::kFragment);
  const Buffer m = b.alloc("m", {64}, f32, Scope::kFragment);
  b.copy(whole(A), whole(A_s));
  b.copy(whole(B), whole(B_s));
  b.gemm(whole(A_s), whole(B_s), whole(C), false, false, /*clear_accum=*/true, policy);
  b.reduce(kind, whole(C), whole(m), 1);
  b.copy(whole(m), whole(Y));
  b.end_kernel();
  return b.finish();
}

Tensor bf16_matrix(int64_t rows, int64_t cols, unsigned seed) {
  Tensor t = runtime::empty(std::vector<int64_t>{rows, cols}, DataType::bfloat16());
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-16, 16);
  auto* p = static_cast<uint16_t*>(t.data());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = examples::to_bf16(float(d(rng)) / 8.f);
  return t;
}

TEST(CudaTileRun, ReductionsOfARegisterAccumulatorKeepNaN) {
  TILEJIT_SKIP_WITHOUT_GPU();
  const uint16_t nan = examples::to_bf16(std::nanf(""));
  for (ir::ReduceKind kind : kMaxMinKinds) {
    for (int policy : {0, 1}) {
      auto [gpu, cpu] = gpu_and_cpu(reduce_accumulator(kind, policy));
      ASSERT_NE(gpu.source().find("tilejit::cuda::acc_reduce_rows"), std::string::npos)
          << gpu.source();
      // -1: no NaN; 64 + j: NaN in B[0, j] (column j of C, so every row);
      // else NaN in A[r, 0] (row r of C alone).
      for (int64_t where : {int64_t(-1), int64_t(5), int64_t(64), int64_t(64 + 31),
                            int64_t(64 + 63)}) {
        SCOPED_TRACE(::testing::Message() << ir::reduce_kind_name(kind) << " policy " << policy
                                          << " NaN case " << where);
        Tensor a = bf16_matrix(64, 16, 1), b = bf16_matrix(16, 64, 2);
        if (where >= 64) static_cast<uint16_t*>(b.data())[where - 64] = nan;
        else if (where >= 0) static_cast<uint16_t*>(a.data())[where * 16] = nan;
        const std::vector<float> want = to_host_floats(cpu(a, b)[0]);
        const std::vector<float> got = to_host_floats(gpu(on_device(a), on_device(b))[0]);
        expect_same(got, want);
        if (where >= 64) {
          for (float v : got) EXPECT_TRUE(std::isnan(v)) << v;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tilejit::cuda::testing
