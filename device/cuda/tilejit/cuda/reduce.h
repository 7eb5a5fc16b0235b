// T.reduce_* on the GPU for operands in memory, with the CPU library's
// template arguments (tilejit/cpu/reduce.h): a ROWS x COLS source (row
// length LDS) reduced over dimension kDim into ROWS (kDim 1) or COLS
// (kDim 0) consecutive elements of dst, combined with dst's previous values
// unless `clear`. The block's threads share the outputs; each reduces its
// outputs' elements in order, in float for 16-bit floats. max, min and
// absmax return NaN where an element or (without clear) dst is NaN, as on
// the CPU; combine() is also the register accumulators' (mma_acc.h) and
// their warp shuffles'.
#pragma once

#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

enum class ReduceKind { kSum, kMax, kMin, kAbsSum, kAbsMax };

namespace reduce_detail {

template <ReduceKind kKind, typename A>
__device__ __forceinline__ A identity() {
  if constexpr (kKind == ReduceKind::kMax) {
    if constexpr (is_same_v<A, float> || is_same_v<A, double>) return A(-INFINITY);
    else return A(1) << (sizeof(A) * 8 - 1);  // the most negative
  } else if constexpr (kKind == ReduceKind::kMin) {
    if constexpr (is_same_v<A, float> || is_same_v<A, double>) return A(INFINITY);
    else return ~(A(1) << (sizeof(A) * 8 - 1));
  } else {
    return A(0);
  }
}

template <ReduceKind kKind, typename A>
__device__ __forceinline__ A element(A x) {
  if constexpr (kKind == ReduceKind::kAbsSum || kKind == ReduceKind::kAbsMax) {
    return x < A(0) ? -x : x;
  } else {
    return x;
  }
}

template <ReduceKind kKind, typename A>
__device__ __forceinline__ A combine(A a, A b) {
  if constexpr (kKind == ReduceKind::kSum || kKind == ReduceKind::kAbsSum) {
    return a + b;
  } else if constexpr (kKind == ReduceKind::kMax || kKind == ReduceKind::kAbsMax) {
    return maximum(a, b);  // NaN wins; fmaxf would drop it
  } else {
    return minimum(a, b);
  }
}

}  // namespace reduce_detail

// THREADS make the reduction (the kernel's threads, never blockDim: Note
// [Warp specialisation]); `rank` is the thread's.
template <ReduceKind kKind, int ROWS, int COLS, int kDim, int LDS, int THREADS, typename S,
          typename D>
__device__ __forceinline__ void reduce(const S* src, D* dst, bool clear, int rank = thread_rank()) {
  static_assert(THREADS > 0, "the threads that make the reduction");
  using A = acc_t<D>;
  constexpr int kOut = kDim == 1 ? ROWS : COLS, kLen = kDim == 1 ? COLS : ROWS;
  for (int o = rank; o < kOut; o += THREADS) {
    A acc = reduce_detail::identity<kKind, A>();
    for (int k = 0; k < kLen; ++k) {
      const S& x = kDim == 1 ? src[o * LDS + k] : src[k * LDS + o];
      acc = reduce_detail::combine<kKind>(acc, reduce_detail::element<kKind>(convert<A>(x)));
    }
    if (!clear) acc = reduce_detail::combine<kKind>(convert<A>(dst[o]), acc);
    dst[o] = convert<D>(acc);
  }
}

}  // namespace tilejit::cuda
