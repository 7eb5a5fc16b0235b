// Runs of V consecutive elements that one thread reads or writes in memory
// (src/backend/cuda/vector_runs.h, Note [Vectorised runs]): the run of a
// partitioned fragment's registers in a row, or a T.vectorized loop.
//
//   load_run<V, ALIGNED>(regs, src)    regs[k] = src[k] for k < V
//   store_run<V, ALIGNED>(dst, regs)   dst[k] = regs[k] for k < V
// in pieces of 16, 8 or 4 bytes: the widest that V elements are a multiple
// of and the memory address is aligned to, decided at run time, else element
// by element. ALIGNED: the lowering proved the address a multiple of the
// widest piece (a run of a shared tile whose rows are whole runs), so no
// check is made. `regs` is a thread's array of V elements aligned to 16
// bytes.
#pragma once

#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

namespace run_detail {

// Moves V elements of T from `src` to `dst` in pieces of kBytes when the
// memory side's address `mem` is aligned to them (true), else leaves them
// (false). The register side is aligned to 16 bytes by its declaration; its
// address is not taken as an integer, which would keep it out of registers.
template <int kBytes, bool kAligned, int V, typename T>
__device__ __forceinline__ bool move_pieces(T* dst, const T* src, const void* mem) {
  if constexpr ((V * int(sizeof(T))) % kBytes != 0) {
    return false;
  } else {
    using P = Bytes<kBytes>;
    if (!kAligned && reinterpret_cast<uint64_t>(mem) % kBytes != 0) return false;
#pragma unroll
    for (int p = 0; p < V * int(sizeof(T)) / kBytes; ++p) {
      reinterpret_cast<P*>(dst)[p] = reinterpret_cast<const P*>(src)[p];
    }
    return true;
  }
}

template <int V, bool kAligned, typename T>
__device__ __forceinline__ void move_run(T* dst, const T* src, const void* mem) {
  if (move_pieces<16, kAligned, V>(dst, src, mem) || move_pieces<8, kAligned, V>(dst, src, mem) ||
      move_pieces<4, kAligned, V>(dst, src, mem)) {
    return;
  }
#pragma unroll
  for (int k = 0; k < V; ++k) dst[k] = src[k];
}

}  // namespace run_detail

template <int V, bool ALIGNED = false, typename T>
__device__ __forceinline__ void load_run(T* regs, const T* src) {
  run_detail::move_run<V, ALIGNED>(regs, src, src);
}

template <int V, bool ALIGNED = false, typename T>
__device__ __forceinline__ void store_run(T* dst, const T* regs) {
  run_detail::move_run<V, ALIGNED>(dst, regs, dst);
}

}  // namespace tilejit::cuda
