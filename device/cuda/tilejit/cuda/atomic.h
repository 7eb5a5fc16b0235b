// T.atomic_add on the GPU: the hardware's atomicAdd (relaxed, as on the
// CPU: tilejit/cpu/atomic.h), for float, double, bfloat16, float16 and the
// 32- and 64-bit integers.
//
//   atomic_add(T* p, V value)        *p += value, by the calling thread
//   atomic_max / atomic_min(T* p, V) *p = max / min(*p, value), NaN kept
//                                    (float32: a compare-and-swap loop)
//   (a tile T.atomic_add is lowered to these, element by element, by its
//   threads: lower_tile_ops.cpp)
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

// The compare-and-swap update of a float: *p = f(*p), until no other
// thread changed *p in between.
template <typename F>
__device__ __forceinline__ void atomic_update(float* p, F f) {
  unsigned int* word = reinterpret_cast<unsigned int*>(p);
  unsigned int old = *word, seen;
  do {
    seen = old;
    old = atomicCAS(word, seen, __float_as_uint(f(__uint_as_float(seen))));
  } while (old != seen);
}

template <typename V>
__device__ __forceinline__ void atomic_max(float* p, V value) {
  const float v = convert<float>(value);
  atomic_update(p, [v](float x) { return (x != x || x >= v) ? x : v; });
}

template <typename V>
__device__ __forceinline__ void atomic_min(float* p, V value) {
  const float v = convert<float>(value);
  atomic_update(p, [v](float x) { return (x != x || x <= v) ? x : v; });
}

}  // namespace tilejit::cuda
