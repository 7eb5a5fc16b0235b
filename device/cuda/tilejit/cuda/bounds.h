// The run-time index checks of a unit generated with debug_bounds (Note
// [Debug bounds] in src/backend/common/tile_codegen.h), the CPU's
// (tilejit/cpu/bounds.h) on the GPU: an index of a tile buffer outside its
// dimension prints what was wrong, where, and traps, which fails the launch
// (the host then reports CUDA_ERROR_LAUNCH_FAILED, and the context is lost).
#pragma once

#include "tilejit/cuda/print.h"

namespace tilejit::cuda {

__device__ __noinline__ inline void index_out_of_bounds(int64_t index, const char* kernel,
                                                         const char* buffer, int dim) {
  print_detail::Args args;
  args.add_where(kernel);
  args.add_i(index);
  args.add_s(buffer);
  args.add_i(dim);
  vprintf("%s: block (%lld, %lld, %lld), thread %lld: bounds check: index %lld lies outside %s "
          "in dimension %lld\n",
          args.bytes);
  __trap();
}

/// `index`, once it is known to lie in [0, extent), dimension `dim` of
/// `buffer` (its name and shape: "f [32]") in kernel `kernel`.
__device__ __forceinline__ int64_t checked_index(int64_t index, int64_t extent,
                                                 const char* kernel, const char* buffer, int dim) {
  if (__builtin_expect(index < 0 || index >= extent, 0)) {
    index_out_of_bounds(index, kernel, buffer, dim);
  }
  return index;
}

}  // namespace tilejit::cuda
