// Flash-decoding built with the C++ builder (examples/tile/flash_decoding.h),
// run on the CPU against a double reference: GQA at sequence lengths that do
// not divide the block and at 4096, the split and combine kernels sharing one
// lease whose layout lists the two compiler-made partials once, and a caller's
// arena full of NaN that does not change the result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tile/flash_decoding.h"

namespace {

using namespace tilejit;

Tensor random_f32(std::initializer_list<int64_t> shape, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  Tensor t = empty(shape, DataType::float32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

JitOptions out3() {
  JitOptions o;
  o.out_idx = IndexSpec({3});
  o.target = "cpu";
  return o;
}

TEST(TileExamples, FlashDecodingMatchesADoubleReference) {
  const examples::tile::FlashDecodingConfig cfg;  // heads 4, kv heads 2, dim 64, 4 splits of 32
  const Kernel fd = jit(examples::tile::flash_decoding(cfg), out3());
  ASSERT_EQ(fd.abi().launches.size(), 2u);  // split, then combine
  std::mt19937 rng(21);
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 1}, {2, 100}, {3, 129}, {2, 4096}}) {
    Tensor q = random_f32({batch, cfg.heads, cfg.dim}, rng);
    Tensor k = random_f32({batch, seq, cfg.kv_heads, cfg.dim}, rng);
    Tensor v = random_f32({batch, seq, cfg.kv_heads, cfg.dim}, rng);
    Tensor o = fd(q, k, v);
    const std::vector<double> want = examples::tile::flash_decoding_reference(q, k, v);
    double err = 0;
    for (int64_t i = 0; i < o.numel(); ++i) {
      err = std::max(err, std::abs(double(o.data_as<float>()[i]) - want[size_t(i)]));
    }
    EXPECT_LT(err, 2e-5) << "batch " << batch << ", seqlen_kv " << seq;
  }
}

TEST(TileExamples, FlashDecodingPartialsShareOneLease) {
  examples::tile::FlashDecodingConfig cfg;
  cfg.num_split = 7;  // 40 keys are 2 blocks of 32: five splits walk none
  const Kernel fd = jit(examples::tile::flash_decoding(cfg), out3());
  std::mt19937 rng(22);
  Tensor q = random_f32({3, cfg.heads, cfg.dim}, rng);
  Tensor k = random_f32({3, 40, cfg.kv_heads, cfg.dim}, rng);
  Tensor v = random_f32({3, 40, cfg.kv_heads, cfg.dim}, rng);
  const Arg args[] = {q, k, v};
  const auto layout = fd.workspace_layout(args);
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[0].name, "glse");
  EXPECT_EQ(layout[0].shape, (std::vector<int64_t>{3, 4, 7}));
  EXPECT_EQ(layout[1].name, "Output_partial");
  EXPECT_EQ(layout[1].shape, (std::vector<int64_t>{3, 4, 7, 64}));
  EXPECT_EQ(layout[1].offset, 512u);  // 336 bytes of lse, aligned to 256
  EXPECT_EQ(fd.workspace_bytes(args), 512u + 3 * 4 * 7 * 64 * 4);
  Tensor expected = fd(q, k, v);
  const std::vector<double> want = examples::tile::flash_decoding_reference(q, k, v);
  for (int64_t i = 0; i < expected.numel(); ++i) {
    ASSERT_NEAR(expected.data_as<float>()[i], want[size_t(i)], 2e-5) << i;
  }
  for (int garbage : {0xFF, 0x7F, 0x00}) {
    Tensor arena = fd.empty_workspace(args);
    std::memset(arena.data(), garbage, size_t(arena.nbytes()));
    CallOptions call;
    call.workspace = arena;
    Tensor out = fd.call(args, call);
    ASSERT_EQ(std::memcmp(out.data(), expected.data(), size_t(out.nbytes())), 0) << garbage;
  }
}

}  // namespace
