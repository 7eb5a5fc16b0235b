// T.copy and T.fill on the GPU: rectangles of elements, 2-D, with bounds, as
// the CPU library has them (tilejit/cpu/copy.h: the same Rect, the same
// meaning), shared among the block's threads.
//
// A Rect names a ROWS x COLS rectangle inside an array: element (r, c) is
// base[origin + r * stride + c], and only the elements with r in [r_lo, r_hi)
// and c in [c_lo, c_hi) exist.
//
//   copy<ROWS, COLS, THREADS, ASYNC>(dst, src): every existing element of
//     dst gets src's element at the same (r, c), converted, or 0 where src
//     has none, by the block's THREADS threads. Elements that do not exist
//     are neither read nor written. Consecutive threads take consecutive
//     columns, so a row of a tensor is read and written in whole
//     transactions; where both sides hold 16-bit or 32-bit elements of the
//     same type and a whole row of 16 bytes lies inside both, each thread
//     moves 16 bytes at once. ASYNC (dst in shared memory, src in global
//     memory, as the lowering knows) moves them through cp.async, which the
//     next barrier() waits for, or the pipeline's async_wait_group (tile.h).
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

// 16 bytes from global `src` to shared `dst` without the registers.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
struct alignas(16) Chunk {
  unsigned v[4];
};

// The checked paths of copy, out of line: one body per kind of copy however
// many copies a kernel makes (the first call's NVRTC time), for the tiles at
// a tensor's edge that are not the common case.
template <typename D, typename SV, bool ASYNC>
__device__ __forceinline__ void move16(D* out, const SV* in) {
  if constexpr (ASYNC) {
    cp_async_16(out, in);
  } else {
    *reinterpret_cast<Chunk*>(out) = *reinterpret_cast<const Chunk*>(in);
  }
}

template <int ROWS, int COLS, int THREADS, bool ASYNC, typename D, typename S>
__device__ __noinline__ void copy_chunks(const Rect<D> dst, const Rect<S> src, int rank) {
  using SV = typename RemoveConst<S>::type;
  constexpr int kVec = 16 / int(sizeof(D));
  constexpr int kChunks = COLS / kVec;
#pragma unroll 1
  for (int e = rank; e < ROWS * kChunks; e += THREADS) {
    const int r = e / kChunks, c = (e % kChunks) * kVec;
    const bool d_all = has(r, c, dst.r_lo, dst.r_hi, dst.c_lo, dst.c_hi) &&
                       has(r, c + kVec - 1, dst.r_lo, dst.r_hi, dst.c_lo, dst.c_hi);
    const bool s_all = has(r, c, src.r_lo, src.r_hi, src.c_lo, src.c_hi) &&
                       has(r, c + kVec - 1, src.r_lo, src.r_hi, src.c_lo, src.c_hi);
    D* out = dst.base + (dst.origin + r * dst.stride + c);
    const SV* in = src.base + (src.origin + r * src.stride + c);
    if (d_all && s_all) {
      move16<D, SV, ASYNC>(out, in);
      continue;
    }
    for (int k = 0; k < kVec; ++k) {
      if (!has(r, c + k, dst.r_lo, dst.r_hi, dst.c_lo, dst.c_hi)) continue;
      out[k] = has(r, c + k, src.r_lo, src.r_hi, src.c_lo, src.c_hi) ? in[k] : convert<D>(0.f);
    }
  }
}

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
template <int ROWS, int COLS, int THREADS, bool ASYNC, typename D, typename S>
__device__ __forceinline__ void copy(const Rect<D>& dst, const Rect<S>& src,
                                     int rank = thread_rank()) {
  using SV = typename RemoveConst<S>::type;
  using copy_detail::move16;
  constexpr int kVec = 16 / int(sizeof(D));
  if constexpr (is_same_v<D, SV> && (sizeof(D) == 2 || sizeof(D) == 4) && COLS % kVec == 0) {
    // 16-byte chunks where both rows are aligned and wholly inside.
    const bool aligned =
        (reinterpret_cast<uint64_t>(dst.base + dst.origin) % 16 == 0) && (dst.stride % kVec == 0) &&
        (reinterpret_cast<uint64_t>(src.base + src.origin) % 16 == 0) && (src.stride % kVec == 0);
    if (aligned) {
      constexpr int kChunks = COLS / kVec;
      if constexpr (THREADS % kChunks == 0) {
        const bool inside = dst.r_lo <= 0 && dst.r_hi >= ROWS && dst.c_lo <= 0 &&
                            dst.c_hi >= COLS && src.r_lo <= 0 && src.r_hi >= ROWS &&
                            src.c_lo <= 0 && src.c_hi >= COLS;
        if (inside) {
          // Every element exists on both sides (a tile inside its tensor):
          // no check per chunk; each thread keeps one column of chunks and
          // walks down the rows.
          constexpr int kRowsStep = THREADS / kChunks;
          const int r0 = rank / kChunks, c = (rank % kChunks) * kVec;
          D* out = dst.base + dst.origin + r0 * dst.stride + c;
          const SV* in = src.base + src.origin + r0 * src.stride + c;
          const int64_t out_step = kRowsStep * dst.stride, in_step = kRowsStep * src.stride;
          if constexpr (ROWS % kRowsStep == 0) {
#pragma unroll 4
            for (int k = 0; k < ROWS / kRowsStep; ++k, out += out_step, in += in_step) {
              move16<D, SV, ASYNC>(out, in);
            }
          } else {
#pragma unroll 1
            for (int r = r0; r < ROWS; r += kRowsStep, out += out_step, in += in_step) {
              move16<D, SV, ASYNC>(out, in);
            }
          }
          return;
        }
      }
      // A tile at a tensor's edge, or rows of other lengths.
      copy_detail::copy_chunks<ROWS, COLS, THREADS, ASYNC>(dst, src, rank);
      return;
    }
  }
  copy_detail::copy_elements<ROWS, COLS, THREADS>(dst, src, rank);
}

// THREADS (0: the block's) make the fill; `rank` is the thread's among them.
template <int ROWS, int COLS, int THREADS = 0, typename D, typename V>
__device__ __forceinline__ void fill(const Rect<D>& dst, V value, int rank = thread_rank()) {
  const D v = convert<D>(value);
  const int step = THREADS > 0 ? THREADS : block_threads();
  for (int e = rank; e < ROWS * COLS; e += step) {
    const int r = e / COLS, c = e % COLS;
    if (!copy_detail::has(r, c, dst.r_lo, dst.r_hi, dst.c_lo, dst.c_hi)) continue;
    dst.base[dst.origin + r * dst.stride + c] = v;
  }
}

}  // namespace tilejit::cuda
