// T.gemm on the CPU: C[M][N] (+)= A[M][K] * B[K][N] over tiles of one block,
// accumulated in f32, or exactly in C's type for integer operands into an
// integer C (int8 x int8 -> int32).
//
//   tilejit::cpu::gemm<M, N, K, trans_a, trans_b>(A, B, C, clear_accum);
//
// A is row-major [M][K], or [K][M] when trans_a; B is [K][N], or [N][K] when
// trans_b; C is [M][N]. The optional template arguments LDA, LDB, LDC are the
// row lengths when an operand is a slice of a wider tile (by default the
// operand's own width). With clear_accum C is overwritten, otherwise added
// to, as TileLang's T.gemm does.
//
// Note [CPU gemm micro-kernel]
// C is computed in register blocks of kMR rows by kNV vectors of kVecFloats
// columns (AVX-512: 8 x 32 floats in 16 zmm accumulators). For each k the
// block loads kNV vectors of B's row k and, for each of its rows, broadcasts
// one element of A into kNV fused multiply-adds, so the loop issues kMR * kNV
// FMAs per kMR + kNV loads and is bound by FMA throughput, not by loads. The
// block walks C column strip by column strip, so a strip of B (K x 32 floats)
// stays in L1 while every row block of A passes over it.
//
// The kernel reads f32 only, with B's rows contiguous. Other operands are
// first converted into an f32 copy on the stack: a bf16 or fp16 A or B
// (widened exactly), a transposed B (transposed while copied), and a C that
// is not f32 (converted in, accumulated in f32, rounded once on the way out).
// An f32 A needs no copy in either layout: its elements are broadcast one at
// a time. The copies are O(M*K + K*N) against the O(M*N*K) product, and stay
// on the stack: at most (M*K + K*N + M*N) floats, 96 KiB for 128x128x64.
// Edges (M not a multiple of kMR, N not of kVecFloats) run the same kernel
// with fewer rows or vectors, then scalar columns; all sizes are template
// arguments, so each block shape is resolved at compile time.
#pragma once

#include <type_traits>

#include "tilejit/cpu/tile.h"

#pragma GCC visibility push(hidden)

namespace tilejit::cpu {
namespace gemm_detail {

#if defined(__AVX512F__)
inline constexpr int kMR = 8;
#elif defined(__AVX__)
inline constexpr int kMR = 6;
#else
inline constexpr int kMR = 4;
#endif
inline constexpr int kNV = 2;

// One MR x NV-vector block of C at C (row length LDC): C (+)= A_block * B_strip.
// A: f32 with row length LDA, [MR][K] or, when kTransA, [K][MR]; B: f32 rows
// of row length LDB, [K][NV * kVecFloats].
template <int MR, int NV, int K, bool kTransA, int LDA, int LDB, int LDC>
inline void micro_kernel(const float* __restrict A, const float* __restrict B,
                         float* __restrict C, bool clear) {
  vfloat acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = clear ? vfloat{} : load_vec(C + r * LDC + v * kVecFloats);
    }
  }
  for (int k = 0; k < K; ++k) {
    vfloat b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = load_vec(B + k * LDB + v * kVecFloats);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const float a = kTransA ? A[k * LDA + r] : A[r * LDA + k];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += a * b[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) store_vec(C + r * LDC + v * kVecFloats, acc[r][v]);
  }
}

// Columns [J0, J0 + W) of C, W < kVecFloats, one element at a time.
template <int M, int W, int K, bool kTransA, int LDA, int LDB, int LDC>
inline void scalar_columns(const float* __restrict A, const float* __restrict B,
                           float* __restrict C, bool clear) {
  for (int i = 0; i < M; ++i) {
    float acc[W];
    for (int j = 0; j < W; ++j) acc[j] = clear ? 0.f : C[i * LDC + j];
    for (int k = 0; k < K; ++k) {
      const float a = kTransA ? A[k * LDA + i] : A[i * LDA + k];
      for (int j = 0; j < W; ++j) acc[j] += a * B[k * LDB + j];
    }
    for (int j = 0; j < W; ++j) C[i * LDC + j] = acc[j];
  }
}

// A strip of C, columns [0, NV * kVecFloats) from C: every row block.
template <int M, int NV, int K, bool kTransA, int LDA, int LDB, int LDC>
inline void strip(const float* A, const float* B, float* C, bool clear) {
  constexpr int full = M / kMR * kMR;
  for (int i0 = 0; i0 < full; i0 += kMR) {
    const float* a = kTransA ? A + i0 : A + i0 * LDA;
    micro_kernel<kMR, NV, K, kTransA, LDA, LDB, LDC>(a, B, C + i0 * LDC, clear);
  }
  if constexpr (M % kMR != 0) {
    const float* a = kTransA ? A + full : A + full * LDA;
    micro_kernel<M % kMR, NV, K, kTransA, LDA, LDB, LDC>(a, B, C + full * LDC, clear);
  }
}

// The product on f32 operands laid out as the kernel reads them.
template <int M, int N, int K, bool kTransA, int LDA, int LDB, int LDC>
inline void gemm_f32(const float* A, const float* B, float* C, bool clear) {
  constexpr int kStrip = kNV * kVecFloats;
  constexpr int full = N / kStrip * kStrip;
  for (int j0 = 0; j0 < full; j0 += kStrip) {
    strip<M, kNV, K, kTransA, LDA, LDB, LDC>(A, B + j0, C + j0, clear);
  }
  constexpr int rest_vectors = (N - full) / kVecFloats;
  constexpr int vec_end = full + rest_vectors * kVecFloats;
  if constexpr (rest_vectors > 0) {
    strip<M, rest_vectors, K, kTransA, LDA, LDB, LDC>(A, B + full, C + full, clear);
  }
  if constexpr (N > vec_end) {
    scalar_columns<M, N - vec_end, K, kTransA, LDA, LDB, LDC>(A, B + vec_end, C + vec_end,
                                                             clear);
  }
}

}  // namespace gemm_detail

namespace gemm_detail {

template <int M, int N, int K, bool kTransA, bool kTransB, int LDA, int LDB, int LDC,
          typename TA, typename TB, typename TC>
// Floating-point operands: widened to f32 where they are not, then the
// micro-kernel (Note [CPU gemm micro-kernel]).
inline void gemm_float(const TA* A, const TB* B, TC* C, bool clear_accum) {
  // The f32 operands the kernel reads (Note [CPU gemm micro-kernel]).
  constexpr bool copy_a = !std::is_same_v<TA, float>;
  constexpr bool copy_b = !std::is_same_v<TB, float> || kTransB;
  constexpr bool copy_c = !std::is_same_v<TC, float>;
  constexpr int a_rows = kTransA ? K : M, a_cols = kTransA ? M : K;
  alignas(64) float a32[copy_a ? a_rows * a_cols : 1];
  alignas(64) float b32[copy_b ? K * N : 1];
  alignas(64) float c32[copy_c ? M * N : 1];

  const float* a;
  if constexpr (copy_a) {
    for (int r = 0; r < a_rows; ++r) widen_row(A + r * LDA, a32 + r * a_cols, a_cols);
    a = a32;
  } else {
    a = A;
  }
  constexpr int lda = copy_a ? a_cols : LDA;

  const float* b;
  if constexpr (copy_b) {
    if constexpr (kTransB) {
      for (int n = 0; n < N; ++n) {
        for (int k = 0; k < K; ++k) b32[k * N + n] = to_float(B[n * LDB + k]);
      }
    } else {
      for (int k = 0; k < K; ++k) widen_row(B + k * LDB, b32 + k * N, N);
    }
    b = b32;
  } else {
    b = B;
  }
  constexpr int ldb = copy_b ? N : LDB;

  if constexpr (copy_c) {
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) c32[i * N + j] = clear_accum ? 0.f : to_float(C[i * LDC + j]);
    }
    gemm_detail::gemm_f32<M, N, K, kTransA, lda, ldb, N>(a, b, c32, false);
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) C[i * LDC + j] = convert<TC>(c32[i * N + j]);
    }
  } else {
    gemm_detail::gemm_f32<M, N, K, kTransA, lda, ldb, LDC>(a, b, C, clear_accum);
  }
}

}  // namespace gemm_detail

/// C (+)= op(A) * op(B); see the top of this file.
template <int M, int N, int K, bool kTransA, bool kTransB, int LDA = (kTransA ? M : K),
          int LDB = (kTransB ? K : N), int LDC = N, typename TA, typename TB, typename TC>
inline void gemm(const TA* A, const TB* B, TC* C, bool clear_accum) {
  static_assert(M > 0 && N > 0 && K > 0, "gemm: empty tile");
  if constexpr (std::is_integral_v<TC>) {
    // Integer operands into an integer C (int8 x int8 -> int32, as
    // TileLang's integer GEMM): exact, in C's type, a row of C at a time
    // (the j loop vectorises).
    for (int i = 0; i < M; ++i) {
      alignas(64) TC row[N];
      for (int j = 0; j < N; ++j) row[j] = clear_accum ? TC(0) : C[i * LDC + j];
      for (int k = 0; k < K; ++k) {
        const TC a = TC(kTransA ? A[k * LDA + i] : A[i * LDA + k]);
        for (int j = 0; j < N; ++j) row[j] += a * TC(kTransB ? B[j * LDB + k] : B[k * LDB + j]);
      }
      for (int j = 0; j < N; ++j) C[i * LDC + j] = row[j];
    }
    return;
  } else {
    gemm_detail::gemm_float<M, N, K, kTransA, kTransB, LDA, LDB, LDC>(A, B, C, clear_accum);
  }
}


}  // namespace tilejit::cpu

#pragma GCC visibility pop
