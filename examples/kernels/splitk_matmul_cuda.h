// The CUDA body of the split-K matmul (see splitk_matmul.h for the
// signature and the workspace contract). 256 threads compute one 32x32 tile
// of one K split through shared memory; the last split of a tile to finish
// reduces the partial sums and re-arms the tile's counter.
#pragma once

namespace examples {

inline constexpr const char* kSplitKCudaBody = R"(
constexpr int TM = 32, TN = 32, TK = 32;
__shared__ float As[TM][TK + 1];
__shared__ float Bs[TK][TN + 1];
__shared__ int is_last;
const int64_t tiles_n = tilejit::ceildiv(N, TN);
const int64_t tile = bx, split = by, splits = grid_dim.y;
const int64_t m0 = (tile / tiles_n) * TM, n0 = (tile % tiles_n) * TN;
const int64_t chunk = tilejit::ceildiv(K, splits);
const int64_t k0 = split * chunk < K ? split * chunk : K;
const int64_t k1 = k0 + chunk < K ? k0 + chunk : K;
const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;  // 8 rows of 32 threads
float acc[4] = {0.f, 0.f, 0.f, 0.f};
for (int64_t kk = k0; kk < k1; kk += TK) {
  for (int i = threadIdx.x; i < TM * TK; i += blockDim.x) {
    const int r = i / TK, c = i % TK;
    const int64_t gm = m0 + r, gk = kk + c;
    As[r][c] = (gm < M && gk < k1) ? A(gm, gk) : 0.f;
  }
  for (int i = threadIdx.x; i < TK * TN; i += blockDim.x) {
    const int r = i / TN, c = i % TN;
    const int64_t gk = kk + r, gn = n0 + c;
    Bs[r][c] = (gk < k1 && gn < N) ? B(gk, gn) : 0.f;
  }
  __syncthreads();
  #pragma unroll 8
  for (int c = 0; c < TK; ++c) {
    const float b = Bs[c][tx];
    #pragma unroll
    for (int r = 0; r < 4; ++r) acc[r] += As[ty + 8 * r][c] * b;
  }
  __syncthreads();
}
for (int r = 0; r < 4; ++r) {
  const int64_t m = m0 + ty + 8 * r, n = n0 + tx;
  if (m < M && n < N) partial(split, m, n) = acc[r];
}
// Publish this split's partial sums; the last split of the tile reduces them.
__threadfence();
__syncthreads();
if (threadIdx.x == 0) is_last = atomicAdd(&tile_counter(tile), 1) == splits - 1;
__syncthreads();
if (is_last) {
  __threadfence();
  for (int i = threadIdx.x; i < TM * TN; i += blockDim.x) {
    const int64_t m = m0 + i / TN, n = n0 + i % TN;
    if (m >= M || n >= N) continue;
    float sum = 0.f;
    for (int64_t p = 0; p < splits; ++p) sum += __ldcg(&partial(p, m, n));
    C(m, n) = sum;
  }
  if (threadIdx.x == 0) tile_counter(tile) = 0;  // leave it zeroed (zero_once)
}
)";

}  // namespace examples
