// Split-K matmul, C[M, N] = A[M, K] @ B[K, N], with two workspaces:
//   partial[split_k, M, N]  float32 partial sums, one slice per K split;
//   tile_counter[tiles]     int32, zero_once: how many splits of an output
//                           tile have finished. The last one reduces the
//                           tile and re-arms its counter to 0, so the kernel
//                           leaves the workspace zeroed as zero_once requires
//                           (the "serial split-K" fix-up of CUTLASS).
// M, N and K are dynamic; split_k is fixed when the kernel is made.
#pragma once

#include <tilejit/tilejit.h>

#include <cmath>
#include <vector>

namespace examples {

inline constexpr const char* kSplitKCpuBody = R"(
constexpr int64_t TM = 32, TN = 32;
const int64_t tiles_n = tilejit::ceildiv(N, TN);
const int64_t tile = bx, split = by, splits = grid_dim.y;
const int64_t m0 = (tile / tiles_n) * TM, n0 = (tile % tiles_n) * TN;
const int64_t m1 = m0 + TM < M ? m0 + TM : M, n1 = n0 + TN < N ? n0 + TN : N;
const int64_t chunk = tilejit::ceildiv(K, splits);
const int64_t k0 = split * chunk < K ? split * chunk : K;
const int64_t k1 = k0 + chunk < K ? k0 + chunk : K;
for (int64_t m = m0; m < m1; ++m) {
  float acc[TN] = {};
  for (int64_t k = k0; k < k1; ++k) {
    const float a = A(m, k);
    for (int64_t n = n0; n < n1; ++n) acc[n - n0] += a * B(k, n);
  }
  for (int64_t n = n0; n < n1; ++n) partial(split, m, n) = acc[n - n0];
}
// Publish this split's partial sums; the last split of the tile reduces them.
const int32_t done = __atomic_add_fetch(&tile_counter(tile), 1, __ATOMIC_ACQ_REL);
if (done == splits) {
  for (int64_t m = m0; m < m1; ++m)
    for (int64_t n = n0; n < n1; ++n) {
      float sum = 0.f;
      for (int64_t p = 0; p < splits; ++p) sum += partial(p, m, n);
      C(m, n) = sum;
    }
  __atomic_store_n(&tile_counter(tile), 0, __ATOMIC_RELEASE);  // leave it zeroed
}
)";

/// The signature; `cuda_body` is added when given (see splitk_matmul.cu.h).
inline tilejit::PrimFunc splitk_matmul(int split_k, const char* cuda_body = nullptr) {
  using namespace tilejit;
  const Expr M = symbolic("M"), N = symbolic("N"), K = symbolic("K");
  const Expr tiles = ceildiv(M, 32) * ceildiv(N, 32);
  auto builder = prim_func("splitk_matmul")
                     .tensor("A", {M, K}, DataType::float32())
                     .tensor("B", {K, N}, DataType::float32())
                     .tensor("C", {M, N}, DataType::float32())
                     .tensor("partial", {split_k, M, N}, DataType::float32())
                     .tensor("tile_counter", {tiles}, DataType::int32())
                     .grid({tiles, split_k})
                     .threads(256)
                     .body("cpu", kSplitKCpuBody);
  if (cuda_body) builder.body("cuda", cuda_body);
  return builder.build();
}

inline tilejit::JitOptions splitk_options(std::string target = "auto") {
  tilejit::JitOptions o;
  o.out_idx = {2};
  o.workspace_idx = {3, 4};
  o.workspace_init = {{"tile_counter", tilejit::WorkspaceInit::kZeroOnce}};
  o.target = std::move(target);
  return o;
}

/// C = A @ B in double, rounded to float.
inline std::vector<float> matmul_reference(const float* a, const float* b, int64_t m, int64_t n,
                                           int64_t k) {
  std::vector<float> c(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a[i * k + p]) * b[p * n + j];
      c[size_t(i * n + j)] = float(s);
    }
  return c;
}

}  // namespace examples
