// Sparse attention forward in the seed's shape (DeepSeek-style top-k
// attention over a shared KV):
//   Q[b, s, heads, dim] bf16, KV[b, s_kv, dim] bf16 (keys and values),
//   Indices[b, s, topk] int32 (which KV rows each query attends to; -1 skips),
//   Output[b, s, heads, dim] bf16 (out_idx = [3]).
// Workspaces, one slice per query position (block_num = b * s):
//   ws_kv[block_num, block, dim] bf16   the gathered KV rows of one step
//   ws_s [block_num, heads, block] f32  scores of one step
//   ws_p [block_num, heads, block] bf16 probabilities of one step
//   ws_o [block_num, heads, dim] f32    the running output accumulator
// One block per query position walks the top-k in steps of `block` rows with
// an online softmax (running max and sum per head). The CPU body assigns
// floats to elements, so it serves bfloat16 and float32 signatures alike
// (tests/python/test_sparse_attention.py uses both).
#pragma once

#include <tilejit/tilejit.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/bf16.h"

namespace examples {

inline constexpr const char* kSparseAttentionCpuBody = R"(
const int64_t bi = bx / s, si = bx % s;
const float scale = 1.0f / std::sqrt(float(dim));
float m_run[heads], l_run[heads];
for (int64_t h = 0; h < heads; ++h) {
  m_run[h] = -INFINITY;
  l_run[h] = 0.f;
  for (int64_t d = 0; d < dim; ++d) ws_o(bx, h, d) = 0.f;
}
for (int64_t k0 = 0; k0 < topk; k0 += block) {
  bool valid[block];
  for (int64_t j = 0; j < block; ++j) {  // gather the step's KV rows
    const int64_t t = k0 + j;
    const int32_t row = t < topk ? Indices(bi, si, t) : -1;
    valid[j] = row >= 0 && row < s_kv;
    for (int64_t d = 0; d < dim; ++d) ws_kv(bx, j, d) = valid[j] ? float(KV(bi, row, d)) : 0.f;
  }
  for (int64_t h = 0; h < heads; ++h) {
    float step_max = -INFINITY;
    for (int64_t j = 0; j < block; ++j) {
      float acc = -INFINITY;
      if (valid[j]) {
        acc = 0.f;
        for (int64_t d = 0; d < dim; ++d) acc += float(Q(bi, si, h, d)) * float(ws_kv(bx, j, d));
        acc *= scale;
      }
      ws_s(bx, h, j) = acc;
      step_max = acc > step_max ? acc : step_max;
    }
    const float m_new = m_run[h] > step_max ? m_run[h] : step_max;
    if (m_new == -INFINITY) {  // nothing valid yet
      for (int64_t j = 0; j < block; ++j) ws_p(bx, h, j) = 0.f;
      continue;
    }
    const float rescale = std::exp(m_run[h] - m_new);
    float step_sum = 0.f;
    for (int64_t j = 0; j < block; ++j) {
      const float p = valid[j] ? std::exp(ws_s(bx, h, j) - m_new) : 0.f;
      ws_p(bx, h, j) = p;
      step_sum += float(ws_p(bx, h, j));
    }
    l_run[h] = l_run[h] * rescale + step_sum;
    m_run[h] = m_new;
    for (int64_t d = 0; d < dim; ++d) {
      float acc = ws_o(bx, h, d) * rescale;
      for (int64_t j = 0; j < block; ++j) acc += float(ws_p(bx, h, j)) * float(ws_kv(bx, j, d));
      ws_o(bx, h, d) = acc;
    }
  }
}
for (int64_t h = 0; h < heads; ++h) {
  const float inv = l_run[h] > 0.f ? 1.f / l_run[h] : 0.f;
  for (int64_t d = 0; d < dim; ++d) Output(bi, si, h, d) = ws_o(bx, h, d) * inv;
}
)";

struct SparseAttentionConfig {
  int heads = 16;
  int dim = 128;
  int topk = 512;
  int block = 64;
};

/// The signature of the seed operator; the CUDA body is added when given.
inline tilejit::PrimFunc sparse_attention_fwd(const SparseAttentionConfig& c,
                                              const char* cuda_body = nullptr) {
  using namespace tilejit;
  const Expr b = symbolic("b"), s = symbolic("s"), s_kv = symbolic("s_kv");
  const Expr block_num = b * s;
  auto builder = prim_func("sparse_attention_fwd")
                     .tensor("Q", {b, s, c.heads, c.dim}, DataType::bfloat16())
                     .tensor("KV", {b, s_kv, c.dim}, DataType::bfloat16())
                     .tensor("Indices", {b, s, c.topk}, DataType::int32())
                     .tensor("Output", {b, s, c.heads, c.dim}, DataType::bfloat16())
                     .tensor("ws_kv", {block_num, c.block, c.dim}, DataType::bfloat16())
                     .tensor("ws_s", {block_num, c.heads, c.block}, DataType::float32())
                     .tensor("ws_p", {block_num, c.heads, c.block}, DataType::bfloat16())
                     .tensor("ws_o", {block_num, c.heads, c.dim}, DataType::float32())
                     .grid({block_num})
                     .threads(128);
  // The body reads the configuration as compile-time constants.
  const std::string prologue = "constexpr int64_t heads = " + std::to_string(c.heads) +
                               ", dim = " + std::to_string(c.dim) +
                               ", topk = " + std::to_string(c.topk) +
                               ", block = " + std::to_string(c.block) + ";\n";
  builder.body("cpu", prologue + kSparseAttentionCpuBody);
  if (cuda_body) builder.body("cuda", prologue + cuda_body);
  return builder.build();
}

inline tilejit::JitOptions sparse_attention_options(std::string target = "auto") {
  tilejit::JitOptions o;
  o.out_idx = {3};
  o.workspace_idx = {4, 5, 6, 7};
  o.target = std::move(target);
  return o;
}

/// Reference in double over the same bf16 inputs: softmax(q k^T * scale) v
/// over the valid indices of each query; a query with none gives zeros.
inline std::vector<float> sparse_attention_reference(const uint16_t* q, const uint16_t* kv,
                                                     const int32_t* idx, int64_t b, int64_t s,
                                                     int64_t s_kv,
                                                     const SparseAttentionConfig& c) {
  std::vector<float> out(size_t(b * s * c.heads * c.dim), 0.f);
  const double scale = 1.0 / std::sqrt(double(c.dim));
  std::vector<double> scores(size_t(c.topk));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t si = 0; si < s; ++si)
      for (int64_t h = 0; h < c.heads; ++h) {
        const uint16_t* qrow = q + ((bi * s + si) * c.heads + h) * c.dim;
        const int32_t* rows = idx + (bi * s + si) * c.topk;
        double mx = -std::numeric_limits<double>::infinity();
        for (int t = 0; t < c.topk; ++t) {
          scores[t] = -std::numeric_limits<double>::infinity();
          if (rows[t] < 0 || rows[t] >= s_kv) continue;
          const uint16_t* krow = kv + (bi * s_kv + rows[t]) * c.dim;
          double acc = 0;
          for (int d = 0; d < c.dim; ++d) acc += double(from_bf16(qrow[d])) * from_bf16(krow[d]);
          scores[t] = acc * scale;
          mx = std::max(mx, scores[t]);
        }
        if (mx == -std::numeric_limits<double>::infinity()) continue;
        double sum = 0;
        std::vector<double> o(size_t(c.dim), 0.0);
        for (int t = 0; t < c.topk; ++t) {
          if (scores[t] == -std::numeric_limits<double>::infinity()) continue;
          const double p = std::exp(scores[t] - mx);
          sum += p;
          const uint16_t* vrow = kv + (bi * s_kv + rows[t]) * c.dim;
          for (int d = 0; d < c.dim; ++d) o[d] += p * from_bf16(vrow[d]);
        }
        float* dst = out.data() + ((bi * s + si) * c.heads + h) * c.dim;
        for (int d = 0; d < c.dim; ++d) dst[d] = float(o[d] / sum);
      }
  return out;
}

}  // namespace examples
