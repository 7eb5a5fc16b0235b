// The CUDA body of the sparse attention forward (see sparse_attention.h for
// the signature). One block of 128 threads per query position, with the
// seed's data flow: each step of `block` top-k rows is gathered into ws_kv,
// scored into ws_s, turned into probabilities in ws_p, and accumulated into
// ws_o with an online softmax; the running max and sum live in shared memory.
// A block only touches its own slice of each workspace, so __syncthreads()
// orders everything it needs.
#pragma once

namespace examples {

inline constexpr const char* kSparseAttentionCudaBody = R"(
__shared__ float m_run[heads], l_run[heads], rescale[heads];
__shared__ int valid[block];
const int64_t bi = bx / s, si = bx % s;
const float scale = rsqrtf(float(dim));
const int tid = threadIdx.x, nthreads = blockDim.x;
for (int h = tid; h < heads; h += nthreads) { m_run[h] = -INFINITY; l_run[h] = 0.f; }
for (int e = tid; e < heads * dim; e += nthreads) ws_o(bx, e / dim, e % dim) = 0.f;
for (int64_t k0 = 0; k0 < topk; k0 += block) {
  __syncthreads();
  for (int j = tid; j < block; j += nthreads) {
    const int32_t row = k0 + j < topk ? Indices(bi, si, k0 + j) : -1;
    valid[j] = row >= 0 && row < s_kv ? row : -1;
  }
  __syncthreads();
  for (int e = tid; e < block * dim; e += nthreads) {  // gather
    const int j = e / dim, d = e % dim;
    ws_kv(bx, j, d) = valid[j] >= 0 ? KV(bi, valid[j], d) : tilejit::bfloat16(0.f);
  }
  __syncthreads();
  for (int e = tid; e < heads * block; e += nthreads) {  // scores
    const int h = e / block, j = e % block;
    float acc = -INFINITY;
    if (valid[j] >= 0) {
      acc = 0.f;
      for (int d = 0; d < dim; ++d) acc += float(Q(bi, si, h, d)) * float(ws_kv(bx, j, d));
      acc *= scale;
    }
    ws_s(bx, h, j) = acc;
  }
  __syncthreads();
  for (int h = tid; h < heads; h += nthreads) {  // online softmax, one thread per head
    float step_max = -INFINITY;
    for (int j = 0; j < block; ++j) step_max = fmaxf(step_max, ws_s(bx, h, j));
    const float m_new = fmaxf(m_run[h], step_max);
    if (m_new == -INFINITY) {
      rescale[h] = 1.f;
      for (int j = 0; j < block; ++j) ws_p(bx, h, j) = tilejit::bfloat16(0.f);
      continue;
    }
    const float r = __expf(m_run[h] - m_new);
    float step_sum = 0.f;
    for (int j = 0; j < block; ++j) {
      const tilejit::bfloat16 p = tilejit::bfloat16(valid[j] >= 0 ? __expf(ws_s(bx, h, j) - m_new) : 0.f);
      ws_p(bx, h, j) = p;
      step_sum += float(p);
    }
    l_run[h] = l_run[h] * r + step_sum;
    m_run[h] = m_new;
    rescale[h] = r;
  }
  __syncthreads();
  for (int e = tid; e < heads * dim; e += nthreads) {  // accumulate
    const int h = e / dim, d = e % dim;
    float acc = ws_o(bx, h, d) * rescale[h];
    for (int j = 0; j < block; ++j) acc += float(ws_p(bx, h, j)) * float(ws_kv(bx, j, d));
    ws_o(bx, h, d) = acc;
  }
}
__syncthreads();
for (int e = tid; e < heads * dim; e += nthreads) {
  const int h = e / dim, d = e % dim;
  const float inv = l_run[h] > 0.f ? 1.f / l_run[h] : 0.f;
  Output(bi, si, h, d) = tilejit::bfloat16(ws_o(bx, h, d) * inv);
}
)";

}  // namespace examples
