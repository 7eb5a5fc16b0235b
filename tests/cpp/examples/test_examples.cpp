// The examples' kernels on random inputs at several shapes, against plain
// references; repeated calls check that pooled workspaces (and the zero_once
// counters the kernels re-arm) stay correct across reuse.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/flash_decoding.h"
#include "kernels/sparse_attention.h"
#include "kernels/splitk_matmul.h"
#include "kernels/tensor_util.h"

namespace {

using namespace tilejit;

using examples::random_bf16;


class SplitK : public ::testing::TestWithParam<int> {};

TEST_P(SplitK, MatchesReference) {
  const int split_k = GetParam();
  const Kernel op = jit(examples::splitk_matmul(split_k), examples::splitk_options("cpu"));
  std::mt19937 rng(split_k);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::uniform_int_distribution<int64_t> size(1, 150);
  for (int trial = 0; trial < 6; ++trial) {
    const int64_t m = size(rng), n = size(rng), k = size(rng) * 3;
    Tensor a = empty({m, k}, DataType::float32());
    Tensor b = empty({k, n}, DataType::float32());
    for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = dist(rng);
    for (int64_t i = 0; i < b.numel(); ++i) b.data_as<float>()[i] = dist(rng);
    const auto ref = examples::matmul_reference(a.data_as<float>(), b.data_as<float>(), m, n, k);
    for (int rep = 0; rep < 2; ++rep) {
      Tensor c = op(a, b);
      ASSERT_EQ(c.shape(0), m);
      ASSERT_EQ(c.shape(1), n);
      double err = 0;
      for (int64_t i = 0; i < m * n; ++i) err = std::max(err, double(std::fabs(c.data_as<float>()[i] - ref[size_t(i)])));
      EXPECT_LT(err, 1e-4 * double(k)) << "M=" << m << " N=" << n << " K=" << k << " rep " << rep;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Splits, SplitK, ::testing::Values(1, 3, 8));

TEST(SparseAttention, MatchesReference) {
  const examples::SparseAttentionConfig cfg{/*heads=*/2, /*dim=*/16, /*topk=*/40, /*block=*/16};
  const Kernel op = jit(examples::sparse_attention_fwd(cfg), examples::sparse_attention_options("cpu"));
  std::mt19937 rng(5);
  const int64_t shapes[][3] = {{1, 2, 3}, {2, 4, 64}, {3, 1, 200}, {1, 9, 17}};
  for (const auto& sh : shapes) {
    const int64_t b = sh[0], s = sh[1], s_kv = sh[2];
    Tensor q = random_bf16({b, s, cfg.heads, cfg.dim}, rng);
    Tensor kv = random_bf16({b, s_kv, cfg.dim}, rng);
    Tensor idx = empty({b, s, cfg.topk}, DataType::int32());
    std::uniform_int_distribution<int32_t> row(-1, int32_t(s_kv));  // -1 and s_kv are skipped
    for (int64_t i = 0; i < idx.numel(); ++i) idx.data_as<int32_t>()[i] = row(rng);
    const auto ref = examples::sparse_attention_reference(q.data_as<uint16_t>(), kv.data_as<uint16_t>(),
                                                          idx.data_as<int32_t>(), b, s, s_kv, cfg);
    Tensor out = op(q, kv, idx);
    EXPECT_LT(examples::max_abs_error_bf16(out, ref), 2e-2) << "b=" << b << " s=" << s << " s_kv=" << s_kv;
    EXPECT_EQ(op.workspace_bytes_of(q, kv, idx),
              // ws_kv, ws_s, ws_p, ws_o, each 256-aligned
              [&] {
                const size_t bs = size_t(b * s);
                auto up = [](size_t x) { return (x + 255) / 256 * 256; };
                return up(bs * 16 * 16 * 2) + up(bs * 2 * 16 * 4) + up(bs * 2 * 16 * 2) + up(bs * 2 * 16 * 4);
              }());
  }
}

TEST(FlashDecoding, MatchesReference) {
  const examples::FlashDecodingConfig cfg{/*heads=*/3, /*dim=*/32, /*splits=*/4};
  const Kernel op = jit(examples::flash_decoding(cfg, /*with_cuda=*/false),
                        examples::flash_decoding_options("cpu"));
  std::mt19937 rng(9);
  const int64_t shapes[][2] = {{1, 1}, {2, 37}, {1, 300}, {3, 5}};
  for (const auto& sh : shapes) {
    const int64_t b = sh[0], s_kv = sh[1];
    Tensor q = random_bf16({b, cfg.heads, cfg.dim}, rng);
    Tensor k = random_bf16({b, s_kv, cfg.heads, cfg.dim}, rng);
    Tensor v = random_bf16({b, s_kv, cfg.heads, cfg.dim}, rng);
    const auto ref = examples::flash_decoding_reference(q.data_as<uint16_t>(), k.data_as<uint16_t>(),
                                                        v.data_as<uint16_t>(), b, s_kv, cfg);
    for (int rep = 0; rep < 2; ++rep) {
      Tensor out = op(q, k, v);
      EXPECT_LT(examples::max_abs_error_bf16(out, ref), 2e-2) << "b=" << b << " s_kv=" << s_kv;
    }
  }
}

}  // namespace
