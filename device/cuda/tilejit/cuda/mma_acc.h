// Fragments of T.gemm kept in registers (src/backend/cuda/fragments.h, Note
// [Register accumulators]): each thread holds kCount elements, laid out as
// mma.sync leaves its accumulators.
//
// MmaAcc<M, N, WM, WN>: an M x N tile over the block's warps as a WM x WN
// grid (warp w at row w / WN, column w % WN), each owning an (M / WM) x
// (N / WN) tile of 16 x 8 mma tiles. Register r of a thread holds element
// (row(r), col(r)):
//   r = (mt * NT + nt) * 4 + q   (mt, nt: the mma tile in the warp's tile)
//   row = wm * WARP_M + mt * 16 + lane / 4 + (q / 2) * 8
//   col = wn * WARP_N + nt * 8 + (lane % 4) * 2 + q % 2
// The elements are float (an accumulator) or 16-bit (an operand: with
// WN = 1, the registers of two neighbouring 16 x 8 tiles are the mma's A
// fragment of a 16 x 16 block, so a gemm takes them as they are).
// MmaAcc<16, N, 1, WN, MR>: an accumulator of MR < 16 rows, whose other
// rows only registers hold; every op here skips them.
// MmaRows<M, WM>: a vector of the M rows of such a tile with WN = 1; slot s
// of a thread holds row(s) = w * WARP_M + (s / 2) * 16 + lane / 4 +
// (s % 2) * 8, the rows of its accumulator registers (row_slot(r)), so the
// four threads of a quad hold the same rows.
//
// A T.Parallel loop over such a fragment is a loop over r (the lowering's
// "register loop"), and each op below is one thread's part of a tile op;
// none synchronises the block but acc_reduce_rows into memory with WN > 1.
//
//   acc_gemm<L, K, TA, TB, LDA, LDB>(acc, a, b, clear)   acc (+)= op(A) op(B)
//   acc_gemm_rs<L, K, TB, LDB>(acc, a_regs, b, clear)    A from registers
//   acc_fill<L>(acc, v)
//   acc_convert<L>(src, dst)    register to register, another element type
//   acc_store<L>(acc, dst)      every existing element of a Rect (copy.h)
//   acc_load<L>(acc, src)       from a Rect, 0 where src has no element
//   rows_store<R>(v, dst) / rows_load<R>(v, src)   a row vector (Rect row 0),
//     MmaRows, PartRows or Replicated
//   acc_reduce_rows<kind, L>(acc, dst, clear, scratch)   dst[M] over columns;
//     scratch: WN * M floats of shared memory when WN > 1 (the warps of a
//     row combine there), followed by the block barrier it needs.
//   acc_reduce_rows_to<kind, L>(acc, rows, clear)   into a row vector
#pragma once

#include "tilejit/cuda/copy.h"
#include "tilejit/cuda/mma.h"
#include "tilejit/cuda/reduce.h"
#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

template <int M, int N, int WM, int WN, int MR = M>
struct MmaAcc {
  static constexpr int kM = M, kN = N, kWM = WM, kWN = WN;
  static constexpr int kMR = MR;  // the tile's rows; those past them only registers hold
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
  /// The MmaRows slot of register r's row (WN = 1).
  __host__ __device__ static constexpr int row_slot(int r) { return (r / (NT * 4)) * 2 + (r % 4) / 2; }
};

template <int M, int WM>
struct MmaRows {
  static constexpr int kM = M, kWM = WM, kWarpM = M / WM, MT = kWarpM / 16;
  static constexpr int kCount = MT * 2;
  static_assert(M % (16 * WM) == 0, "warp tiles of whole 16-row blocks");
  __device__ __forceinline__ static int row(int s) {
    return (thread_rank() / 32) * kWarpM + (s / 2) * 16 + (thread_rank() % 32) / 4 + (s % 2) * 8;
  }
  // The one of a row's four threads (a quad) that stores it to memory.
  __device__ __forceinline__ static bool leader() { return thread_rank() % 4 == 0; }
};

namespace mma_detail {

template <typename T>
__device__ __forceinline__ unsigned pack16(T lo, T hi) {
  if constexpr (is_same_v<T, tilejit::bfloat16>) {
    return unsigned(__bfloat16_as_ushort(lo)) | (unsigned(__bfloat16_as_ushort(hi)) << 16);
  } else {
    return unsigned(__half_as_ushort(lo)) | (unsigned(__half_as_ushort(hi)) << 16);
  }
}

}  // namespace mma_detail

template <typename L, int K, bool TA, bool TB, int LDA, int LDB, typename T>
__device__ __forceinline__ void acc_gemm(float* acc, const T* a, const T* b, bool clear) {
  float(&tiles)[L::MT][L::NT][4] = *reinterpret_cast<float(*)[L::MT][L::NT][4]>(acc);
  if (clear) {
#pragma unroll
    for (int r = 0; r < L::kCount; ++r) acc[r] = 0.f;
  }
  warp_mma<L::MT, L::NT, TA, TB, LDA, LDB, K>(tiles, a, b, L::row0(), L::col0());
}

// A from registers (an MmaAcc<M, K, WM, 1> of T, the C's rows and warps):
// the registers of tiles 2k and 2k + 1 of each 16-row block are the A
// fragment of its k-th 16 x 16 block (PTX ISA, "Matrix Fragments for
// mma.m16n8k16": a0 / a1 the first tile's rows g / g + 8, a2 / a3 the
// second's). Unrolled: the registers are named by constants.
template <typename L, int K, bool TB, int LDB, typename T>
__device__ __forceinline__ void acc_gemm_rs(float* acc, const T* a, const T* b, bool clear) {
  static_assert(L::kWN == 1 && K % 16 == 0, "A from registers takes warps on rows only");
  constexpr int KT = K / 8;  // A's 8-column tiles per 16-row block
  float(&tiles)[L::MT][L::NT][4] = *reinterpret_cast<float(*)[L::MT][L::NT][4]>(acc);
  if (clear) {
#pragma unroll
    for (int r = 0; r < L::kCount; ++r) acc[r] = 0.f;
  }
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    unsigned af[L::MT][4];
#pragma unroll
    for (int mt = 0; mt < L::MT; ++mt) {
      const T* t = a + (mt * KT + 2 * kk) * 4;
      af[mt][0] = mma_detail::pack16(t[0], t[1]);
      af[mt][1] = mma_detail::pack16(t[2], t[3]);
      af[mt][2] = mma_detail::pack16(t[4], t[5]);
      af[mt][3] = mma_detail::pack16(t[6], t[7]);
    }
#pragma unroll
    for (int np = 0; np < L::NT / 2; ++np) {
      unsigned bf[4];
      load_b<TB, LDB>(bf, b, kk * 16, np * 16);
#pragma unroll
      for (int mt = 0; mt < L::MT; ++mt) {
        mma_detail::mma_16816<T>(tiles[mt][2 * np], af[mt], bf[0], bf[1]);
        mma_detail::mma_16816<T>(tiles[mt][2 * np + 1], af[mt], bf[2], bf[3]);
      }
    }
  }
}

template <typename L, typename E, typename V>
__device__ __forceinline__ void acc_fill(E* acc, V v) {
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) acc[r] = convert<E>(v);
}

template <typename L, typename S, typename D>
__device__ __forceinline__ void acc_convert(const S* src, D* dst) {
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) dst[r] = convert<D>(src[r]);
}

// Row vectors of either layout (MmaRows, or part_tile.h's PartRows), and
// part_tile.h's Replicated fragments, of any element type: the one thread
// of each row's holders that R::leader() names stores it.
template <typename R, typename E, typename D>
__device__ __forceinline__ void rows_store(const E* v, const Rect<D>& dst) {
  if (!R::leader() || 0 < dst.r_lo || 0 >= dst.r_hi) return;
#pragma unroll
  for (int s = 0; s < R::kCount; ++s) {
    const int i = R::row(s);
    if (i >= dst.c_lo && i < dst.c_hi) dst.base[dst.origin + i] = convert<D>(v[s]);
  }
}

template <typename R, typename E, typename S>
__device__ __forceinline__ void rows_load(E* v, const Rect<S>& src) {
  const bool row = 0 >= src.r_lo && 0 < src.r_hi;
#pragma unroll
  for (int s = 0; s < R::kCount; ++s) {
    const int i = R::row(s);
    v[s] = row && i >= src.c_lo && i < src.c_hi ? convert<E>(src.base[src.origin + i]) : convert<E>(0);
  }
}

template <typename L, typename E, typename D>
__device__ __forceinline__ void acc_store(const E* acc, const Rect<D>& dst) {
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) {
    const int i = L::row(r), j = L::col(r);
    if (i >= L::kMR || i < dst.r_lo || i >= dst.r_hi || j < dst.c_lo || j >= dst.c_hi) continue;
    dst.base[dst.origin + int64_t(i) * dst.stride + j] = convert<D>(acc[r]);
  }
}

template <typename L, typename E, typename S>
__device__ __forceinline__ void acc_load(E* acc, const Rect<S>& src) {
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) {
    const int i = L::row(r), j = L::col(r);
    const bool has = i < L::kMR && i >= src.r_lo && i < src.r_hi && j >= src.c_lo && j < src.c_hi;
    acc[r] = convert<E>(has ? convert<float>(src.base[src.origin + int64_t(i) * src.stride + j]) : 0.f);
  }
}

namespace mma_detail {

// Row (mt, h) of this thread's 16-row tiles (each thread holds two rows of
// each, h = 0 and 1) reduced over the warp tile's columns: every lane of the
// quad ends with the whole row.
template <ReduceKind kKind, typename L>
__device__ __forceinline__ float row_value(const float* acc, int mt, int h) {
  using reduce_detail::combine;
  using reduce_detail::element;
  float v = reduce_detail::identity<kKind, float>();
#pragma unroll
  for (int nt = 0; nt < L::NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      v = combine<kKind>(v, element<kKind>(acc[(mt * L::NT + nt) * 4 + h * 2 + e]));
    }
  }
  v = combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

}  // namespace mma_detail

template <ReduceKind kKind, typename L, typename D>
__device__ __forceinline__ void acc_reduce_rows(const float* acc, D* dst, bool clear,
                                                float* scratch) {
  using reduce_detail::combine;
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float v = mma_detail::row_value<kKind, L>(acc, mt, h);
      const int row = L::row0() + mt * 16 + L::lane() / 4 + h * 8;
      if (L::lane() % 4 == 0 && row < L::kMR) {
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
    for (int row = thread_rank(); row < L::kMR; row += block_threads()) {
      float v = clear ? reduce_detail::identity<kKind, float>() : convert<float>(dst[row]);
      for (int w = 0; w < L::kWN; ++w) v = combine<kKind>(v, scratch[w * L::kM + row]);
      dst[row] = convert<D>(v);
    }
  }
}

template <ReduceKind kKind, typename L>
__device__ __forceinline__ void acc_reduce_rows_to(const float* acc, float* rows, bool clear) {
  static_assert(L::kWN == 1, "a row vector in registers takes warps on rows only");
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float v = mma_detail::row_value<kKind, L>(acc, mt, h);
      float& slot = rows[mt * 2 + h];
      slot = clear ? v : reduce_detail::combine<kKind>(slot, v);
    }
  }
}

}  // namespace tilejit::cuda
