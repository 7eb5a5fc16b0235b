// The tile-language examples built with the C++ builder
// (examples/tile/tile_kernels.h), run on the CPU against naive C++
// references at several shapes, tiles that do not divide them included.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kernels/bf16.h"
#include "tile/tile_kernels.h"

namespace {

using namespace tilejit;

uint16_t to_f16(float v) {
  const _Float16 h = static_cast<_Float16>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

float from_f16(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}

Tensor random_tensor(std::initializer_list<int64_t> shape, DataType dtype, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  Tensor t = empty(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    // Multiples of 1/64: exact in every input dtype, so only the kernels'
    // accumulation order differs from the references'.
    const float v = std::round(dist(rng) * 64.f) / 64.f;
    if (dtype == DataType::float32()) {
      t.data_as<float>()[i] = v;
    } else if (dtype == DataType::bfloat16()) {
      t.data_as<uint16_t>()[i] = examples::to_bf16(v);
    } else {
      t.data_as<uint16_t>()[i] = to_f16(v);
    }
  }
  return t;
}

float element(const Tensor& t, int64_t i) {
  if (t.dtype() == DataType::float32()) return t.data_as<float>()[i];
  if (t.dtype() == DataType::bfloat16()) return examples::from_bf16(t.data_as<uint16_t>()[i]);
  return from_f16(t.data_as<uint16_t>()[i]);
}

JitOptions options(IndexSpec out_idx, IndexSpec workspace_idx = {}) {
  JitOptions o;
  o.out_idx = std::move(out_idx);
  o.workspace_idx = std::move(workspace_idx);
  o.target = "cpu";
  return o;
}

TEST(TileExamples, ElementwiseAdd) {
  const Kernel add = jit(examples::tile::elementwise_add(DataType::float32()), options({2}));
  std::mt19937 rng(1);
  for (auto [m, n] : {std::pair<int64_t, int64_t>{32, 64}, {1, 1}, {33, 65}, {100, 7}, {64, 200}}) {
    Tensor a = random_tensor({m, n}, DataType::float32(), rng);
    Tensor b = random_tensor({m, n}, DataType::float32(), rng);
    Tensor c = add(a, b);
    for (int64_t i = 0; i < m * n; ++i) {
      ASSERT_EQ(c.data_as<float>()[i], a.data_as<float>()[i] + b.data_as<float>()[i])
          << m << "x" << n << " at " << i;
    }
  }
}

TEST(TileExamples, ElementwiseAddBf16) {
  const Kernel add = jit(examples::tile::elementwise_add(DataType::bfloat16()), options({2}));
  std::mt19937 rng(2);
  Tensor a = random_tensor({45, 70}, DataType::bfloat16(), rng);
  Tensor b = random_tensor({45, 70}, DataType::bfloat16(), rng);
  Tensor c = add(a, b);
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float want = examples::from_bf16(examples::to_bf16(element(a, i) + element(b, i)));
    ASSERT_EQ(element(c, i), want) << i;
  }
}

TEST(TileExamples, ElementwiseAdd1dGuardsTheLastBlock) {
  const Kernel add = jit(examples::tile::elementwise_add_1d(), options({2}));
  std::mt19937 rng(3);
  for (int64_t n : {1, 255, 256, 257, 1000}) {
    Tensor a = random_tensor({n}, DataType::float32(), rng);
    Tensor b = random_tensor({n}, DataType::float32(), rng);
    Tensor c = add(a, b);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(c.data_as<float>()[i], a.data_as<float>()[i] + b.data_as<float>()[i]) << n;
    }
  }
}

std::vector<double> matmul(const Tensor& a, const Tensor& b, int64_t m, int64_t n, int64_t k) {
  std::vector<double> c(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      const double x = element(a, i * k + p);
      for (int64_t j = 0; j < n; ++j) c[size_t(i * n + j)] += x * element(b, p * n + j);
    }
  }
  return c;
}

void check_gemm(const Kernel& kernel, DataType in, int64_t m, int64_t n, int64_t k, std::mt19937& rng) {
  Tensor a = random_tensor({m, k}, in, rng);
  Tensor b = random_tensor({k, n}, in, rng);
  Tensor c = kernel(a, b);
  ASSERT_EQ(c.shape(0), m);
  ASSERT_EQ(c.shape(1), n);
  const std::vector<double> want = matmul(a, b, m, n, k);
  double err = 0;
  for (int64_t i = 0; i < m * n; ++i) err = std::max(err, std::abs(double(element(c, i)) - want[size_t(i)]));
  EXPECT_LT(err, 1e-5 * double(k) + 1e-6) << in.name() << " M=" << m << " N=" << n << " K=" << k;
}

const int64_t kGemmShapes[][3] = {{128, 128, 64}, {256, 128, 192}, {1, 1, 1}, {130, 129, 65},
                                  {7, 300, 33}, {200, 5, 100}};

TEST(TileExamples, GemmF32) {
  const Kernel k = jit(examples::tile::gemm({}), options({2}));
  std::mt19937 rng(4);
  for (const auto& s : kGemmShapes) check_gemm(k, DataType::float32(), s[0], s[1], s[2], rng);
}

TEST(TileExamples, GemmHalfInputsAccumulateInF32) {
  for (DataType in : {DataType::bfloat16(), DataType::float16()}) {
    examples::tile::GemmConfig cfg;
    cfg.in = in;
    cfg.block_m = 64;
    cfg.block_n = 64;
    cfg.block_k = 32;
    const Kernel k = jit(examples::tile::gemm(cfg), options({2}));
    std::mt19937 rng(5);
    for (const auto& s : kGemmShapes) check_gemm(k, in, s[0], s[1], s[2], rng);
  }
}

// TileLang's autotuning GEMM, C = A B^T: the CPU ignores T.use_swizzle, so
// every block order gives the same bits.
TEST(TileExamples, AutotuneGemmIsTheSameInEveryBlockOrder) {
  using tilejit::ir::RasterOrder;
  const DataType f32 = DataType::float32();
  const int64_t m = 130, n = 70, k = 45;
  std::mt19937 rng(6);
  Tensor a = random_tensor({m, k}, f32, rng), b = random_tensor({n, k}, f32, rng);
  std::vector<double> want(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) {
        want[size_t(i * n + j)] += double(element(a, i * k + p)) * element(b, j * k + p);
      }
    }
  }
  std::vector<float> first;
  for (const auto& [raster, order] : {std::pair{false, RasterOrder::kRow},
                                      std::pair{true, RasterOrder::kRow},
                                      std::pair{true, RasterOrder::kColumn}}) {
    examples::tile::AutotuneGemmConfig cfg;
    cfg.block_m = 32, cfg.block_n = 64, cfg.block_k = 16, cfg.stages = 2, cfg.threads = 128;
    cfg.dtype = f32, cfg.enable_rasteration = raster, cfg.order = order;
    const Kernel kernel = jit(examples::tile::gemm_autotune(cfg), options({2}));
    Tensor c = kernel(a, b);
    const float* got = c.data_as<float>();
    double err = 0;
    for (int64_t i = 0; i < m * n; ++i) err = std::max(err, std::abs(got[i] - want[size_t(i)]));
    EXPECT_LT(err, 1e-5 * double(k)) << "rasterised " << raster;
    if (first.empty()) {
      first.assign(got, got + m * n);
    } else {
      EXPECT_EQ(std::memcmp(first.data(), got, first.size() * sizeof(float)), 0)
          << "rasterised " << raster;
    }
  }
}

TEST(TileExamples, SplitKGemmWithPartialsInAWorkspace) {
  for (int64_t split_k : {1, 3, 4}) {
    const Kernel k = jit(examples::tile::splitk_gemm(split_k), options({2}, {3}));
    std::mt19937 rng(6);
    for (const auto& s : kGemmShapes) check_gemm(k, DataType::float32(), s[0], s[1], s[2], rng);
  }
}

TEST(TileExamples, SplitKGemmWithPartialsInAnAllocGlobalWorkspace) {
  const Kernel k = jit(examples::tile::splitk_gemm(3, /*alloc_global=*/true), options({2}));
  std::mt19937 rng(9);
  for (const auto& s : kGemmShapes) check_gemm(k, DataType::float32(), s[0], s[1], s[2], rng);
  // The hidden workspace: split_k x M x N floats, listed like a declared one.
  Tensor a = empty({70, 20}, DataType::float32()), b = empty({20, 30}, DataType::float32());
  EXPECT_EQ(k.workspace_bytes_of(a, b), size_t((3 * 70 * 30 * 4 + 255) / 256 * 256));
}

TEST(TileExamples, SplitKGemmWithCompilerMadeWorkspacesAndATileCounter) {
  for (int64_t split_k : {1, 3, 4}) {
    const Kernel k = jit(examples::tile::splitk_gemm_counted(split_k), options({2}));
    std::mt19937 rng(7);
    for (const auto& s : kGemmShapes) {
      // Twice at each shape: the second call finds the counters the first
      // re-armed (zero_once is zeroed only when the arena is first leased).
      check_gemm(k, DataType::float32(), s[0], s[1], s[2], rng);
      check_gemm(k, DataType::float32(), s[0], s[1], s[2], rng);
    }
  }
}

TEST(TileExamples, SplitKGemmListsItsCompilerMadeWorkspaces) {
  const Kernel k = jit(examples::tile::splitk_gemm_counted(3), options({2}));
  const ShapeArg shapes[] = {{130, 65}, {65, 129}};
  const auto layout = k.workspace_layout_for_shapes(shapes);
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[0].name, "Partial");
  EXPECT_EQ(layout[0].offset, 0u);
  EXPECT_EQ(layout[0].shape, (std::vector<int64_t>{3, 130, 129}));
  EXPECT_EQ(layout[0].dtype, DataType::float32());
  EXPECT_EQ(layout[0].bytes, 3u * 130 * 129 * 4);
  EXPECT_EQ(layout[0].init, WorkspaceInit::kEmpty);
  EXPECT_EQ(layout[1].name, "Count");
  EXPECT_EQ(layout[1].offset, 201472u);  // 201240 rounded up to 256
  EXPECT_EQ(layout[1].shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(layout[1].dtype, DataType::int32());
  EXPECT_EQ(layout[1].bytes, 36u);
  EXPECT_EQ(layout[1].init, WorkspaceInit::kZeroOnce);
  EXPECT_EQ(k.workspace_bytes_for_shapes(shapes), 201472u + 256u);
}

TEST(TileExamples, RmsNorm) {
  for (int64_t n : {64, 100}) {
    const Kernel k = jit(examples::tile::rms_norm(n), options({1}));
    std::mt19937 rng(7);
    for (int64_t m : {1, 8, 13, 50}) {
      Tensor a = random_tensor({m, n}, DataType::float32(), rng);
      Tensor b = k(a);
      for (int64_t i = 0; i < m; ++i) {
        double ss = 0;
        for (int64_t j = 0; j < n; ++j) ss += double(element(a, i * n + j)) * element(a, i * n + j);
        const double scale = 1.0 / std::sqrt(ss / double(n) + 1e-12);
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_NEAR(element(b, i * n + j), element(a, i * n + j) * scale, 1e-5)
              << "M=" << m << " N=" << n << " at " << i << "," << j;
        }
      }
    }
  }
}

TEST(TileExamples, RowSoftmax) {
  for (int64_t n : {32, 77}) {
    const Kernel k = jit(examples::tile::softmax(n), options({1}));
    std::mt19937 rng(8);
    for (int64_t m : {1, 4, 6, 41}) {
      Tensor x = random_tensor({m, n}, DataType::float32(), rng);
      Tensor y = k(x);
      for (int64_t i = 0; i < m; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; ++j) mx = std::max(mx, double(element(x, i * n + j)));
        for (int64_t j = 0; j < n; ++j) sum += std::exp(double(element(x, i * n + j)) - mx);
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_NEAR(element(y, i * n + j), std::exp(double(element(x, i * n + j)) - mx) / sum, 1e-6)
              << "M=" << m << " N=" << n << " at " << i << "," << j;
        }
      }
    }
  }
}

}  // namespace
