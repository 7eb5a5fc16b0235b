// The CUDA tile library's base: what every tile op of a block shares.
//
// Every function of the library is called by all threads of the block
// together, with the same arguments (the generated code is uniform outside
// T.Parallel loops, src/backend/cuda/tile_codegen.h); each thread does its
// share of the elements. A function does not synchronise the block: the
// generated code puts __syncthreads() between the statements that hand
// shared memory from one thread to another.
//
//   is_same_v, is_half_v, is_int_v   type tests (NVRTC has no <type_traits>)
//   convert<D>(s)            a value in another element type (bf16, fp16
//                            through float; the hardware's rounding)
//   thread_rank()            this thread's index in the block (1-D blocks;
//                            the kernel's thread count is its tilejit_nthreads,
//                            not blockDim, which counts a producer warpgroup)
//   async_wait_all()         waits for this thread's cp.async copies
//   async_commit(), async_wait_group<N>()   closes a group of them; waits
//                            until at most N groups are in flight
//   Bytes<N>, piece_bytes<T, V>   a vector of N bytes; the widest one a
//                            run of V elements of T is made of
//   barrier()                async_wait_all(), then __syncthreads(): what
//                            any thread wrote or copied before it is seen
//                            by every thread after it
//   async_proxy_fence(), proxy_barrier<ASYNC>()   the same, seen by wgmma too
#pragma once

#include "tilejit/cuda/prelude.h"

namespace tilejit::cuda {

template <typename A, typename B>
inline constexpr bool is_same_v = false;
template <typename A>
inline constexpr bool is_same_v<A, A> = true;

template <typename T>
inline constexpr bool is_half_v = is_same_v<T, tilejit::bfloat16> || is_same_v<T, tilejit::float16>;
template <typename T>
inline constexpr bool is_int_v = is_same_v<T, int8_t> || is_same_v<T, uint8_t> ||
                                 is_same_v<T, int16_t> || is_same_v<T, int32_t> ||
                                 is_same_v<T, int64_t> || is_same_v<T, uint16_t> ||
                                 is_same_v<T, uint32_t> || is_same_v<T, uint64_t>;

template <typename T>
struct RemoveConst {
  using type = T;
};
template <typename T>
struct RemoveConst<const T> {
  using type = T;
};

template <bool kCond, typename T, typename F>
struct Conditional {
  using type = T;
};
template <typename T, typename F>
struct Conditional<false, T, F> {
  using type = F;
};

/// BYTES (4, 8 or 16) moved as one vector by a load or store of it: the
/// copies' vectors (copy.h), a partitioned tile's runs (part_tile.h) and a
/// thread's staged runs (vector_run.h).
template <int BYTES>
struct alignas(BYTES) Bytes {
  unsigned v[BYTES / 4];
};

/// The bytes a run of V elements of T moves as one vector: the largest of
/// 16, 8 and 4 that the run is a multiple of (0: none, element by element).
template <typename T, int V>
inline constexpr int piece_bytes = (V * int(sizeof(T))) % 16 == 0  ? 16
                                   : (V * int(sizeof(T))) % 8 == 0 ? 8
                                   : (V * int(sizeof(T))) % 4 == 0 ? 4
                                                                   : 0;

/// The type a tile op computes a value of T in: float for 16-bit floats.
template <typename T>
using acc_t = typename Conditional<is_half_v<T>, float, T>::type;

template <typename D, typename S>
__device__ __forceinline__ D convert(S s) {
  if constexpr (is_same_v<D, S>) {
    return s;
  } else if constexpr (is_half_v<S>) {
    return convert<D>(float(s));
  } else if constexpr (is_same_v<D, tilejit::bfloat16>) {
    return __float2bfloat16_rn(float(s));
  } else if constexpr (is_same_v<D, tilejit::float16>) {
    return __float2half_rn(float(s));
  } else {
    return static_cast<D>(s);
  }
}

template <typename S>
__device__ __forceinline__ float to_float(S s) {
  return convert<float>(s);
}

__device__ __forceinline__ int thread_rank() { return int(threadIdx.x); }

__device__ __forceinline__ void async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

__device__ __forceinline__ void async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void barrier() {
  async_wait_all();
  __syncthreads();
}

// What this thread wrote to shared memory through the generic proxy
// (stores, cp.async copies that have landed) is ordered before the async
// proxy's later reads (wgmma's operands: Note [Warpgroup gemms]), once a
// barrier after it has met the reader.
__device__ __forceinline__ void async_proxy_fence() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// barrier() (ASYNC) or __syncthreads(), with async_proxy_fence() before
// it: the barriers of a kernel whose shared tiles wgmma reads.
template <bool ASYNC>
__device__ __forceinline__ void proxy_barrier() {
  if constexpr (ASYNC) async_wait_all();
  async_proxy_fence();
  __syncthreads();
}

// The block's barrier among its first COUNT threads, which are all of them
// or, in a warp-specialised kernel (Note [Warp specialisation] in
// src/backend/cuda/warp_specialize.h), all but the producer warpgroup:
// barrier 0 with a count, which the producer never reaches. After this
// thread's cp.async copies when ASYNC.
template <int COUNT, bool ASYNC = false>
__device__ __forceinline__ void block_sync() {
  if constexpr (ASYNC) async_wait_all();
  asm volatile("bar.sync 0, %0;\n" ::"n"(COUNT) : "memory");
}

// A barrier over the COUNT threads of a thread range (Note [Thread
// semantics]): hardware barrier ID (1..15; 0 is __syncthreads), after this
// thread's cp.async copies when ASYNC.
template <int ID, int COUNT, bool ASYNC>
__device__ __forceinline__ void group_barrier() {
  if constexpr (ASYNC) async_wait_all();
  asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(COUNT) : "memory");
}

}  // namespace tilejit::cuda
