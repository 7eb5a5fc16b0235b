// T.copy and T.fill on the GPU: rectangles of elements, 2-D, with bounds, as
// the CPU library has them (tilejit/cpu/copy.h: the same Rect, the same
// meaning), shared among the block's threads.
//
// A Rect names a ROWS x COLS rectangle inside an array: element (r, c) is
// base[origin + r * stride + c], and only the elements with r in [r_lo, r_hi)
// and c in [c_lo, c_hi) exist.
//
//   copy<ROWS, COLS, THREADS, ASYNC, INSIDE>(dst, src): every existing element of
//     dst gets src's element at the same (r, c), converted, or 0 where src
//     has none, by the block's THREADS threads. Elements that do not exist
//     are neither read nor written. Where both sides hold one type, rows
//     move as vectors of 16 bytes, or of 8 or 4 where the tile's row or
//     either side's address or row stride (checked at run time) is aligned
//     to no more; consecutive threads take consecutive vectors of a row, so
//     a row of a tensor is read and written in whole transactions. A tile
//     at a tensor's edge takes the same path, each thread checking its
//     rows and its column of vectors (Note [Vector copies]). ASYNC (dst in
//     shared memory, src in global memory, as the lowering knows) moves
//     them through cp.async, zero-filling what src lacks, which the next
//     barrier() waits for, or the pipeline's async_wait_group (tile.h).
//     Other copies (types that differ, rows of no aligned 4-byte vector, or
//     rows whose alignment is less than the tile's shape allows, but for
//     16 narrowed to 8 bytes) go element by element. INSIDE (the lowering
//     proved every element exists on both sides) compiles no edge check.
//   fill<ROWS, COLS>(dst, value): every existing element of dst = value.
#pragma once

#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

template <typename T>
struct Rect {
  T* base;
  int64_t origin;  // the offset of element (0, 0), which need not exist
  int64_t stride;  // elements between rows
  int64_t r_lo, r_hi, c_lo, c_hi;
};

template <int ROWS, int COLS, typename T>
__device__ __forceinline__ Rect<T> tile_rect(T* base, int64_t origin, int64_t stride) {
  return {base, origin, stride, 0, ROWS, 0, COLS};
}

template <typename T>
__device__ __forceinline__ Rect<T> rect_in(T* base, int64_t stride, int64_t rows, int64_t cols,
                                           int64_t row0, int64_t col0) {
  return {base, row0 * stride + col0, stride, -row0, rows - row0, -col0, cols - col0};
}

template <typename T>
__device__ __forceinline__ Rect<T> empty_rect(Rect<T> r) {
  r.r_hi = r.r_lo;
  return r;
}

namespace copy_detail {

__device__ __forceinline__ bool has(int64_t r, int64_t c, int64_t r_lo, int64_t r_hi, int64_t c_lo,
                                    int64_t c_hi) {
  return r >= r_lo && r < r_hi && c >= c_lo && c < c_hi;
}

// `v` clamped to [0, n]: a bound of a Rect as an index into the tile.
__device__ __forceinline__ int clamp_to(int64_t v, int n) {
  return v < 0 ? 0 : v > n ? n : int(v);
}

// BYTES from global `src` to shared `dst` without the registers; of them
// the first `src_bytes` are read and the rest are zeros (cp.async's
// zero-fill form). .cg (L2 only) takes 16 bytes alone, .ca 4 and 8.
template <int BYTES>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int src_bytes) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(src_bytes)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(BYTES),
                 "r"(src_bytes)
                 : "memory");
  }
}

// BYTES from global `src` to shared `dst`, all of them read.
template <int BYTES>
__device__ __forceinline__ void cp_async_whole(void* dst, const void* src) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  if constexpr (BYTES == 16) {
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(d), "l"(src)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(d), "l"(src), "n"(BYTES)
                 : "memory");
  }
}

// Whether copy_vectors<BYTES> serves a ROWS x COLS copy by THREADS threads
// of T: whole elements per vector, whole vectors per row, and threads that
// split into whole columns of vectors (THREADS a multiple of the vectors per
// row) or that each take whole columns (the vectors per row a multiple of
// THREADS). Alignment is checked at run time (copy).
template <int BYTES, int COLS, int THREADS, typename T>
inline constexpr bool vectors_fit =
    BYTES % int(sizeof(T)) == 0 && COLS % (BYTES / int(sizeof(T))) == 0 &&
    (THREADS % (COLS / (BYTES / int(sizeof(T)))) == 0 ||
     (COLS / (BYTES / int(sizeof(T)))) % THREADS == 0);

// Calls f(r, out, in) for the rows r0, r0 + STEP, ... below ROWS, `out`
// and `in` at each row's first element; unrolled by 4 where UNROLL: the
// tiles inside their tensor, and the cp.async loads of those at an edge (a
// GEMM's main loop at the edge blocks, which set the kernel's time); not
// the edge's synchronous copies and element loops (whose checks would
// multiply the kernel's code and NVRTC's time).
template <int ROWS, int STEP, bool UNROLL, typename D, typename SV, typename F>
__device__ __forceinline__ void walk_rows(int r0, D* out, const SV* in, int64_t out_step,
                                          int64_t in_step, const F& f) {
  if constexpr (UNROLL && ROWS % STEP == 0) {
#pragma unroll 4
    for (int k = 0; k < ROWS / STEP; ++k, out += out_step, in += in_step) f(r0 + k * STEP, out, in);
  } else {
#pragma unroll 1
    for (int r = r0; r < ROWS; r += STEP, out += out_step, in += in_step) f(r, out, in);
  }
}

// Note [Vector copies]: a tile's rows as vectors of BYTES, whose rows start
// BYTES-aligned on both sides (checked by copy). Each thread keeps a column
// of vectors (or THREADS-spaced columns, for rows of more vectors than
// threads) and walks down the rows, so consecutive threads read and write
// consecutive vectors of a row. A tile inside its tensor (every element on
// both sides) takes copy_inside, which checks nothing, so that a GEMM's
// main loop carries no per-row predicate; a tile at a tensor's edge takes
// copy_vectors, the same walk with checks, inline too: the thread finds
// once, in 32-bit tile indices, which of its column's elements exist in dst
// and which in src, then per row tests the row alone. Where dst has the whole vector and src a prefix of it (all,
// some at the right edge, or none, as outside the rows), one vector moves:
// cp.async reads the prefix and fills the rest with zeros; synchronous,
// 16 bytes or zeros, or the prefix element by element. Otherwise (dst in
// part: a store at a tensor's edge; src past a left edge) element by
// element, with both checks.
template <int BYTES, int ROWS, int COLS, int THREADS, bool ASYNC, typename D, typename S>
__device__ __forceinline__ void copy_inside(const Rect<D>& dst, const Rect<S>& src, int rank) {
  using SV = typename RemoveConst<S>::type;
  using V = Bytes<BYTES>;
  constexpr int kVec = BYTES / int(sizeof(D));
  constexpr int kChunks = COLS / kVec;
  constexpr bool kShared = THREADS >= kChunks;
  constexpr int kRowsStep = kShared ? THREADS / kChunks : 1;
  constexpr int kColumns = kShared ? 1 : kChunks / THREADS;
  const int r0 = kShared ? rank / kChunks : 0;
  const int64_t out_step = kRowsStep * dst.stride, in_step = kRowsStep * src.stride;
#pragma unroll
  for (int j = 0; j < kColumns; ++j) {
    const int c = (kShared ? rank % kChunks : rank + j * THREADS) * kVec;
    D* const out = dst.base + (dst.origin + r0 * dst.stride + c);
    const SV* const in = src.base + (src.origin + r0 * src.stride + c);
    walk_rows<ROWS, kRowsStep, true>(r0, out, in, out_step, in_step, [&](int, D* o, const SV* i) {
      if constexpr (ASYNC) {
        cp_async_whole<BYTES>(o, i);
      } else {
        *reinterpret_cast<V*>(o) = *reinterpret_cast<const V*>(i);
      }
    });
  }
}

// A tile at a tensor's edge (Note [Vector copies]).
template <int BYTES, int ROWS, int COLS, int THREADS, bool ASYNC, typename D, typename S>
__device__ __forceinline__ void copy_vectors(const Rect<D>& dst, const Rect<S>& src, int rank) {
  using SV = typename RemoveConst<S>::type;
  using V = Bytes<BYTES>;
  constexpr int kVec = BYTES / int(sizeof(D));  // elements per vector
  constexpr int kChunks = COLS / kVec;           // vectors per row
  constexpr bool kShared = THREADS >= kChunks;   // a column by THREADS / kChunks threads
  constexpr int kRowsStep = kShared ? THREADS / kChunks : 1;
  constexpr int kColumns = kShared ? 1 : kChunks / THREADS;  // columns per thread
  const int d_r0 = clamp_to(dst.r_lo, ROWS), d_r1 = clamp_to(dst.r_hi, ROWS);
  const int s_r0 = clamp_to(src.r_lo, ROWS), s_r1 = clamp_to(src.r_hi, ROWS);
  const int r0 = kShared ? rank / kChunks : 0;
  const int64_t out_step = kRowsStep * dst.stride, in_step = kRowsStep * src.stride;
  // What cp.async reads where it reads nothing: the tensor's first aligned
  // address, inside its allocation (allocations start at least 256-aligned).
  const SV* nowhere =
      reinterpret_cast<const SV*>(reinterpret_cast<uint64_t>(src.base) & ~uint64_t(BYTES - 1));
#pragma unroll 1
  for (int j = 0; j < kColumns; ++j) {
    const int c = (kShared ? rank % kChunks : rank + j * THREADS) * kVec;
    // The column's elements [lo, hi) that exist on each side.
    const int d_lo = clamp_to(dst.c_lo - c, kVec), d_hi = clamp_to(dst.c_hi - c, kVec);
    const int s_lo = clamp_to(src.c_lo - c, kVec), s_hi = clamp_to(src.c_hi - c, kVec);
    if (d_lo >= d_hi) continue;
    // Whether one vector serves: the whole in dst, a prefix (or none) in src.
    const bool whole = d_lo == 0 && d_hi == kVec && (s_lo == 0 || s_lo >= s_hi);
    const int s_bytes = s_lo < s_hi ? s_hi * int(sizeof(D)) : 0;
    D* const out = dst.base + (dst.origin + r0 * dst.stride + c);
    const SV* const in = src.base + (src.origin + r0 * src.stride + c);
    if (whole) {
      walk_rows<ROWS, kRowsStep, ASYNC>(r0, out, in, out_step, in_step, [&](int r, D* o, const SV* i) {
        if (r < d_r0 || r >= d_r1) return;
        const int n = r >= s_r0 && r < s_r1 ? s_bytes : 0;
        if constexpr (ASYNC) {
          cp_async<BYTES>(o, n > 0 ? i : nowhere, n);
        } else if (n == BYTES) {
          *reinterpret_cast<V*>(o) = *reinterpret_cast<const V*>(i);
        } else if (n == 0) {
          *reinterpret_cast<V*>(o) = V{};
        } else {
          for (int k = 0; k < kVec; ++k) o[k] = k < s_hi ? i[k] : convert<D>(0.f);
        }
      });
    } else {
      walk_rows<ROWS, kRowsStep, false>(r0, out, in, out_step, in_step, [&](int r, D* o, const SV* i) {
        if (r < d_r0 || r >= d_r1) return;
        const bool s_row = r >= s_r0 && r < s_r1;
#pragma unroll 1
        for (int k = d_lo; k < d_hi; ++k) {
          o[k] = s_row && k >= s_lo && k < s_hi ? i[k] : convert<D>(0.f);
        }
      });
    }
  }
}

// copy_vectors in a body of its own (one per kind of copy, however many
// copies a kernel makes), for the vectors that rows' alignment narrows.
template <int BYTES, int ROWS, int COLS, int THREADS, bool ASYNC, typename D, typename S>
__device__ __noinline__ void copy_vectors_out_of_line(const Rect<D> dst, const Rect<S> src,
                                                      int rank) {
  copy_vectors<BYTES, ROWS, COLS, THREADS, ASYNC>(dst, src, rank);
}

// Element by element: types that differ, rows of no whole vector of 4
// bytes or more (or not aligned to one), threads that split no row evenly.
template <int ROWS, int COLS, int THREADS, typename D, typename S>
__device__ __noinline__ void copy_elements(const Rect<D> dst, const Rect<S> src, int rank) {
#pragma unroll 1
  for (int e = rank; e < ROWS * COLS; e += THREADS) {
    const int r = e / COLS, c = e % COLS;
    if (!has(r, c, dst.r_lo, dst.r_hi, dst.c_lo, dst.c_hi)) continue;
    D v = convert<D>(0.f);
    if (has(r, c, src.r_lo, src.r_hi, src.c_lo, src.c_hi)) {
      v = convert<D>(src.base[src.origin + r * src.stride + c]);
    }
    dst.base[dst.origin + r * dst.stride + c] = v;
  }
}

}  // namespace copy_detail

// `rank`: the thread's index among the THREADS that make the copy (a
// thread range's, or 0 of 1 for a thread's own copy).
// INSIDE: the lowering proved that every element exists on both sides
// (src/backend/cuda/inside_copies.h), so the edge walk is not compiled.
template <int ROWS, int COLS, int THREADS, bool ASYNC, bool INSIDE = false, typename D,
          typename S>
__device__ __forceinline__ void copy(const Rect<D>& dst, const Rect<S>& src,
                                     int rank = thread_rank()) {
  using SV = typename RemoveConst<S>::type;
  using copy_detail::copy_vectors;
  using copy_detail::copy_vectors_out_of_line;
  using copy_detail::vectors_fit;
  if constexpr (is_same_v<D, SV>) {
    // The widest vector that both sides' rows are aligned to (Note [Vector
    // copies]), from the low bits of both first addresses and row strides.
    const uint64_t bits = reinterpret_cast<uint64_t>(dst.base + dst.origin) |
                          reinterpret_cast<uint64_t>(src.base + src.origin) |
                          uint64_t(dst.stride * int64_t(sizeof(D))) |
                          uint64_t(src.stride * int64_t(sizeof(D)));
    constexpr int kWidest = vectors_fit<16, COLS, THREADS, D>  ? 16
                            : vectors_fit<8, COLS, THREADS, D> ? 8
                            : vectors_fit<4, COLS, THREADS, D> ? 4
                                                               : 0;
    if constexpr (kWidest > 0) {
      if (bits % kWidest == 0) {
        if constexpr (INSIDE) {
          return copy_detail::copy_inside<kWidest, ROWS, COLS, THREADS, ASYNC>(dst, src, rank);
        } else {
          const bool inside = dst.r_lo <= 0 && dst.r_hi >= ROWS && dst.c_lo <= 0 &&
                              dst.c_hi >= COLS && src.r_lo <= 0 && src.r_hi >= ROWS &&
                              src.c_lo <= 0 && src.c_hi >= COLS;
          if (inside) {
            return copy_detail::copy_inside<kWidest, ROWS, COLS, THREADS, ASYNC>(dst, src, rank);
          }
          return copy_vectors<kWidest, ROWS, COLS, THREADS, ASYNC>(dst, src, rank);
        }
      }
    }
    // Rows that break the 16-byte alignment the tile's shape allows (a
    // tensor's row of 1004 halves is 8-byte aligned): 8-byte vectors, out
    // of line, so that the common case alone adds to the kernel's code,
    // registers and compile time. Rows aligned to less go element by
    // element.
    if constexpr (kWidest == 16 && vectors_fit<8, COLS, THREADS, D>) {
      if (bits % 8 == 0) {
        return copy_vectors_out_of_line<8, ROWS, COLS, THREADS, ASYNC>(dst, src, rank);
      }
    }
  }
  copy_detail::copy_elements<ROWS, COLS, THREADS>(dst, src, rank);
}

// THREADS make the fill (the kernel's threads, never blockDim, which counts a
// producer warpgroup: Note [Warp specialisation]); `rank` is the thread's.
template <int ROWS, int COLS, int THREADS, typename D, typename V>
__device__ __forceinline__ void fill(const Rect<D>& dst, V value, int rank = thread_rank()) {
  static_assert(THREADS > 0, "the threads that make the fill");
  const D v = convert<D>(value);
  for (int e = rank; e < ROWS * COLS; e += THREADS) {
    const int r = e / COLS, c = e % COLS;
    if (!copy_detail::has(r, c, dst.r_lo, dst.r_hi, dst.c_lo, dst.c_hi)) continue;
    dst.base[dst.origin + r * dst.stride + c] = v;
  }
}

}  // namespace tilejit::cuda
