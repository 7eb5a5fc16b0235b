// The attention programs built with the C++ builder (examples/tile/
// flash_attention.h, sparse_attention.h), run on the CPU against double
// references: flash attention causal and not, at sequence lengths that do not
// divide the tiles and at 2048 (the online softmax over 32 K/V blocks); the
// seed's sparse attention in its exact signature against the phase-1
// reference, with skip (-1) and sentinel (s_kv) indices, and a caller's
// arena full of NaN that does not change the result.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/bf16.h"
#include "kernels/sparse_attention.h"
#include "tile/flash_attention.h"
#include "tile/sparse_attention.h"

namespace {

using namespace tilejit;

JitOptions options(IndexSpec out_idx) {
  JitOptions o;
  o.out_idx = std::move(out_idx);
  o.target = "cpu";
  return o;
}

Tensor random_f32(std::initializer_list<int64_t> shape, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  Tensor t = empty(shape, DataType::float32());
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = dist(rng);
  return t;
}

// softmax(q k^T / sqrt(dim)) v per (batch, head), in double.
std::vector<double> attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                        bool causal) {
  const int64_t batch = q.shape(0), seq = q.shape(1), heads = q.shape(2), dim = q.shape(3);
  const float *Q = q.data_as<float>(), *K = k.data_as<float>(), *V = v.data_as<float>();
  auto at = [&](int64_t b, int64_t s, int64_t h) { return ((b * seq + s) * heads + h) * dim; };
  std::vector<double> out(size_t(q.numel()), 0.0);
  std::vector<double> p(static_cast<size_t>(seq));
  const double scale = 1.0 / std::sqrt(double(dim));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i) {
        const int64_t n = causal ? i + 1 : seq;
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < dim; ++d) acc += double(Q[at(b, i, h) + d]) * K[at(b, j, h) + d];
          p[size_t(j)] = acc * scale;
          mx = std::max(mx, p[size_t(j)]);
        }
        for (int64_t j = 0; j < n; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
        double* o = out.data() + at(b, i, h);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t d = 0; d < dim; ++d) o[d] += p[size_t(j)] / sum * V[at(b, j, h) + d];
      }
  return out;
}

class FlashAttention : public ::testing::TestWithParam<bool> {};

TEST_P(FlashAttention, MatchesADoubleReference) {
  examples::tile::FlashAttentionConfig cfg;
  cfg.causal = GetParam();
  const Kernel fa = jit(examples::tile::flash_attention(cfg), options({3}));
  std::mt19937 rng(11);
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 64}, {2, 100}, {1, 1}, {3, 129},
                            {1, 2048}}) {
    Tensor q = random_f32({batch, seq, cfg.heads, cfg.dim}, rng);
    Tensor k = random_f32({batch, seq, cfg.heads, cfg.dim}, rng);
    Tensor v = random_f32({batch, seq, cfg.heads, cfg.dim}, rng);
    Tensor o = fa(q, k, v);
    const std::vector<double> want = attention_reference(q, k, v, cfg.causal);
    double err = 0;
    for (int64_t i = 0; i < o.numel(); ++i) {
      err = std::max(err, std::abs(double(o.data_as<float>()[i]) - want[size_t(i)]));
    }
    EXPECT_LT(err, 2e-5) << "batch " << batch << ", seq_len " << seq;
  }
}

INSTANTIATE_TEST_SUITE_P(TileExamples, FlashAttention, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Causal" : "Full"; });

// Random bf16 Q and KV; indices in [-1, s_kv) with every 7th the sentinel s_kv
// and query (0, 0) attending to nothing.
struct SparseInputs {
  Tensor q, kv, idx;
};

SparseInputs sparse_inputs(int64_t b, int64_t s, int64_t s_kv, int64_t heads, int64_t dim,
                           int64_t topk, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  std::uniform_int_distribution<int32_t> row(-1, int32_t(s_kv) - 1);
  SparseInputs in{empty({b, s, heads, dim}, DataType::bfloat16()),
                  empty({b, s_kv, dim}, DataType::bfloat16()), empty({b, s, topk}, DataType::int32())};
  for (int64_t i = 0; i < in.q.numel(); ++i) in.q.data_as<uint16_t>()[i] = examples::to_bf16(dist(rng));
  for (int64_t i = 0; i < in.kv.numel(); ++i) in.kv.data_as<uint16_t>()[i] = examples::to_bf16(dist(rng));
  int32_t* idx = in.idx.data_as<int32_t>();
  for (int64_t i = 0; i < in.idx.numel(); ++i) idx[i] = i % 7 == 0 ? int32_t(s_kv) : row(rng);
  for (int64_t t = 0; t < topk; ++t) idx[t] = -1;
  return in;
}

TEST(TileExamples, SparseAttentionInTheSeedSignature) {
  examples::tile::SparseAttentionTileConfig cfg;  // heads 16, dim 128, topk 512, block 64, bf16
  const Kernel op = jit(examples::tile::sparse_attention_tile(cfg),
                        examples::tile::sparse_attention_tile_options());
  EXPECT_EQ(op.input_names(), (std::vector<std::string>{"Q", "KV", "Indices"}));
  // The phase-1 operator's arena, slice for slice.
  const Kernel text = jit(examples::sparse_attention_fwd({}), examples::sparse_attention_options("cpu"));
  const examples::SparseAttentionConfig ref_cfg;
  std::mt19937 rng(12);
  for (auto [b, s, s_kv] : {std::tuple<int64_t, int64_t, int64_t>{2, 3, 200}, {1, 5, 64}}) {
    SparseInputs in = sparse_inputs(b, s, s_kv, cfg.heads, cfg.dim, cfg.topk, rng);
    const Arg args[] = {in.q, in.kv, in.idx};
    const auto layout = op.workspace_layout(args), text_layout = text.workspace_layout(args);
    ASSERT_EQ(layout.size(), 4u);
    for (size_t w = 0; w < 4; ++w) {
      EXPECT_EQ(layout[w].name, text_layout[w].name);
      EXPECT_EQ(layout[w].shape, text_layout[w].shape);
      EXPECT_EQ(layout[w].offset, text_layout[w].offset);
    }
    Tensor out = op(in.q, in.kv, in.idx);
    const std::vector<float> want = examples::sparse_attention_reference(
        in.q.data_as<uint16_t>(), in.kv.data_as<uint16_t>(), in.idx.data_as<int32_t>(), b, s, s_kv,
        ref_cfg);
    double err = 0;
    for (int64_t i = 0; i < out.numel(); ++i) {
      err = std::max(err, std::abs(double(examples::from_bf16(out.data_as<uint16_t>()[i])) - want[size_t(i)]));
    }
    EXPECT_LT(err, 3e-2) << b << "x" << s << " over " << s_kv;
    for (int64_t i = 0; i < cfg.heads * cfg.dim; ++i) ASSERT_EQ(out.data_as<uint16_t>()[i], 0) << i;
  }
}

TEST(TileExamples, SparseAttentionIgnoresWhatTheArenaHeld) {
  examples::tile::SparseAttentionTileConfig cfg;
  cfg.heads = 4;
  cfg.dim = 32;
  cfg.topk = 100;  // 7 steps of 16, the last partial
  cfg.block = 16;
  const Kernel op = jit(examples::tile::sparse_attention_tile(cfg),
                        examples::tile::sparse_attention_tile_options());
  std::mt19937 rng(13);
  SparseInputs in = sparse_inputs(2, 3, 40, cfg.heads, cfg.dim, cfg.topk, rng);
  Tensor expected = op(in.q, in.kv, in.idx);
  const Arg args[] = {in.q, in.kv, in.idx};
  for (int garbage : {0xFF, 0x7F, 0x00}) {
    Tensor arena = op.empty_workspace(args);
    std::memset(arena.data(), garbage, size_t(arena.nbytes()));
    CallOptions call;
    call.workspace = arena;
    Tensor out = op.call(args, call);
    ASSERT_EQ(std::memcmp(out.data(), expected.data(), size_t(out.nbytes())), 0) << garbage;
  }
}

}  // namespace
