// Flash-decoding: attention of one query token per sequence over a long KV
// cache, split along the KV length so that many blocks share the work.
//   Q[b, heads, dim], K[b, s_kv, heads, dim], V[b, s_kv, heads, dim] bf16,
//   Out[b, heads, dim] bf16 (out_idx = [3]).
// Workspaces:
//   o_partial[b, heads, splits, dim] f32  each split's normalised output
//   lse_partial[b, heads, splits]    f32  each split's log-sum-exp
//   counter[b, heads]                int32, zero_once: splits finished; the
//                                   last one combines and re-arms it.
// Grid (splits, heads, b): a block handles one KV chunk of one head.
#pragma once

#include <tilejit/tilejit.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/bf16.h"

namespace examples {

inline constexpr const char* kFlashDecodingCpuBody = R"(
const int64_t split = bx, h = by, bi = bz, splits = grid_dim.x;
const float scale = 1.0f / std::sqrt(float(dim));
const int64_t chunk = tilejit::ceildiv(s_kv, splits);
const int64_t t0 = split * chunk < s_kv ? split * chunk : s_kv;
const int64_t t1 = t0 + chunk < s_kv ? t0 + chunk : s_kv;
float m = -INFINITY, l = 0.f, acc[dim] = {};
for (int64_t t = t0; t < t1; ++t) {
  float score = 0.f;
  for (int64_t d = 0; d < dim; ++d) score += float(Q(bi, h, d)) * float(K(bi, t, h, d));
  score *= scale;
  const float m_new = score > m ? score : m;
  const float r = std::exp(m - m_new), p = std::exp(score - m_new);
  l = l * r + p;
  for (int64_t d = 0; d < dim; ++d) acc[d] = acc[d] * r + p * float(V(bi, t, h, d));
  m = m_new;
}
for (int64_t d = 0; d < dim; ++d) o_partial(bi, h, split, d) = l > 0.f ? acc[d] / l : 0.f;
lse_partial(bi, h, split) = l > 0.f ? m + std::log(l) : -INFINITY;
if (__atomic_add_fetch(&counter(bi, h), 1, __ATOMIC_ACQ_REL) == splits) {
  float lse_max = -INFINITY;
  for (int64_t p = 0; p < splits; ++p) lse_max = lse_partial(bi, h, p) > lse_max ? lse_partial(bi, h, p) : lse_max;
  for (int64_t d = 0; d < dim; ++d) {
    float num = 0.f, den = 0.f;
    for (int64_t p = 0; p < splits; ++p) {
      const float w = lse_partial(bi, h, p) == -INFINITY ? 0.f : std::exp(lse_partial(bi, h, p) - lse_max);
      num += w * o_partial(bi, h, p, d);
      den += w;
    }
    Out(bi, h, d) = tilejit::bfloat16(den > 0.f ? num / den : 0.f);
  }
  __atomic_store_n(&counter(bi, h), 0, __ATOMIC_RELEASE);
}
)";

inline constexpr const char* kFlashDecodingCudaBody = R"(
constexpr int TILE = 128, DPT = (dim + TILE - 1) / TILE;  // launched with 128 threads
__shared__ float q_s[dim], p_s[TILE], red[TILE / 32];
__shared__ int is_last;
const int64_t split = bx, h = by, bi = bz, splits = grid_dim.x;
const int tid = threadIdx.x;
const float scale = rsqrtf(float(dim));
auto block_reduce = [&](float v, bool is_max) {
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  if ((tid & 31) == 0) red[tid >> 5] = v;
  __syncthreads();
  float r = is_max ? -INFINITY : 0.f;
  for (int w = 0; w < TILE / 32; ++w) r = is_max ? fmaxf(r, red[w]) : r + red[w];
  __syncthreads();
  return r;
};
for (int d = tid; d < dim; d += TILE) q_s[d] = float(Q(bi, h, d)) * scale;
const int64_t chunk = tilejit::ceildiv(s_kv, splits);
const int64_t t0 = split * chunk < s_kv ? split * chunk : s_kv;
const int64_t t1 = t0 + chunk < s_kv ? t0 + chunk : s_kv;
float m = -INFINITY, l = 0.f, acc[DPT];
for (int k = 0; k < DPT; ++k) acc[k] = 0.f;
__syncthreads();
for (int64_t tt = t0; tt < t1; tt += TILE) {
  const int n = t1 - tt < TILE ? int(t1 - tt) : TILE;
  float score = -INFINITY;
  if (tid < n) {
    score = 0.f;
    for (int d = 0; d < dim; ++d) score += q_s[d] * float(K(bi, tt + tid, h, d));
  }
  const float m_new = fmaxf(m, block_reduce(score, true));
  const float r = __expf(m - m_new);
  const float p = tid < n ? __expf(score - m_new) : 0.f;
  p_s[tid] = p;
  l = l * r + block_reduce(p, false);
  m = m_new;
  for (int k = 0; k < DPT; ++k) {
    const int d = tid + k * TILE;
    if (d >= dim) break;
    float a = acc[k] * r;
    for (int i = 0; i < n; ++i) a += p_s[i] * float(V(bi, tt + i, h, d));
    acc[k] = a;
  }
  __syncthreads();
}
for (int k = 0; k < DPT; ++k) {
  const int d = tid + k * TILE;
  if (d < dim) o_partial(bi, h, split, d) = l > 0.f ? acc[k] / l : 0.f;
}
if (tid == 0) lse_partial(bi, h, split) = l > 0.f ? m + __logf(l) : -INFINITY;
__threadfence();
__syncthreads();
if (tid == 0) is_last = atomicAdd(&counter(bi, h), 1) == splits - 1;
__syncthreads();
if (is_last) {
  __threadfence();
  float lse_max = -INFINITY;
  for (int64_t p = 0; p < splits; ++p) lse_max = fmaxf(lse_max, __ldcg(&lse_partial(bi, h, p)));
  for (int d = tid; d < dim; d += TILE) {
    float num = 0.f, den = 0.f;
    for (int64_t p = 0; p < splits; ++p) {
      const float lse = __ldcg(&lse_partial(bi, h, p));
      const float w = lse == -INFINITY ? 0.f : __expf(lse - lse_max);
      num += w * __ldcg(&o_partial(bi, h, p, d));
      den += w;
    }
    Out(bi, h, d) = tilejit::bfloat16(den > 0.f ? num / den : 0.f);
  }
  if (tid == 0) counter(bi, h) = 0;  // leave it zeroed (zero_once)
}
)";

struct FlashDecodingConfig {
  int heads = 32;
  int dim = 128;
  int splits = 16;
};

inline tilejit::PrimFunc flash_decoding(const FlashDecodingConfig& c, bool with_cuda = true) {
  using namespace tilejit;
  const Expr b = symbolic("b"), s_kv = symbolic("s_kv");
  auto builder = prim_func("flash_decoding")
                     .tensor("Q", {b, c.heads, c.dim}, DataType::bfloat16())
                     .tensor("K", {b, s_kv, c.heads, c.dim}, DataType::bfloat16())
                     .tensor("V", {b, s_kv, c.heads, c.dim}, DataType::bfloat16())
                     .tensor("Out", {b, c.heads, c.dim}, DataType::bfloat16())
                     .tensor("o_partial", {b, c.heads, c.splits, c.dim}, DataType::float32())
                     .tensor("lse_partial", {b, c.heads, c.splits}, DataType::float32())
                     .tensor("counter", {b, c.heads}, DataType::int32())
                     .grid({c.splits, c.heads, b})
                     .threads(128);
  const std::string prologue = "constexpr int64_t dim = " + std::to_string(c.dim) + ";\n";
  builder.body("cpu", prologue + kFlashDecodingCpuBody);
  if (with_cuda) builder.body("cuda", prologue + kFlashDecodingCudaBody);
  return builder.build();
}

inline tilejit::JitOptions flash_decoding_options(std::string target = "auto") {
  tilejit::JitOptions o;
  o.out_idx = {3};
  o.workspace_idx = {4, 5, 6};
  o.workspace_init = {{"counter", tilejit::WorkspaceInit::kZeroOnce}};
  o.target = std::move(target);
  return o;
}

/// softmax(q k^T / sqrt(dim)) v per (batch, head), in double.
inline std::vector<float> flash_decoding_reference(const uint16_t* q, const uint16_t* k,
                                                   const uint16_t* v, int64_t b, int64_t s_kv,
                                                   const FlashDecodingConfig& c) {
  std::vector<float> out(size_t(b * c.heads * c.dim));
  std::vector<double> scores(static_cast<size_t>(s_kv));
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < c.heads; ++h) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t t = 0; t < s_kv; ++t) {
        double acc = 0;
        for (int d = 0; d < c.dim; ++d) {
          acc += double(from_bf16(q[(bi * c.heads + h) * c.dim + d])) *
                 from_bf16(k[((bi * s_kv + t) * c.heads + h) * c.dim + d]);
        }
        scores[size_t(t)] = acc / std::sqrt(double(c.dim));
        mx = std::max(mx, scores[size_t(t)]);
      }
      double sum = 0;
      std::vector<double> o(size_t(c.dim), 0.0);
      for (int64_t t = 0; t < s_kv; ++t) {
        const double p = std::exp(scores[size_t(t)] - mx);
        sum += p;
        for (int d = 0; d < c.dim; ++d) o[d] += p * from_bf16(v[((bi * s_kv + t) * c.heads + h) * c.dim + d]);
      }
      for (int d = 0; d < c.dim; ++d) out[size_t((bi * c.heads + h) * c.dim + d)] = float(o[d] / sum);
    }
  return out;
}

}  // namespace examples
