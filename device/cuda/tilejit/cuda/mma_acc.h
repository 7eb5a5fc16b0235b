// Fragments of T.gemm kept in registers (src/backend/cuda/fragments.h, Note
// [Register accumulators]): each thread holds kCount elements, laid out as
// mma.sync leaves its accumulators.
//
// MmaAcc<M, N, WM, WN, MR = M, WR = 1>: an M x N tile over the block's warps
// as a WM x WN grid of warp tiles, each held by WR warps alike (warp w at
// row w / (WN * WR), column (w / WR) % WN), each owning an (M / WM) x
// (N / WN) tile of 16 x 8 mma tiles. Register r of a thread holds element
// (row(r), col(r)):
//   r = (mt * NT + nt) * 4 + q   (mt, nt: the mma tile in the warp's tile)
//   row = wm * WARP_M + mt * 16 + lane / 4 + (q / 2) * 8
//   col = wn * WARP_N + nt * 8 + (lane % 4) * 2 + q % 2
// The elements are float (an accumulator) or 16-bit (an operand: with
// WN = 1, the registers of two neighbouring 16 x 8 tiles are the mma's A
// fragment of a 16 x 16 block, so a gemm takes them as they are). WR > 1 is
// the A operand of a gemm whose accumulator has WN = WR warps on a warp
// row: each of them holds the row's whole A.
// MmaAcc<16, N, 1, WN, MR>: an accumulator of MR < 16 rows, whose other
// rows only registers hold; every op here skips them.
// MmaRows<M, WM, WR = 1>: a vector of the M rows of such a tile over WM x WR
// warps (the accumulator's WM x WN); slot s of a thread holds row(s) =
// (w / WR) * WARP_M + (s / 2) * 16 + lane / 4 + (s % 2) * 8, the rows of
// its accumulator registers (row_slot(r)), so the four threads of a quad
// and the WR warps of a warp row hold the same rows.
//
// A T.Parallel loop over such a fragment is a loop over r (the lowering's
// "register loop"), and each op below is one thread's part of a tile op;
// none synchronises the block but the row reductions with WN > 1.
//
//   acc_gemm<L, K, TA, TB, LDA, LDB>(acc, a, b, clear)   acc (+)= op(A) op(B)
//   acc_gemm_rs<L, K, TB, LDB>(acc, a_regs, b, clear)    A from registers
//   acc_fill<L>(acc, v)
//   acc_convert<L>(src, dst)    register to register, another element type
//   acc_store<L>(acc, dst)      every existing element of a Rect (copy.h);
//     acc_store<L, true>: the Rect holds every element (no edge checks, and
//     neighbouring columns as one store)
//   acc_load<L>(acc, src)       from a Rect, 0 where src has no element
//   acc_load_shared<L, LD>(acc, src)   a 16-bit operand from a whole shared
//     tile of row length LD, through ldmatrix
//   acc_store_shared<L, LD, SW>(acc, dst)   the accumulator into such a
//     tile (swizzled in panels of SW bytes where SW > 0), through stmatrix
//   rows_store<R>(v, dst) / rows_load<R>(v, src)   a row vector (Rect row 0),
//     MmaRows, PartRows or Replicated; rows_store<R, true> /
//     rows_load<R, true>: a strided one (Rect column 0, row i at origin +
//     i * stride)
//   acc_reduce_rows<kind, L>(acc, dst, clear, scratch)   dst[M] over columns;
//     scratch: WN * M floats of shared memory when WN > 1 (the warps of a
//     row combine there), followed by the block barrier it needs.
//   acc_reduce_rows_to<kind, L>(acc, rows, clear, scratch)   into a row
//     vector; with WN > 1 the same scratch, and every holder gets the row.
#pragma once

#include "tilejit/cuda/copy.h"
#include "tilejit/cuda/mma.h"
#include "tilejit/cuda/reduce.h"
#include "tilejit/cuda/swizzle.h"
#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

template <int M, int N, int WM, int WN, int MR = M, int WR = 1, bool IL = false>
struct MmaAcc {
  static constexpr int kM = M, kN = N, kWM = WM, kWN = WN, kWR = WR;
  static constexpr bool kIL = IL;
  static constexpr int kMR = MR;  // the tile's rows; those past them only registers hold
  static constexpr int kWarpM = M / WM, kWarpN = N / WN;
  static constexpr int MT = kWarpM / 16, NT = kWarpN / 8;
  static constexpr int kCount = MT * NT * 4;
  static constexpr int kThreads = WM * WN * WR * 32;  // the block's (its consumers')
  static_assert(M % (16 * WM) == 0 && N % (8 * WN) == 0, "warp tiles of whole 16 x 8 tiles");

  __device__ __forceinline__ static int warp() { return thread_rank() / 32; }
  __device__ __forceinline__ static int lane() { return thread_rank() % 32; }
  // The warp's place in the WM x WN grid. Interleaved (IL, Note [Warpgroup
  // gemms]), the grid is of warpgroups, WM / 4 x WN, each held by WR
  // warpgroups alike, and a warpgroup's four warps are four rows of it.
  __device__ __forceinline__ static int wm_index() {
    return IL ? (warp() / 4 / (WN * WR)) * 4 + warp() % 4 : warp() / (WN * WR);
  }
  __device__ __forceinline__ static int wn_index() {
    return IL ? (warp() / 4 / WR) % WN : (warp() / WR) % WN;
  }
  // The first row of the warp's first 16-row block: its warp tile's, or,
  // interleaved, its 16 rows of each 16 * WM.
  __device__ __forceinline__ static int row0() { return wm_index() * (IL ? 16 : kWarpM); }
  /// The first row of the warp's 16-row block mt.
  __device__ __forceinline__ static int block_row(int mt) { return row0() + mt * (IL ? 16 * WM : 16); }
  __device__ __forceinline__ static int col0() { return wn_index() * kWarpN; }
  // The one of a warp tile's WR warps (warpgroups, IL) that stores it to memory.
  __device__ __forceinline__ static bool holder() {
    return WR == 1 || (IL ? warp() / 4 : warp()) % WR == 0;
  }
  __device__ __forceinline__ static int row(int r) { return row_base() + row_offset(r); }
  __device__ __forceinline__ static int col(int r) { return col_base() + col_offset(r); }
  // row(r) = row_base() + row_offset(r), col likewise: the thread's first
  // element, and register r's place from it, a constant of r (Note [Stores
  // from a thread's base]).
  __device__ __forceinline__ static int row_base() { return row0() + lane() / 4; }
  __device__ __forceinline__ static int col_base() { return col0() + (lane() % 4) * 2; }
  __host__ __device__ static constexpr int row_offset(int r) {
    return (r / (NT * 4)) * (IL ? 16 * WM : 16) + ((r % 4) / 2) * 8;
  }
  __host__ __device__ static constexpr int col_offset(int r) { return ((r / 4) % NT) * 8 + r % 2; }
  /// The MmaRows slot of register r's row.
  __host__ __device__ static constexpr int row_slot(int r) { return (r / (NT * 4)) * 2 + (r % 4) / 2; }
};

template <int M, int WM, int WR = 1, bool IL = false>
struct MmaRows {
  static constexpr int kM = M, kWM = WM, kWR = WR, kWarpM = M / WM, MT = kWarpM / 16;
  static constexpr bool kIL = IL;
  static constexpr int kCount = MT * 2;
  static_assert(M % (16 * WM) == 0, "warp tiles of whole 16-row blocks");
  __device__ __forceinline__ static int row(int s) {
    const int w = thread_rank() / 32;
    const int wm = IL ? (w / 4 / WR) * 4 + w % 4 : w / WR;
    return wm * (IL ? 16 : kWarpM) + (s / 2) * (IL ? 16 * WM : 16) + (thread_rank() % 32) / 4 +
           (s % 2) * 8;
  }
  // The one of a row's 4 * WR holders (a quad in each of WR warps, or
  // warpgroups where IL) that stores it to memory.
  __device__ __forceinline__ static bool leader() {
    const int w = thread_rank() / 32;
    return thread_rank() % 4 == 0 && (WR == 1 || (IL ? w / 4 : w) % WR == 0);
  }
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

// pack16's inverse: t[0] the low half of u, t[1] the high one (by value: a
// pointer cast would put the registers in local memory).
template <typename T>
__device__ __forceinline__ void unpack16(unsigned u, T* t) {
  if constexpr (is_same_v<T, tilejit::bfloat16>) {
    t[0] = __ushort_as_bfloat16((unsigned short)(u & 0xffffu));
    t[1] = __ushort_as_bfloat16((unsigned short)(u >> 16));
  } else {
    t[0] = __ushort_as_half((unsigned short)(u & 0xffffu));
    t[1] = __ushort_as_half((unsigned short)(u >> 16));
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
  static_assert(!L::kIL, "a warpgroup layout's gemms run on wgmma (wgmma.h)");
  warp_mma<L::MT, L::NT, TA, TB, LDA, LDB, K>(tiles, a, b, L::row0(), L::col0());
}

// A from registers (an MmaAcc<M, K, WM, 1, M, WN> of T, the C's rows and
// warps; each of a warp row's WN warps holds its whole A):
// the registers of tiles 2k and 2k + 1 of each 16-row block are the A
// fragment of its k-th 16 x 16 block (PTX ISA, "Matrix Fragments for
// mma.m16n8k16": a0 / a1 the first tile's rows g / g + 8, a2 / a3 the
// second's). Unrolled: the registers are named by constants.
template <typename L, int K, bool TB, int LDB, typename T>
__device__ __forceinline__ void acc_gemm_rs(float* acc, const T* a, const T* b, bool clear) {
  static_assert(K % 16 == 0, "A from registers takes whole k16 steps");
  static_assert(!L::kIL, "a warpgroup layout's gemms run on wgmma (wgmma.h)");
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
      load_b<TB, LDB>(bf, b, kk * 16, L::col0() + np * 16);
#pragma unroll
      for (int mt = 0; mt < L::MT; ++mt) {
        mma_detail::mma_16816<T>(tiles[mt][2 * np], af[mt], bf[0], bf[1]);
        mma_detail::mma_16816<T>(tiles[mt][2 * np + 1], af[mt], bf[2], bf[3]);
      }
    }
    if constexpr (L::NT % 2 == 1) {
      unsigned bf[4];
      load_b_one<TB, LDB>(bf, b, kk * 16, L::col0() + (L::NT - 1) * 8);
#pragma unroll
      for (int mt = 0; mt < L::MT; ++mt) {
        mma_detail::mma_16816<T>(tiles[mt][L::NT - 1], af[mt], bf[0], bf[1]);
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
// of each row's holders that R::leader() names stores it. The vector is row
// 0 of the Rect or, kColumn, its column 0 (a strided region: element i at
// origin + i * stride).
namespace mma_detail {

template <bool kColumn, typename T>
__device__ __forceinline__ bool rows_has(const Rect<T>& m, int i) {
  return kColumn ? 0 >= m.c_lo && 0 < m.c_hi && i >= m.r_lo && i < m.r_hi
                 : 0 >= m.r_lo && 0 < m.r_hi && i >= m.c_lo && i < m.c_hi;
}

}  // namespace mma_detail

template <typename R, bool kColumn = false, typename E, typename D>
__device__ __forceinline__ void rows_store(const E* v, const Rect<D>& dst) {
  if (!R::leader()) return;
#pragma unroll
  for (int s = 0; s < R::kCount; ++s) {
    const int i = R::row(s);
    if (mma_detail::rows_has<kColumn>(dst, i)) {
      dst.base[dst.origin + (kColumn ? int64_t(i) * dst.stride : int64_t(i))] = convert<D>(v[s]);
    }
  }
}

template <typename R, bool kColumn = false, typename E, typename S>
__device__ __forceinline__ void rows_load(E* v, const Rect<S>& src) {
#pragma unroll
  for (int s = 0; s < R::kCount; ++s) {
    const int i = R::row(s);
    v[s] = mma_detail::rows_has<kColumn>(src, i)
               ? convert<E>(src.base[src.origin + (kColumn ? int64_t(i) * src.stride : int64_t(i))])
               : convert<E>(0);
  }
}

// Note [Stores from a thread's base]
// A thread's registers sit at constant offsets from its first element
// (row_offset / col_offset), so a store or load of the whole fragment forms
// the thread's pointer once and addresses register r as pointer + a
// constant: with a constant row stride these are immediate offsets of the
// memory instructions, with a symbolic one a multiply per row. Forming each
// address from row(r) * stride instead costs a 64-bit multiply-add per
// register, the whole epilogue of a GEMM (row(r) is thread-dependent, so the
// compiler cannot fold the widening). The edges of a Rect are clamped to
// int once, so the checks of a partial tile are 32-bit.
namespace mma_detail {

__device__ __forceinline__ int clamp_edge(int64_t e) {
  return int(e < -(int64_t(1) << 30) ? -(int64_t(1) << 30)
                                     : e > (int64_t(1) << 30) ? (int64_t(1) << 30) : e);
}

// Registers r and r + 1 (neighbouring columns of one row) as one store.
template <typename D, typename E>
__device__ __forceinline__ void store_pair(D* p, E a, E b) {
  if constexpr (sizeof(D) == 2) {
    *reinterpret_cast<unsigned*>(p) = pack16(convert<D>(a), convert<D>(b));
  } else if constexpr (is_same_v<D, float>) {
    *reinterpret_cast<float2*>(p) = make_float2(convert<float>(a), convert<float>(b));
  } else {
    p[0] = convert<D>(a);
    p[1] = convert<D>(b);
  }
}

}  // namespace mma_detail

template <typename L, typename E, typename D>
__device__ __forceinline__ void acc_store_whole(const E* acc, D* o, int64_t stride, bool pairs) {
  if (pairs) {
#pragma unroll
    for (int r = 0; r < L::kCount; r += 2) {
      mma_detail::store_pair(o + L::row_offset(r) * stride + L::col_offset(r), acc[r], acc[r + 1]);
    }
  } else {
#pragma unroll
    for (int r = 0; r < L::kCount; ++r) o[L::row_offset(r) * stride + L::col_offset(r)] = convert<D>(acc[r]);
  }
}

template <typename L, bool INSIDE = false, typename E, typename D>
__device__ __forceinline__ void acc_store(const E* acc, const Rect<D>& dst) {
  if (!L::holder()) return;
  const int i0 = L::row_base(), j0 = L::col_base();
  D* const o = dst.base + dst.origin + int64_t(i0) * dst.stride + j0;
  // j0 is even: pairs stay aligned when the tile's origin is and rows keep
  // an even length.
  const bool pairs = (sizeof(D) == 2 || is_same_v<D, float>) &&
                     reinterpret_cast<uint64_t>(dst.base + dst.origin) % (2 * sizeof(D)) == 0 &&
                     dst.stride % 2 == 0;
  if constexpr (INSIDE && L::kMR == L::kM) {
    // Every element has its place (Note [Copies inside their tensor]).
    acc_store_whole<L>(acc, o, dst.stride, pairs);
    return;
  }
  const int r_lo = mma_detail::clamp_edge(dst.r_lo), r_hi = mma_detail::clamp_edge(dst.r_hi);
  const int c_lo = mma_detail::clamp_edge(dst.c_lo), c_hi = mma_detail::clamp_edge(dst.c_hi);
  // A thread whose elements all exist (every thread of a block inside the
  // tensor) stores without checks.
  if (i0 >= r_lo && i0 + L::row_offset(L::kCount - 1) < (r_hi < L::kMR ? r_hi : L::kMR) &&
      j0 >= c_lo && j0 + L::col_offset(L::kCount - 1) < c_hi) {
    acc_store_whole<L>(acc, o, dst.stride, pairs);
    return;
  }
#pragma unroll
  for (int r = 0; r < L::kCount; r += 2) {
    const int i = i0 + L::row_offset(r), j = j0 + L::col_offset(r);
    if (i >= L::kMR || i < r_lo || i >= r_hi) continue;
    D* const p = o + L::row_offset(r) * dst.stride + L::col_offset(r);
    const bool first = j >= c_lo && j < c_hi, second = j + 1 >= c_lo && j + 1 < c_hi;
    if (pairs && first && second) {
      mma_detail::store_pair(p, acc[r], acc[r + 1]);
    } else {
      if (first) p[0] = convert<D>(acc[r]);
      if (second) p[1] = convert<D>(acc[r + 1]);
    }
  }
}

template <typename L, typename E, typename S>
__device__ __forceinline__ void acc_load(E* acc, const Rect<S>& src) {
  const int i0 = L::row_base(), j0 = L::col_base();
  const S* const o = src.base + src.origin + int64_t(i0) * src.stride + j0;
  const int r_lo = mma_detail::clamp_edge(src.r_lo), r_hi = mma_detail::clamp_edge(src.r_hi);
  const int c_lo = mma_detail::clamp_edge(src.c_lo), c_hi = mma_detail::clamp_edge(src.c_hi);
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) {
    const int i = i0 + L::row_offset(r), j = j0 + L::col_offset(r);
    const bool has = i < L::kMR && i >= r_lo && i < r_hi && j >= c_lo && j < c_hi;
    acc[r] = convert<E>(has ? convert<float>(o[L::row_offset(r) * src.stride + L::col_offset(r)])
                            : 0.f);
  }
}

// A 16-bit operand (WN = 1) from the whole shared tile `src` of row length
// LD (a multiple of 8, 16-byte aligned rows): the ldmatrix of each 16 x 16
// block is the A fragment acc_gemm_rs unpacks, so it lands as it is.
template <typename L, int LD, typename T>
__device__ __forceinline__ void acc_load_shared(T* acc, const T* src) {
  static_assert(L::kWN == 1 && L::NT % 2 == 0 && L::kMR == L::kM, "whole 16 x 16 blocks");
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
    for (int kk = 0; kk < L::NT / 2; ++kk) {
      unsigned r[4];
      load_a<false, LD>(r, src, L::block_row(mt), kk * 16);
      T* t = acc + (mt * L::NT + 2 * kk) * 4;
#pragma unroll
      for (int q = 0; q < 4; ++q) mma_detail::unpack16(r[q], t + 2 * q);
    }
  }
}

namespace mma_detail {

// Lane l's 16-byte row of block (row, np) of a tile swizzled in panels of SW
// bytes (swizzle.h): swizzled_byte of (row, col0 + 16 np + 8 (l / 16)),
// written so that the compiler sees its parts. The block's first column is
// a multiple of 16, so the 16 columns lie in one panel, the lane's half
// adds 16 bytes to a multiple of 32, and the XOR's bits are those of
// l % 16 (a block's first row is a multiple of 16, a whole number of the
// swizzle's periods): per thread, one XOR for each place of a block in a
// panel, and a constant per block.
template <typename L, int SW, typename T>
__device__ __forceinline__ T* swizzled_block(T* dst, int row, int np) {
  static_assert(L::kWarpN % 16 == 0, "blocks of 16 columns");
  constexpr int kPanel = SW / int(sizeof(T));
  const int lane = L::lane();
  const int flip = ((((lane % 16) * SW) >> 7) & (SW / 16 - 1)) << 4;
  const int c = L::col0() + np * 16;
  const int in_row = ((c % kPanel) * int(sizeof(T))) ^ ((lane / 16) * 16) ^ flip;
  return reinterpret_cast<T*>(reinterpret_cast<char*>(dst) + (c / kPanel) * (L::kM * SW) +
                              row * SW + in_row);
}

}  // namespace mma_detail

// acc_load_shared's inverse, for any WN: the accumulator into the whole
// 16-bit shared tile `dst` of row length LD, one stmatrix per 16 x 16 block
// (its four 8 x 8 matrices are the registers of two neighbouring 16 x 8
// tiles, as ldmatrix gives them), in place of four 32-bit stores. SW > 0:
// the tile is swizzled in panels of SW bytes (swizzle.h, Note [Swizzled
// store tiles]), so each lane's 16-byte row of a matrix goes to its own
// swizzled place; rows LD elements apart otherwise.
template <typename L, int LD, int SW = 0, typename E, typename T>
__device__ __forceinline__ void acc_store_shared(const E* acc, T* dst) {
  static_assert(L::NT % 2 == 0 && L::kMR == L::kM && sizeof(T) == 2 && LD % 8 == 0,
                "whole 16 x 16 blocks of a 16-bit tile with 16-byte rows");
  if (!L::holder()) return;
  const int lane = L::lane();
  // Lane l gives row l % 16 of the block, at column 8 * (l / 16) of it.
  const int col = L::col0() + (lane / 16) * 8;
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt) {
    const int row = L::block_row(mt) + lane % 16;
#pragma unroll
    for (int np = 0; np < L::NT / 2; ++np) {
      const E* t = acc + (mt * L::NT + 2 * np) * 4;
      const unsigned r[4] = {mma_detail::pack16(convert<T>(t[0]), convert<T>(t[1])),
                             mma_detail::pack16(convert<T>(t[2]), convert<T>(t[3])),
                             mma_detail::pack16(convert<T>(t[4]), convert<T>(t[5])),
                             mma_detail::pack16(convert<T>(t[6]), convert<T>(t[7]))};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      if constexpr (SW > 0) {
        mma_detail::stmatrix_x4(mma_detail::swizzled_block<L, SW>(dst, row, np), r);
      } else {
        mma_detail::stmatrix_x4(dst + row * LD + col + np * 16, r);
      }
#else
      // Before sm_90, no stmatrix: register q goes to row lane / 4 (+ 8 for
      // q odd) of its matrix, columns (lane % 4) * 2 (+ 8 for q >= 2).
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int qr = L::block_row(mt) + lane / 4 + (q % 2) * 8;
        const int qc = L::col0() + np * 16 + (q / 2) * 8 + (lane % 4) * 2;
        if constexpr (SW > 0) {
          char* const bytes = reinterpret_cast<char*>(dst);
          *reinterpret_cast<unsigned*>(bytes + swizzled_byte<SW, L::kM, T>(qr, qc)) = r[q];
        } else {
          *reinterpret_cast<unsigned*>(dst + qr * LD + qc) = r[q];
        }
      }
#endif
    }
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
  static_assert(L::kWR == 1, "an accumulator's warps each hold their own columns");
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float v = mma_detail::row_value<kKind, L>(acc, mt, h);
      const int row = L::block_row(mt) + L::lane() / 4 + h * 8;
      if (L::lane() % 4 == 0 && row < L::kMR) {
        if constexpr (L::kWN == 1) {
          const float prev =
              clear ? reduce_detail::identity<kKind, float>() : convert<float>(dst[row]);
          dst[row] = convert<D>(combine<kKind>(prev, v));
        } else {
          scratch[L::wn_index() * L::kM + row] = v;
        }
      }
    }
  }
  if constexpr (L::kWN > 1) {
    // The warps of a row of warps meet here.
    block_sync<L::kThreads>();
    for (int row = thread_rank(); row < L::kMR; row += L::kThreads) {
      float v = clear ? reduce_detail::identity<kKind, float>() : convert<float>(dst[row]);
      for (int w = 0; w < L::kWN; ++w) v = combine<kKind>(v, scratch[w * L::kM + row]);
      dst[row] = convert<D>(v);
    }
  }
}

// With WN > 1 the quads' values meet in scratch (WN * M floats), between
// the barrier inside and the one the lowering puts before the scratch is
// written again; every warp of the row then reads all WN of them.
template <ReduceKind kKind, typename L>
__device__ __forceinline__ void acc_reduce_rows_to(const float* acc, float* rows, bool clear,
                                                   float* scratch = nullptr) {
  using reduce_detail::combine;
  static_assert(L::kWR == 1, "an accumulator's warps each hold their own columns");
  float v[L::MT * 2];
#pragma unroll
  for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) v[mt * 2 + h] = mma_detail::row_value<kKind, L>(acc, mt, h);
  }
  if constexpr (L::kWN > 1) {
    const int wn = L::wn_index();
    if (L::lane() % 4 == 0) {
#pragma unroll
      for (int s = 0; s < L::MT * 2; ++s) {
        scratch[wn * L::kM + L::block_row(s / 2) + L::lane() / 4 + (s % 2) * 8] = v[s];
      }
    }
    block_sync<L::kThreads>();
#pragma unroll
    for (int s = 0; s < L::MT * 2; ++s) {
      const int row = L::block_row(s / 2) + L::lane() / 4 + (s % 2) * 8;
      if constexpr (L::kWN == 2) {
        // Two warps: this one's value is in hand, and x + y == y + x, so
        // both get the same bits from one load (MLA decoding's rows).
        v[s] = combine<kKind>(v[s], scratch[(1 - wn) * L::kM + row]);
      } else {
        float x = scratch[row];
#pragma unroll
        for (int w = 1; w < L::kWN; ++w) x = combine<kKind>(x, scratch[w * L::kM + row]);
        v[s] = x;
      }
    }
  }
#pragma unroll
  for (int s = 0; s < L::MT * 2; ++s) rows[s] = clear ? v[s] : combine<kKind>(rows[s], v[s]);
}

}  // namespace tilejit::cuda
