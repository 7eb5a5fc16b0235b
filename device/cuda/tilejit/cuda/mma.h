// Tensor cores through mma.sync (m16n8k16, bf16 or fp16 into f32) with
// operands from shared memory through ldmatrix: the warp-level pieces of
// T.gemm (gemm.h).
//
// The accumulator of one 16 x 8 tile is four floats per lane: c[0], c[1] at
// row lane / 4, columns 2 * (lane % 4) + {0, 1}; c[2], c[3] the same columns
// eight rows down (PTX ISA, "Matrix Fragments for mma.m16n8k16").
//
// warp_mma<MT, NT, TA, TB, LDA, LDB, K>(acc, a, b, m0, n0): acc[MT][NT]
// (16 x 8 tiles) += the (MT * 16) x (NT * 8) block at (m0, n0) of
// op(A) * op(B) over K (a multiple of 16). `a` and `b` point at the operands' element
// (0, 0); TA / TB say the operand is stored transposed (A as K x M, B as
// N x K), LDA / LDB are the stored row lengths. Every row address
// must be 16-byte aligned (LD a multiple of 8 and an aligned base).
#pragma once

#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {
namespace mma_detail {

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return unsigned(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// ldmatrix_x4's inverse: lane l's address is row l % 8 of matrix l / 8.
__device__ __forceinline__ void stmatrix_x4(void* p, const unsigned (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
               :
               : "r"(smem_addr(p)), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}

template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0,
                                          unsigned b1) {
  if constexpr (is_same_v<T, tilejit::bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

}  // namespace mma_detail

/// The A fragment of the 16 x 16 block of op(A) at (m0, k0).
template <bool TA, int LDA, typename T>
__device__ __forceinline__ void load_a(unsigned (&r)[4], const T* a, int m0, int k0) {
  const int lane = thread_rank() % 32;
  if constexpr (!TA) {
    mma_detail::ldmatrix_x4(r, a + (m0 + lane % 16) * LDA + k0 + (lane / 16) * 8);
  } else {
    mma_detail::ldmatrix_x4_trans(r, a + (k0 + lane % 8 + (lane / 16) * 8) * LDA + m0 +
                                         ((lane / 8) % 2) * 8);
  }
}

/// The B fragments of two 16 x 8 blocks of op(B) at (k0, n0) and (k0, n0 + 8):
/// r[0], r[1] the first's, r[2], r[3] the second's.
template <bool TB, int LDB, typename T>
__device__ __forceinline__ void load_b(unsigned (&r)[4], const T* b, int k0, int n0) {
  const int lane = thread_rank() % 32;
  if constexpr (TB) {
    mma_detail::ldmatrix_x4(r, b + (n0 + lane % 8 + (lane / 16) * 8) * LDB + k0 +
                                   ((lane / 8) % 2) * 8);
  } else {
    mma_detail::ldmatrix_x4_trans(r, b + (k0 + lane % 8 + ((lane / 8) % 2) * 8) * LDB + n0 +
                                         (lane / 16) * 8);
  }
}

/// The B fragment of the one 16 x 8 block of op(B) at (k0, n0): r[0], r[1]
/// (ldmatrix .x2, whose addresses lanes 0-15 give; the others repeat them).
template <bool TB, int LDB, typename T>
__device__ __forceinline__ void load_b_one(unsigned (&r)[4], const T* b, int k0, int n0) {
  const int lane = thread_rank() % 16;
  const T* p = TB ? b + (n0 + lane % 8) * LDB + k0 + (lane / 8) * 8
                  : b + (k0 + lane % 8 + (lane / 8) * 8) * LDB + n0;
  if constexpr (TB) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(mma_detail::smem_addr(p)));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(mma_detail::smem_addr(p)));
  }
}

namespace mma_detail {

// One k16 step of warp_mma: the A fragments of its MT row blocks and the B
// fragments of its (NT + 1) / 2 pairs of column blocks (the last one alone
// where NT is odd), ...
template <int MT, int NT, bool TA, bool TB, int LDA, int LDB, typename T>
__device__ __forceinline__ void load_step(unsigned (&af)[MT][4], unsigned (&bf)[(NT + 1) / 2][4],
                                          const T* a, const T* b, int m0, int n0, int k0) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) load_a<TA, LDA>(af[mt], a, m0 + mt * 16, k0);
#pragma unroll
  for (int np = 0; np < NT / 2; ++np) load_b<TB, LDB>(bf[np], b, k0, n0 + np * 16);
  if constexpr (NT % 2 == 1) load_b_one<TB, LDB>(bf[NT / 2], b, k0, n0 + (NT - 1) * 8);
}

// ... and its MT x NT mma.sync on them.
template <int MT, int NT, typename T>
__device__ __forceinline__ void mma_step(float (&acc)[MT][NT][4], const unsigned (&af)[MT][4],
                                         const unsigned (&bf)[(NT + 1) / 2][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      mma_16816<T>(acc[mt][nt], af[mt], bf[nt / 2][(nt % 2) * 2], bf[nt / 2][(nt % 2) * 2 + 1]);
    }
  }
}

}  // namespace mma_detail

// Note [Fragment double buffering]: the K loop keeps two sets of fragments
// and loads step s + 1's into one before it issues step s's mma.sync on the
// other, so the ldmatrix latency hides behind the tensor cores instead of
// stalling every step (the old loop loaded a step's fragments and then
// waited for them). The loop runs two steps per iteration, the buffers
// alternating in the code rather than through a runtime index (which would
// put the fragments in local memory); an odd last step runs after it.
//
// The pair loop is unrolled whole up to 8 steps (K <= 128, every gemm of the
// examples): ptxas then spreads the next step's ldmatrix among this step's
// mma.sync, and NVRTC's time for the README GEMM unit stays within ~10% of the
// rolled single-step loop (measured with scripts/nvrtc_resources.py's
// options: rolled pairs cost ~40% more, ptxas working on the loop-carried
// buffers). Longer K keeps the pair loop rolled.
template <int MT, int NT, bool TA, bool TB, int LDA, int LDB, int K, typename T>
__device__ __forceinline__ void warp_mma(float (&acc)[MT][NT][4], const T* a, const T* b, int m0,
                                         int n0) {
  static_assert(K % 16 == 0 && K > 0, "warp_mma takes whole k16 steps");
  using mma_detail::load_step;
  using mma_detail::mma_step;
  constexpr int kSteps = K / 16;
  unsigned af0[MT][4], af1[MT][4];
  unsigned bf0[(NT + 1) / 2][4], bf1[(NT + 1) / 2][4];
  load_step<MT, NT, TA, TB, LDA, LDB>(af0, bf0, a, b, m0, n0, 0);
  // Steps s (in buffer 0) and s + 1 (loaded into buffer 1 here); buffer 0
  // then takes step s + 2 where there is one.
#pragma unroll(kSteps <= 8 ? 4 : 1)
  for (int s = 0; s + 1 < kSteps; s += 2) {
    load_step<MT, NT, TA, TB, LDA, LDB>(af1, bf1, a, b, m0, n0, (s + 1) * 16);
    mma_step<MT, NT, T>(acc, af0, bf0);
    if (s + 2 < kSteps) load_step<MT, NT, TA, TB, LDA, LDB>(af0, bf0, a, b, m0, n0, (s + 2) * 16);
    mma_step<MT, NT, T>(acc, af1, bf1);
  }
  if constexpr (kSteps % 2 == 1) mma_step<MT, NT, T>(acc, af0, bf0);
}

}  // namespace tilejit::cuda
