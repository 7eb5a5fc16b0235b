// Fragments spread over the block's threads by rows and columns, in
// registers (src/backend/cuda/fragments.h, Note [Partitioned fragments]):
// the layout of a fragment that no T.gemm touches, such as the tile of a
// row reduction (softmax, layer norms) or of an elementwise kernel.
//
// PartTile<M, N, TR, TC, V>: an M x N tile over TR x TC threads; thread t
// is thread row t / TC and thread column t % TC, so the TC threads of a
// thread row are consecutive lanes. Each thread holds the rows
// li * TR + t / TC (li < M / TR) and, of each, the runs of V consecutive
// columns c * V * TC + (t % TC) * V (c < N / (V * TC)): register
// r = li * (N / TC) + lj holds
//   row = (r / (N / TC)) * TR + t / TC
//   col = (lj / V) * V * TC + (t % TC) * V + lj % V,  lj = r % (N / TC)
// A run of V registers is V consecutive elements of a row, which moves in
// vectors of up to 16 bytes where the memory allows it.
// PartRows<M, TR, TC>: a vector of the M rows of such a tile; slot s of a
// thread holds row(s) = s * TR + t / TC (row_slot(r) of the tile's
// register r), so the TC threads of a thread row hold the same rows.
//
// A 1-D fragment of N elements is the one row of a PartTile<1, N, 1, TC, V>
// with TC the block's threads (fragments.h, Note [1-D and replicated
// fragments]): register r holds element col(r); reduced whole, it gives
// the PartRows<1, 1, TC> that every thread holds, or a Replicated<1>.
// Replicated<N>: N elements that every thread holds, slot s element s, a
// row vector to rows_store (thread 0 stores) and rows_load.
//
// The ops (mma_acc.h's names dispatch here for these layouts):
//   part_store<L>(acc, dst) / part_load<L>(acc, src)   a Rect (copy.h)
//   rows_store<R>(v, dst) / rows_load<R>(v, src)   mma_acc.h's, for both
//   part_reduce_rows<kind, L>(acc, dst, clear, scratch)      into memory
//   part_reduce_rows_to<kind, L>(acc, rows, clear, scratch)  into registers
//     (rows of any element type: each row is combined in float)
// A row's TC threads combine through warp shuffles; where TC > 32 its
// warps meet in `scratch` (M * TC / 32 floats of shared memory) between two
// block barriers: the one inside, and the one the lowering puts before the
// scratch is written again.
#pragma once

#include "tilejit/cuda/copy.h"
#include "tilejit/cuda/reduce.h"
#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

template <int M, int N, int TR, int TC, int V>
struct PartTile {
  static_assert(M % TR == 0 && N % (TC * V) == 0, "a PartTile divides its tile evenly");
  static_assert(TC <= 32 ? 32 % TC == 0 : TC % 32 == 0, "a thread row is part of a warp or whole warps");
  static constexpr bool kPart = true;
  static constexpr int kM = M, kN = N, kMR = M, kTR = TR, kTC = TC, kV = V;
  static constexpr int kCols = N / TC;  // a thread's elements of each of its rows
  static constexpr int kCount = (M / TR) * kCols;
  static constexpr int kThreads = TR * TC;  // the block's (its consumers')
  __device__ __forceinline__ static int trow() { return thread_rank() / TC; }
  __device__ __forceinline__ static int tcol() { return thread_rank() % TC; }
  __device__ __forceinline__ static int row(int r) { return row_base() + row_offset(r); }
  __device__ __forceinline__ static int col(int r) { return col_base() + col_offset(r); }
  // The thread's first element and register r's place from it, a constant
  // of r (mma_acc.h, Note [Stores from a thread's base]).
  __device__ __forceinline__ static int row_base() { return trow(); }
  __device__ __forceinline__ static int col_base() { return tcol() * V; }
  __host__ __device__ static constexpr int row_offset(int r) { return (r / kCols) * TR; }
  __host__ __device__ static constexpr int col_offset(int r) {
    return ((r % kCols) / V) * (V * TC) + (r % kCols) % V;
  }
  __host__ __device__ static constexpr int row_slot(int r) { return r / kCols; }
};

template <int M, int TR, int TC>
struct PartRows {
  static constexpr bool kPart = true;
  static constexpr int kM = M, kTR = TR, kTC = TC, kCount = M / TR;
  __device__ __forceinline__ static int row(int s) { return s * TR + thread_rank() / TC; }
  // The one of a row's threads that stores it to memory.
  __device__ __forceinline__ static bool leader() { return thread_rank() % TC == 0; }
};

template <int N>
struct Replicated {
  static constexpr int kM = N, kCount = N;
  __device__ __forceinline__ static int row(int s) { return s; }
  __device__ __forceinline__ static bool leader() { return thread_rank() == 0; }
};

namespace part_detail {

// The whole tile lies inside the Rect, whose rows start at piece boundaries.
template <typename L, int kBytes, typename T>
__device__ __forceinline__ bool whole_runs(const Rect<T>& m) {
  constexpr int kElems = kBytes / int(sizeof(T));
  return m.r_lo <= 0 && m.r_hi >= L::kM && m.c_lo <= 0 && m.c_hi >= L::kN &&
         reinterpret_cast<uint64_t>(m.base + m.origin) % kBytes == 0 && m.stride % kElems == 0;
}

// This thread's rows combined over the row's TC threads; with TC > 32 the
// warps of a row meet in scratch. out[li] is row li's value.
template <ReduceKind kKind, typename L, typename E>
__device__ __forceinline__ void row_values(const E* acc, float* out, float* scratch) {
  using reduce_detail::combine;
  using reduce_detail::element;
  constexpr int kRows = L::kM / L::kTR;
#pragma unroll
  for (int li = 0; li < kRows; ++li) {
    float v = reduce_detail::identity<kKind, float>();
#pragma unroll
    for (int lj = 0; lj < L::kCols; ++lj) {
      v = combine<kKind>(v, element<kKind>(convert<float>(acc[li * L::kCols + lj])));
    }
#pragma unroll
    for (int o = 1; o < (L::kTC < 32 ? L::kTC : 32); o <<= 1) {
      v = combine<kKind>(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    out[li] = v;
  }
  if constexpr (L::kTC > 32) {
    constexpr int kWarps = L::kTC / 32;  // of a thread row
    const int w = L::tcol() / 32;
    if (thread_rank() % 32 == 0) {
#pragma unroll
      for (int li = 0; li < kRows; ++li) scratch[(li * L::kTR + L::trow()) * kWarps + w] = out[li];
    }
    block_sync<L::kThreads>();
#pragma unroll
    for (int li = 0; li < kRows; ++li) {
      const float* p = scratch + (li * L::kTR + L::trow()) * kWarps;
      float v = p[0];
#pragma unroll
      for (int k = 1; k < kWarps; ++k) v = combine<kKind>(v, p[k]);
      out[li] = v;
    }
  }
}

}  // namespace part_detail

template <typename L, typename E, typename D>
__device__ __forceinline__ void part_store(const E* acc, const Rect<D>& dst) {
  constexpr int kBytes = piece_bytes<D, L::kV>;
  D* const o = dst.base + dst.origin + int64_t(L::row_base()) * dst.stride + L::col_base();
  if constexpr (kBytes > 0) {
    constexpr int kPer = kBytes / int(sizeof(D));
    if (part_detail::whole_runs<L, kBytes>(dst)) {
#pragma unroll
      for (int r = 0; r < L::kCount; r += kPer) {
        Bytes<kBytes> run;
        D* e = reinterpret_cast<D*>(&run);
#pragma unroll
        for (int k = 0; k < kPer; ++k) e[k] = convert<D>(acc[r + k]);
        *reinterpret_cast<Bytes<kBytes>*>(o + L::row_offset(r) * dst.stride + L::col_offset(r)) =
            run;
      }
      return;
    }
  }
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) {
    const int i = L::row(r), j = L::col(r);
    if (i < dst.r_lo || i >= dst.r_hi || j < dst.c_lo || j >= dst.c_hi) continue;
    o[L::row_offset(r) * dst.stride + L::col_offset(r)] = convert<D>(acc[r]);
  }
}

template <typename L, typename E, typename S>
__device__ __forceinline__ void part_load(E* acc, const Rect<S>& src) {
  using SV = typename RemoveConst<S>::type;
  constexpr int kBytes = piece_bytes<SV, L::kV>;
  const S* const o = src.base + src.origin + int64_t(L::row_base()) * src.stride + L::col_base();
  if constexpr (kBytes > 0) {
    constexpr int kPer = kBytes / int(sizeof(SV));
    if (part_detail::whole_runs<L, kBytes>(src)) {
#pragma unroll
      for (int r = 0; r < L::kCount; r += kPer) {
        const Bytes<kBytes> run = *reinterpret_cast<const Bytes<kBytes>*>(
            o + L::row_offset(r) * src.stride + L::col_offset(r));
        const SV* e = reinterpret_cast<const SV*>(&run);
#pragma unroll
        for (int k = 0; k < kPer; ++k) acc[r + k] = convert<E>(e[k]);
      }
      return;
    }
  }
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) {
    const int i = L::row(r), j = L::col(r);
    const bool has = i >= src.r_lo && i < src.r_hi && j >= src.c_lo && j < src.c_hi;
    acc[r] = convert<E>(has ? convert<float>(o[L::row_offset(r) * src.stride + L::col_offset(r)]) : 0.f);
  }
}

template <ReduceKind kKind, typename L, typename E, typename D>
__device__ __forceinline__ void part_reduce_rows(const E* acc, D* dst, bool clear, float* scratch) {
  float v[L::kM / L::kTR];
  part_detail::row_values<kKind, L>(acc, v, scratch);
  if (L::tcol() != 0) return;
#pragma unroll
  for (int li = 0; li < L::kM / L::kTR; ++li) {
    const int row = li * L::kTR + L::trow();
    const float prev = clear ? reduce_detail::identity<kKind, float>() : convert<float>(dst[row]);
    dst[row] = convert<D>(reduce_detail::combine<kKind>(prev, v[li]));
  }
}

template <ReduceKind kKind, typename L, typename E, typename R>
__device__ __forceinline__ void part_reduce_rows_to(const E* acc, R* rows, bool clear,
                                                    float* scratch) {
  float v[L::kM / L::kTR];
  part_detail::row_values<kKind, L>(acc, v, scratch);
#pragma unroll
  for (int li = 0; li < L::kM / L::kTR; ++li) {
    rows[li] = convert<R>(clear ? v[li] : reduce_detail::combine<kKind>(convert<float>(rows[li]), v[li]));
  }
}

}  // namespace tilejit::cuda
