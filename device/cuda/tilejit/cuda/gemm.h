// T.gemm on the GPU for operands in memory: C (M x N, row length LDC) +=
// op(A) * op(B), or = when `clear`, with the same template arguments as the
// CPU library's gemm (tilejit/cpu/gemm.h) and the block's thread count.
//
// Where the operands allow it (A and B bf16 or fp16 of one type in shared
// memory, C float, M and N multiples of 16, K of 16, row lengths of 8 and
// 16-byte aligned bases), the block's warps share the warp tiles of C and
// each runs mma.sync over its tile (mma.h): the tile's accumulators are read
// from C, or zero, and written back at the end. Otherwise each thread
// computes its share of C's elements in float (double for double; an
// integer C in its own type, exactly) from the operands as they are: a slow
// path, for any dtype and shape.
#pragma once

#include "tilejit/cuda/mma.h"
#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {
namespace gemm_detail {

// The warp tile (rows, columns) of an M x N block shared by W warps: the
// largest of 64 x 32, 32 x 32, 32 x 16, 16 x 16 that divides it and still
// gives every warp a tile, else the smallest that divides it.
template <int M, int N, int W>
struct WarpTile {
  static constexpr int count(int m, int n) { return (M % m == 0 && N % n == 0) ? (M / m) * (N / n) : 0; }
  static constexpr int pick_m() {
    if (count(64, 32) >= W) return 64;
    if (count(32, 32) >= W) return 32;
    if (count(32, 16) >= W) return 32;
    return 16;
  }
  static constexpr int pick_n() {
    if (count(64, 32) >= W) return 32;
    if (count(32, 32) >= W) return 32;
    return 16;
  }
  static constexpr int rows = pick_m(), cols = pick_n();
};

template <typename T>
__device__ __forceinline__ bool aligned16(const T* p) {
  return reinterpret_cast<uint64_t>(p) % 16 == 0;
}

template <int M, int N, int K, bool TA, bool TB, int LDA, int LDB, int LDC, int THREADS,
          typename A, typename B, typename C>
__device__ __forceinline__ void gemm_simt(const A* a, const B* b, C* c, bool clear, int rank) {
  // An integer C (int8 x int8 -> int32) accumulates exactly, in its own type.
  using Acc = typename Conditional<is_int_v<C>, C,
                                   typename Conditional<is_same_v<C, double>, double, float>::type>::type;
#pragma unroll 1
  for (int e = rank; e < M * N; e += THREADS) {
    const int i = e / N, j = e % N;
    Acc acc = clear ? Acc(0) : convert<Acc>(c[i * LDC + j]);
#pragma unroll 8
    for (int k = 0; k < K; ++k) {
      const Acc x = convert<Acc>(TA ? a[k * LDA + i] : a[i * LDA + k]);
      const Acc y = convert<Acc>(TB ? b[j * LDB + k] : b[k * LDB + j]);
      acc += x * y;
    }
    c[i * LDC + j] = convert<C>(acc);
  }
}

}  // namespace gemm_detail

template <int M, int N, int K, bool TA, bool TB, int LDA, int LDB, int LDC, int THREADS,
          typename A, typename B, typename C>
__device__ __forceinline__ void gemm(const A* a, const B* b, C* c, bool clear,
                                     int rank = thread_rank()) {
  constexpr bool kMma = is_same_v<A, B> && is_half_v<A> && is_same_v<C, float> && M % 16 == 0 &&
                        N % 16 == 0 && K % 16 == 0 && LDA % 8 == 0 && LDB % 8 == 0 &&
                        THREADS % 32 == 0;
  if constexpr (kMma) {
    if (__isShared(a) && __isShared(b) && gemm_detail::aligned16(a) && gemm_detail::aligned16(b)) {
      using Tile = gemm_detail::WarpTile<M, N, THREADS / 32>;
      constexpr int MT = Tile::rows / 16, NT = Tile::cols / 8;
      constexpr int kTilesN = N / Tile::cols, kTiles = (M / Tile::rows) * kTilesN;
      const int lane = rank % 32;
      for (int t = rank / 32; t < kTiles; t += THREADS / 32) {
        const int m0 = (t / kTilesN) * Tile::rows, n0 = (t % kTilesN) * Tile::cols;
        float acc[MT][NT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int i = m0 + mt * 16 + lane / 4 + (q / 2) * 8;
              const int j = n0 + nt * 8 + (lane % 4) * 2 + q % 2;
              acc[mt][nt][q] = clear ? 0.f : c[i * LDC + j];
            }
          }
        }
        warp_mma<MT, NT, TA, TB, LDA, LDB, K>(acc, a, b, m0, n0);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int i = m0 + mt * 16 + lane / 4 + (q / 2) * 8;
              const int j = n0 + nt * 8 + (lane % 4) * 2 + q % 2;
              c[i * LDC + j] = acc[mt][nt][q];
            }
          }
        }
      }
      return;
    }
  }
  gemm_detail::gemm_simt<M, N, K, TA, TB, LDA, LDB, LDC, THREADS>(a, b, c, clear, rank);
}

}  // namespace tilejit::cuda
