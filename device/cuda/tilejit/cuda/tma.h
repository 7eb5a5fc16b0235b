// Hopper's tensor memory accelerator (TMA) and the mbarriers it completes:
// Note [TMA copies] (src/backend/cuda/tma_copies.h).
//
//   TensorMap                       a CUtensorMap's 128 bytes, a member of the
//                                   kernel's __grid_constant__ argument block
//   mbar_init(bar, count)           one thread, then mbar_init_fence() and a
//                                   barrier before any other use
//   mbar_expect_tx(bar, bytes)      arrives, and adds `bytes` the phase waits
//                                   for
//   tma_load(dst, map, bar, c...)   the box at coordinates c (innermost
//                                   first, elements) into shared `dst`,
//                                   counted on `bar`; zeros outside the tensor
//   tma_store(map, src, c...)       shared `src` to the box at c, nothing
//                                   written outside the tensor; returns once
//                                   TMA has read src (Note [TMA stores])
//   tma_store_box(map, src, c...)   the same without the wait: a swizzled
//                                   tile's panels, then tma_store_issued()
//   mbar_wait(bar, parity)          until the phase of that parity completes
//   mbar_wait_checked(bar, parity, kernel, name)   the same, trapping with
//                                   the barrier's name past a timeout
//                                   (debug_bounds)
//   mbar_arrive(bar)                this thread's arrival (release: its reads
//                                   of the stage come before the refill)
//   set_registers<INC, N>()         setmaxnreg for the warpgroup (Note [Warp
//                                   specialisation])
//   cluster_rank(), cluster_sync()  the block's rank in its cluster, and a
//                                   barrier of every thread of the cluster
//                                   (Note [Cluster multicast])
//   mbar_arrive_peer(bar, rank)     an arrival on the barrier at bar's offset
//                                   in block `rank` of the cluster
//   mbar_arrive_pair(bar)           a warp's arrival on bar in both blocks of
//                                   a pair (Note [Cluster multicast])
//   tma_load_multicast(dst, map, bar, mask, c...)   tma_load into dst and
//                                   counted on bar at the same offsets in
//                                   every block of `mask`
#pragma once

#include "tilejit/cuda/prelude.h"
#include "tilejit/cuda/print.h"

namespace tilejit::cuda {

struct alignas(64) TensorMap {
  unsigned long long bytes[16];
};

namespace tma_detail {

__device__ __forceinline__ unsigned smem(const void* p) {
  return unsigned(__cvta_generic_to_shared(p));
}

}  // namespace tma_detail

__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(tma_detail::smem(bar)), "r"(count)
               : "memory");
}

// Makes the initialised barriers visible to the async proxy (TMA's
// complete_tx) as well as to the block once a barrier follows.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   tma_detail::smem(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(tma_detail::smem(bar)) : "memory");
}

template <bool INC, int N>
__device__ __forceinline__ void set_registers() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24 to 256, a multiple of 8");
  if constexpr (INC) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  } else {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
  }
}

__device__ __forceinline__ bool mbar_try_wait(uint64_t* bar, unsigned parity) {
  unsigned done = 0;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(tma_detail::smem(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

// A wait that gives up (Note [Debug bounds]: a unit generated with
// debug_bounds): past TILEJIT_MBAR_TIMEOUT_NS of the GPU's clock, the
// thread prints the kernel, its block and thread, the barrier and the
// phase it waited for, and traps, which fails the launch instead of hanging
// the process.
#ifndef TILEJIT_MBAR_TIMEOUT_NS
#define TILEJIT_MBAR_TIMEOUT_NS 10000000000ull
#endif

namespace tma_detail {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __noinline__ inline void mbar_hang(const char* kernel, const char* bar, unsigned parity) {
  print_detail::Args args;
  args.add_where(kernel);
  args.add_s(bar);
  args.add_i(parity);
  args.add_i(static_cast<long long>(TILEJIT_MBAR_TIMEOUT_NS / 1000000ull));
  vprintf("%s: block (%lld, %lld, %lld), thread %lld: mbarrier %s did not complete its phase "
          "of parity %lld in %lld ms (a hang)\n",
          args.bytes);
  __trap();
}

}  // namespace tma_detail

__device__ __forceinline__ void mbar_wait_checked(uint64_t* bar, unsigned parity,
                                                  const char* kernel, const char* name) {
  const unsigned long long start = tma_detail::global_ns();
  while (!mbar_try_wait(bar, parity)) {
    if (tma_detail::global_ns() - start > TILEJIT_MBAR_TIMEOUT_NS) {
      tma_detail::mbar_hang(kernel, name, parity);
    }
  }
}

__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, uint64_t* bar, int c0,
                                         int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%3, %4}], [%2];\n" ::"r"(tma_detail::smem(dst)),
      "l"(map), "r"(tma_detail::smem(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, uint64_t* bar, int c0,
                                         int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%3, %4, %5}], [%2];\n" ::"r"(tma_detail::smem(dst)),
      "l"(map), "r"(tma_detail::smem(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, uint64_t* bar, int c0,
                                         int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%3, %4, %5, %6}], [%2];\n" ::"r"(tma_detail::smem(dst)),
      "l"(map), "r"(tma_detail::smem(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, uint64_t* bar, int c0,
                                         int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%3, %4, %5, %6, %7}], [%2];\n" ::"r"(tma_detail::smem(dst)),
      "l"(map), "r"(tma_detail::smem(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

// Note [Cluster multicast] (src/backend/cuda/cluster_multicast.h).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::
                   : "memory");
}

__device__ __forceinline__ void mbar_arrive_peer(uint64_t* bar, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(tma_detail::smem(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote)
               : "memory");
}

// This warp's hand-back of a stage that both blocks of the pair fill: once
// every lane has read it, one lane arrives on the barrier in each block.
// The release is the block's (the reads it orders are of this block's
// shared memory), as CUTLASS's cluster barriers do: a release at cluster
// scope (mbarrier.arrive.release.cluster) made a GEMM 2.3x slower.
__device__ __forceinline__ void mbar_arrive_pair(uint64_t* bar) {
  __syncwarp();
  if ((threadIdx.x & 31u) == 0) {
    mbar_arrive(bar);
    mbar_arrive_peer(bar, cluster_rank() ^ 1u);
  }
}

#define TILEJIT_TMA_MULTICAST(D, COORDS, ...)                                                   \
  asm volatile("cp.async.bulk.tensor." #D                                                      \
               "d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], " \
               "[%1, {" COORDS "}], [%2], %3;\n" ::"r"(tma_detail::smem(dst)),                  \
               "l"(map), "r"(tma_detail::smem(bar)), "h"(mask), __VA_ARGS__                     \
               : "memory")

__device__ __forceinline__ void tma_load_multicast(void* dst, const TensorMap* map, uint64_t* bar,
                                                   unsigned short mask, int c0, int c1) {
  TILEJIT_TMA_MULTICAST(2, "%4, %5", "r"(c0), "r"(c1));
}

__device__ __forceinline__ void tma_load_multicast(void* dst, const TensorMap* map, uint64_t* bar,
                                                   unsigned short mask, int c0, int c1, int c2) {
  TILEJIT_TMA_MULTICAST(3, "%4, %5, %6", "r"(c0), "r"(c1), "r"(c2));
}

__device__ __forceinline__ void tma_load_multicast(void* dst, const TensorMap* map, uint64_t* bar,
                                                   unsigned short mask, int c0, int c1, int c2,
                                                   int c3) {
  TILEJIT_TMA_MULTICAST(4, "%4, %5, %6, %7", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}

__device__ __forceinline__ void tma_load_multicast(void* dst, const TensorMap* map, uint64_t* bar,
                                                   unsigned short mask, int c0, int c1, int c2,
                                                   int c3, int c4) {
  TILEJIT_TMA_MULTICAST(5, "%4, %5, %6, %7, %8", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}

#undef TILEJIT_TMA_MULTICAST

// Note [TMA stores]: a whole tile to a tensor through the map, by one thread,
// which waits until TMA has read the tile (not until the writes land: the
// kernel's end, or a later kernel, sees them).
__device__ __forceinline__ void tma_store_issued() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

__device__ __forceinline__ void tma_store_box(const TensorMap* map, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   map),
               "r"(tma_detail::smem(src)), "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void tma_store_box(const TensorMap* map, const void* src, int c0, int c1,
                                              int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(map),
      "r"(tma_detail::smem(src)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

__device__ __forceinline__ void tma_store_box(const TensorMap* map, const void* src, int c0, int c1,
                                              int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          map),
      "r"(tma_detail::smem(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

__device__ __forceinline__ void tma_store_box(const TensorMap* map, const void* src, int c0, int c1,
                                              int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(
          map),
      "r"(tma_detail::smem(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

// One box, then the wait for TMA's read of the tile.
template <typename... C>
__device__ __forceinline__ void tma_store(const TensorMap* map, const void* src, C... c) {
  tma_store_box(map, src, c...);
  tma_store_issued();
}

}  // namespace tilejit::cuda
