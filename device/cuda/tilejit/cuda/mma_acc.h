// Accumulators of T.gemm kept in registers: a fragment C (M x N, float) that
// the CUDA lowering gives the "mma" layout (src/backend/cuda/fragments.h)
// lives as kCount floats in each thread, laid out as mma.sync leaves them.
//
// MmaAcc<M, N, WM, WN>: the block's warps as a WM x WN grid (warp w at row
// w / WN, column w % WN), each owning an (M / WM) x (N / WN) tile of 16 x 8
// mma tiles. Register r of a thread holds element (row(r), col(r)):
//   r = (mt * NT + nt) * 4 + q   (mt, nt: the mma tile in the warp's tile)
//   row = wm * WARP_M + mt * 16 + lane / 4 + (q / 2) * 8
//   col = wn * WARP_N + nt * 8 + (lane % 4) * 2 + q % 2
// A T.Parallel loop over such a fragment is a loop over r (the lowering's
// "register loop"), and each op below is one thread's part of a tile op;
// none synchronises the block.
//
//   acc_gemm<L, K, TA, TB, LDA, LDB>(acc, a, b, clear)   acc (+)= op(A) op(B)
//   acc_fill<L>(acc, v)
//   acc_store<L>(acc, dst)      every existing element of a Rect (copy.h)
//   acc_load<L>(acc, src)       from a Rect, 0 where src has no element
//   acc_reduce_rows<kind, L>(acc, dst, clear, scratch)   dst[M] over columns;
//     scratch: WN * M floats of shared memory when WN > 1 (the warps of a
//     row combine there), followed by the block barrier it needs.
#pragma once

#include "tilejit/cuda/copy.h"
#include "tilejit/cuda/mma.h"
#include "tilejit/cuda/reduce.h"
#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

template <int M, int N, int WM, int WN>
struct MmaAcc {
  static constexpr int kM = M, kN = N, kWM = WM, kWN = WN;
  static constexpr int kWarpM = M / WM, kWarpN = N / WN;
  static constexpr int MT = kWarpM / 16, NT = kWarpN / 8;
  static constexpr int kCount = MT * NT * 4;
  static_assert(M % (16 * WM) == 0 && N % (16 * WN) == 0, "warp tiles of whole 16 x 16 blocks");

  __device__ __forceinline__ static int warp() { return thread_rank() / 32; }
  __device__ __forceinline__ static int lane() { return thread_rank() % 32; }
  __device__ __forceinline__ static int row0() { return (warp() / WN) * kWarpM; }
  __device__ __forceinline__ static int col0() { return (warp() % WN) * kWarpN; }
  __device__ __forceinline__ static int row(int r) {
    return row0() + (r / (NT * 4)) * 16 + lane() / 4 + ((r % 4) / 2) * 8;
  }
  __device__ __forceinline__ static int col(int r) {
    return col0() + ((r / 4) % NT) * 8 + (lane() % 4) * 2 + r % 2;
  }
};

template <typename L, int K, bool TA, bool TB, int LDA, int LDB, typename T>
__device__ __forceinline__ void acc_gemm(float* acc, const T* a, const T* b, bool clear) {
  float(&tiles)[L::MT][L::NT][4] = *reinterpret_cast<float(*)[L::MT][L::NT][4]>(acc);
  if (clear) {
#pragma unroll
    for (int r = 0; r < L::kCount; ++r) acc[r] = 0.f;
  }
  warp_mma<L::MT, L::NT, TA, TB, LDA, LDB, K>(tiles, a, b, L::row0(), L::col0());
}

template <typename L, typename V>
__device__ __forceinline__ void acc_fill(float* acc, V v) {
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) acc[r] = convert<float>(v);
}

template <typename L, typename D>
__device__ __forceinline__ void acc_store(const float* acc, const Rect<D>& dst) {
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) {
    const int i = L::row(r), j = L::col(r);
    if (i < dst.r_lo || i >= dst.r_hi || j < dst.c_lo || j >= dst.c_hi) continue;
    dst.base[dst.origin + int64_t(i) * dst.stride + j] = convert<D>(acc[r]);
  }
}

template <typename L, typename S>
__device__ __forceinline__ void acc_load(float* acc, const Rect<S>& src) {
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) {
    const int i = L::row(r), j = L::col(r);
    const bool has = i >= src.r_lo && i < src.r_hi && j >= src.c_lo && j < src.c_hi;
    acc[r] = has ? convert<float>(src.base[src.origin + int64_t(i) * src.stride + j]) : 0.f;
  }
}

template <ReduceKind kKind, typename L, typename D>
__device__ __forceinline__ void acc_reduce_rows(const float* acc, D* dst, bool clear,
                                                float* scratch) {
  using reduce_detail::combine;
  using reduce_detail::element;
  // Each thread holds two rows of each 16-row mma tile: (mt, half).
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float v = reduce_detail::identity<kKind, float>();
#pragma unroll
      for (int nt = 0; nt < L::NT; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          v = combine<kKind>(v, element<kKind>(acc[(mt * L::NT + nt) * 4 + h * 2 + e]));
        }
      }
      // The four lanes of a quad hold the rest of the row's columns.
      v = combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, 1));
      v = combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, 2));
      const int row = L::row0() + mt * 16 + L::lane() / 4 + h * 8;
      if (L::lane() % 4 == 0) {
        if constexpr (L::kWN == 1) {
          const float prev =
              clear ? reduce_detail::identity<kKind, float>() : convert<float>(dst[row]);
          dst[row] = convert<D>(combine<kKind>(prev, v));
        } else {
          scratch[(L::warp() % L::kWN) * L::kM + row] = v;
        }
      }
    }
  }
  if constexpr (L::kWN > 1) {
    // The warps of a row of warps meet here.
    __syncthreads();
    for (int row = thread_rank(); row < L::kM; row += block_threads()) {
      float v = clear ? reduce_detail::identity<kKind, float>() : convert<float>(dst[row]);
      for (int w = 0; w < L::kWN; ++w) v = combine<kKind>(v, scratch[w * L::kM + row]);
      dst[row] = convert<D>(v);
    }
  }
}

}  // namespace tilejit::cuda
