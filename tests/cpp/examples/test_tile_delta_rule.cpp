// The chunked gated delta rule built with the C++ builder (examples/tile/
// gated_delta_rule.h) on the CPU against the recurrence in double, token by
// token: no out_idx, so a call returns an empty Outputs and the caller's O and
// S hold the result, at sequence lengths that are and are not multiples of the
// chunk; a caller's arena full of NaN does not change it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tile/gated_delta_rule.h"

namespace {

using namespace tilejit;

struct Inputs {
  Tensor q, k, v, g, beta, o, s;
};

// q and k unit vectors per token, beta in (0, 1), g in (-0.5, 0]; O and S
// full of NaN, so that an element the kernel does not write shows.
Inputs make_inputs(int64_t b, int64_t seq, const examples::tile::GatedDeltaRuleConfig& c,
                   std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0.f, 0.5f);
  const int64_t H = c.heads, dk = c.dim_k, dv = c.dim_v;
  const DataType f32 = DataType::float32();
  Inputs in{empty({b, seq, H, dk}, f32), empty({b, seq, H, dk}, f32), empty({b, seq, H, dv}, f32),
            empty({b, seq, H}, f32),     empty({b, seq, H}, f32),     empty({b, seq, H, dv}, f32),
            empty({b, H, dk, dv}, f32)};
  for (Tensor* t : {&in.q, &in.k}) {
    float* x = t->data_as<float>();
    for (int64_t r = 0; r < t->numel() / dk; ++r) {
      double norm = 0;
      for (int64_t d = 0; d < dk; ++d) norm += double(x[r * dk + d] = normal(rng)) * x[r * dk + d];
      for (int64_t d = 0; d < dk; ++d) x[r * dk + d] = float(x[r * dk + d] / std::sqrt(norm));
    }
  }
  for (int64_t i = 0; i < in.v.numel(); ++i) in.v.data_as<float>()[i] = normal(rng);
  for (int64_t i = 0; i < in.g.numel(); ++i) {
    in.g.data_as<float>()[i] = -uniform(rng);
    in.beta.data_as<float>()[i] = 1.f / (1.f + std::exp(-normal(rng)));
  }
  for (Tensor* t : {&in.o, &in.s}) {
    for (int64_t i = 0; i < t->numel(); ++i) t->data_as<float>()[i] = NAN;
  }
  return in;
}

// The largest difference of O and S from the recurrence in double.
double error_against_the_recurrence(const Inputs& in) {
  const int64_t b = in.q.shape(0), seq = in.q.shape(1), H = in.q.shape(2), dk = in.q.shape(3),
                dv = in.v.shape(3);
  const double scale = 1.0 / std::sqrt(double(dk));
  double err = 0;
  std::vector<double> s(size_t(dk * dv)), sk(static_cast<size_t>(dv));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < H; ++h) {
      std::fill(s.begin(), s.end(), 0.0);
      for (int64_t t = 0; t < seq; ++t) {
        const int64_t tok = (bi * seq + t) * H + h;
        const float* k = in.k.data_as<float>() + tok * dk;
        const float* q = in.q.data_as<float>() + tok * dk;
        const float* v = in.v.data_as<float>() + tok * dv;
        const double decay = std::exp(double(in.g.data_as<float>()[tok]));
        const double beta = in.beta.data_as<float>()[tok];
        for (double& x : s) x *= decay;
        std::fill(sk.begin(), sk.end(), 0.0);
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t e = 0; e < dv; ++e) sk[size_t(e)] += s[size_t(d * dv + e)] * k[d];
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t e = 0; e < dv; ++e) {
            s[size_t(d * dv + e)] += beta * k[d] * (v[e] - sk[size_t(e)]);
          }
        for (int64_t e = 0; e < dv; ++e) {
          double o = 0;
          for (int64_t d = 0; d < dk; ++d) o += s[size_t(d * dv + e)] * scale * q[d];
          err = std::max(err, std::abs(o - double(in.o.data_as<float>()[tok * dv + e])));
        }
      }
      const float* got = in.s.data_as<float>() + (bi * H + h) * dk * dv;
      for (int64_t i = 0; i < dk * dv; ++i) err = std::max(err, std::abs(s[size_t(i)] - got[i]));
    }
  return std::isnan(err) ? INFINITY : err;
}

TEST(TileExamples, GatedDeltaRuleMatchesTheRecurrence) {
  const examples::tile::GatedDeltaRuleConfig cfg;  // heads 2, dk 32, dv 16, chunks of 16
  const Kernel gdr = jit(examples::tile::gated_delta_rule(cfg),
                         examples::tile::gated_delta_rule_options());
  EXPECT_EQ(gdr.input_names(),
            (std::vector<std::string>{"Q", "K", "V", "G", "Beta", "O", "S"}));
  std::mt19937 rng(31);
  for (auto [b, seq] : {std::pair<int64_t, int64_t>{1, 16}, {2, 37}, {1, 1}, {1, 300}}) {
    Inputs in = make_inputs(b, seq, cfg, rng);
    const Outputs out = gdr(in.q, in.k, in.v, in.g, in.beta, in.o, in.s);
    EXPECT_TRUE(out.empty());
    EXPECT_LT(error_against_the_recurrence(in), 1e-5) << b << " x " << seq;
  }
}

TEST(TileExamples, GatedDeltaRuleIgnoresWhatTheArenaHeld) {
  const examples::tile::GatedDeltaRuleConfig cfg;
  const Kernel gdr = jit(examples::tile::gated_delta_rule(cfg),
                         examples::tile::gated_delta_rule_options());
  std::mt19937 rng(32);
  Inputs in = make_inputs(2, 45, cfg, rng);
  const Arg args[] = {in.q, in.k, in.v, in.g, in.beta, in.o, in.s};
  const auto layout = gdr.workspace_layout(args);
  ASSERT_EQ(layout.size(), 3u);
  EXPECT_EQ(layout[1].name, "ws_u");
  EXPECT_EQ(layout[1].shape, (std::vector<int64_t>{2, 2, 16, 16}));
  gdr.call(args);
  const std::vector<float> o(in.o.data_as<float>(), in.o.data_as<float>() + in.o.numel());
  const std::vector<float> s(in.s.data_as<float>(), in.s.data_as<float>() + in.s.numel());
  EXPECT_LT(error_against_the_recurrence(in), 1e-5);
  for (int garbage : {0xFF, 0x7F, 0x00}) {
    Tensor arena = gdr.empty_workspace(args);
    std::memset(arena.data(), garbage, size_t(arena.nbytes()));
    CallOptions call;
    call.workspace = arena;
    EXPECT_TRUE(gdr.call(args, call).empty());
    ASSERT_EQ(std::memcmp(in.o.data(), o.data(), o.size() * 4), 0) << garbage;
    ASSERT_EQ(std::memcmp(in.s.data(), s.data(), s.size() * 4), 0) << garbage;
  }
}

}  // namespace
