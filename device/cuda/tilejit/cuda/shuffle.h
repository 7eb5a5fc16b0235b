// T.shfl_sync / shfl_up / shfl_down / shfl_xor on the GPU (Note [Warp
// shuffles] in tilejit/transform/hoist_shuffles.h): CUDA's __shfl_*_sync on
// a value in its compute type (float, double, int64_t, bool).
//
//   shfl_sync(value, src_lane, width, mask)
//   shfl_up / shfl_down / shfl_xor(value, delta, width, mask)
#pragma once

#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

#define TILEJIT_CUDA_SHUFFLE(name, intrinsic)                                               \
  template <typename T>                                                                      \
  __device__ __forceinline__ T name(T value, int64_t b, int width, int64_t mask) {           \
    if constexpr (is_same_v<T, bool>) {                                                      \
      return intrinsic(unsigned(mask), int(value), int(b), width) != 0;                      \
    } else {                                                                                 \
      return intrinsic(unsigned(mask), value, int(b), width);                                \
    }                                                                                        \
  }

TILEJIT_CUDA_SHUFFLE(shfl_sync, __shfl_sync)
TILEJIT_CUDA_SHUFFLE(shfl_up, __shfl_up_sync)
TILEJIT_CUDA_SHUFFLE(shfl_down, __shfl_down_sync)
TILEJIT_CUDA_SHUFFLE(shfl_xor, __shfl_xor_sync)

#undef TILEJIT_CUDA_SHUFFLE

}  // namespace tilejit::cuda
