// T.atomic_add on the GPU: the hardware's atomicAdd (relaxed, as on the
// CPU: tilejit/cpu/atomic.h), for float, double, bfloat16, float16 and the
// 32- and 64-bit integers.
//
//   atomic_add(T* p, V value)        *p += value, by the calling thread
//   atomic_add<ROWS, COLS>(dst, src) each existing element of a Rect (copy.h)
//                                    += the tile src's element (row length
//                                    LDS), the block's threads sharing them
#pragma once

#include "tilejit/cuda/copy.h"
#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

template <typename T, typename V>
__device__ __forceinline__ void atomic_add(T* p, V value) {
  if constexpr (is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(
                                                            static_cast<int64_t>(value)));
  } else if constexpr (is_same_v<T, float> || is_same_v<T, double> || is_same_v<T, int32_t> ||
                       is_same_v<T, uint32_t>) {
    atomicAdd(p, static_cast<T>(value));
  } else {
    atomicAdd(p, convert<T>(convert<float>(value)));
  }
}

template <int ROWS, int COLS, int LDS = COLS, typename D, typename S>
__device__ __forceinline__ void atomic_add(const Rect<D>& dst, const S* src) {
  for (int e = thread_rank(); e < ROWS * COLS; e += block_threads()) {
    const int r = e / COLS, c = e % COLS;
    if (r < dst.r_lo || r >= dst.r_hi || c < dst.c_lo || c >= dst.c_hi) continue;
    atomic_add(dst.base + (dst.origin + r * dst.stride + c), src[r * LDS + c]);
  }
}

}  // namespace tilejit::cuda
