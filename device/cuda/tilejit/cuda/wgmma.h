// T.gemm on Hopper (sm_90a) through wgmma.mma_async: Note [Warpgroup gemms]
// (src/backend/cuda/warpgroup_gemms.h).
//
// A shared operand lies in the swizzled layout wgmma reads
// (swizzled_byte, swizzle.h): the tile is cut into panels SW bytes
// wide (SW = 32, 64 or 128; the lowering chooses 64 and 128),
// each panel's rows SW bytes apart, and the 16-byte chunks of a row XORed
// with the row's bits as the hardware swizzle of that width does (bits
// [4, 4 + log2(SW / 16)) of the byte offset XOR bits [7, ...)). Copies into
// such a tile (copy_swizzled) write it so; the tile starts 1024-aligned.
//
// The accumulator is an MmaAcc<M, N, WM, WN, M, 1, true> over G = WM / 4 x WN
// warpgroups: warpgroup (gm, gn) holds columns [gn * N / WN, ...) of rows
// 16 * (4 * gm + j) + 16 * WM * mt for its warps j (its 16-row blocks mt),
// which is the wgmma m64 accumulator of the warpgroup for its 64-row block
// mt (PTX ISA, "Register Fragments and Shared Memory Matrix Layouts": the
// same per-warp layout as mma.m16n8, 16 rows per warp); its registers
// (mt * NT + nt) * 4 + q are the instruction's d registers in order.
//
//   acc_gemm_wg<L, K, TA, TB, AR, SWA, BR, SWB, NC>(acc, a, b, clear)
//     acc (+)= op(A) op(B), A (AR rows) and B (BR rows) swizzled shared
//     tiles of SWA / SWB bytes wide panels; NC the columns of one
//     instruction (N / NC of them per 64-row block and k16 step).
//   acc_gemm_wg_rs<L, K, TB, BR, SWB, NC>(acc, a_regs, b, clear)
//     A from registers: an MmaAcc<M, K, WM, 1, M, 1, true> of T, whose
//     registers are the instruction's A fragments.
//   acc_gemm_wg_issue / acc_gemm_wg_rs_issue(..., af)
//     the same, committed and left running (the RS form's packed A in the
//     caller's RsOperand af); acc_wgmma_wait<L, N>(acc) waits until at most N
//     of the warpgroup's gemms run, then af.pin() for an RS one.
//   copy_swizzled<SW, ROWS, COLS, THREADS, ASYNC, INSIDE>(tile, src)
//     a whole swizzled tile from a Rect (copy.h's meaning: 0 where src has
//     no element).
//   copy_from_swizzled<SW, ROWS, COLS, THREADS>(tile, dst)   the inverse,
//     into the elements dst has.
// Every function is called by all of the block's threads together, after a
// barrier that follows the writes of the shared operands with
// async_proxy_fence() (tile.h: the kernel's barriers are proxy_barrier and
// its pipelines fence before theirs), so that wgmma's async proxy sees them.
#pragma once

#include "tilejit/cuda/copy.h"
#include "tilejit/cuda/mma_acc.h"
#include "tilejit/cuda/swizzle.h"
#include "tilejit/cuda/tile.h"

namespace tilejit::cuda {

/// The instruction m64nNk16 (one generated header per N, tilejit/cuda/wgmma/).
template <int N>
struct WgmmaOp;

namespace wg_detail {

// The matrix descriptor of a swizzled operand at shared address `addr`:
// LBO / SBO in bytes (PTX ISA, "Matrix Descriptor Format").
template <int SW>
__device__ __forceinline__ uint64_t descriptor(unsigned addr, unsigned lbo, unsigned sbo) {
  constexpr uint64_t kMode = SW == 128 ? 1 : SW == 64 ? 2 : 3;
  return uint64_t((addr >> 4) & 0x3FFF) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFF) << 32) | (kMode << 62);
}

// An operand of ROWS x (its panels) stored rows, K_MAJOR when its rows run
// along M or N (the stored tile is M x K or N x K), else along K. The
// descriptor of its 64-row (or NC-column) block at `mn` and k16 step at `k`.
// K-major: the 8-row core matrices are 8 * SW apart (SBO); a k16 step moves
// the start 32 bytes along the panel's row, or to the next panel. MN-major:
// a panel holds SW / 2 columns of M or N; panels are ROWS * SW apart (LBO),
// 8-row groups of K 8 * SW apart (SBO).
//
// The descriptor of the tile's start is made once (operand_base) and each
// instruction's is that plus its offset / 16 (operand): the start address
// field holds bits [4, 18) of a shared address below 256 KiB, so the sum
// never carries out of the descriptor's low word, and an instruction costs
// one 32-bit add, its high word (the strides and the swizzle) a constant,
// as CUTLASS's descriptor iterator adds to the low word only. Every value
// here is the same across the warpgroup (the stage's address, the
// warpgroup's rows and columns: warpgroup()), so the compiler keeps the
// descriptors in uniform registers, as wgmma reads them: with a 64-bit add
// per instruction in per-thread registers, MLA decoding's loop spent about
// 20 instructions (4 of them moves to uniform registers) on each wgmma.
struct Descriptor {
  unsigned lo, hi;
};

template <int SW, int ROWS, bool K_MAJOR>
__device__ __forceinline__ Descriptor operand_base(unsigned base) {
  const uint64_t d =
      K_MAJOR ? descriptor<SW>(base, 16, 8 * SW) : descriptor<SW>(base, ROWS * SW, 8 * SW);
  return {unsigned(d), unsigned(d >> 32)};
}

template <int SW, int ROWS, bool K_MAJOR, typename T>
__device__ __forceinline__ uint64_t operand(Descriptor start, int mn, int k) {
  constexpr int kPanel = SW / int(sizeof(T));
  // The offset's two parts, each a multiple of 16 bytes, shifted apart: the
  // block's (mn: the warpgroup's, known at run time) is the same for every
  // k step, so start.lo + its share is formed once per gemm and each
  // instruction adds a constant (one add where the shifted sum cost two).
  const unsigned mn_off = K_MAJOR ? unsigned(mn * SW) : unsigned((mn / kPanel) * (ROWS * SW));
  const unsigned k_off = K_MAJOR ? unsigned((k / kPanel) * (ROWS * SW) + (k % kPanel) * int(sizeof(T)))
                                 : unsigned(k * SW);
  uint64_t d;
  asm("mov.b64 %0, {%1, %2};" : "=l"(d) : "r"(start.lo + (mn_off >> 4) + (k_off >> 4)), "r"(start.hi));
  return d;
}

// This thread's warpgroup, as a value the compiler knows to be the same
// across the warp (a shuffle from lane 0), so that what is computed from it
// (a warpgroup's rows and columns, its descriptors) stays in uniform
// registers.
__device__ __forceinline__ int warpgroup() { return __shfl_sync(0xffffffffu, thread_rank() / 128, 0); }

// The first row block (of G along M) and first column of warpgroup layout
// L's tile that this warpgroup holds (MmaAcc's wm_index() / 4 and col0()).
template <typename L>
__device__ __forceinline__ int wg_row_block() { return warpgroup() / (L::kWN * L::kWR); }
template <typename L>
__device__ __forceinline__ int wg_col0() { return ((warpgroup() / L::kWR) % L::kWN) * L::kWarpN; }

__device__ __forceinline__ void fence_registers(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ __forceinline__ void fence_registers(unsigned& x) { asm volatile("" : "+r"(x)::"memory"); }

__device__ __forceinline__ void arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// A gemm's instructions are issued after begin (the accumulator's registers
// pinned where the code before left them, then wgmma.fence), then committed
// and waited for by acc_wgmma_wait.
template <typename L>
__device__ __forceinline__ void begin(float* acc) {
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) fence_registers(acc[r]);
  arrive();
}

}  // namespace wg_detail

/// Note [Warpgroup ping-pong] (src/backend/cuda/warp_specialize.cpp): two
/// consumer warpgroups take turns at issuing gemms, on named barriers 14
/// and 15. wg_turn_first: warpgroup 1 gives warpgroup 0 the first turn;
/// wg_turn_wait: this warpgroup's turn; wg_turn_pass: the other's (not
/// after warpgroup 1's last turn, which no turn of warpgroup 0 follows).
__device__ __forceinline__ void wg_turn_first() {
  if (wg_detail::warpgroup() == 1) asm volatile("bar.arrive 14, 256;\n" ::: "memory");
}
__device__ __forceinline__ void wg_turn_wait() {
  asm volatile("bar.sync %0, 256;\n" ::"r"(14 + wg_detail::warpgroup()) : "memory");
}
__device__ __forceinline__ void wg_turn_pass(bool last) {
  const int wg = wg_detail::warpgroup();
  if (!(last && wg == 1)) asm volatile("bar.arrive %0, 256;\n" ::"r"(14 + (wg ^ 1)) : "memory");
}

/// Waits until at most N of the warpgroup's committed gemms are running, then
/// pins the accumulator's registers so that no read of them moves above the
/// wait.
template <typename L, int N>
__device__ __forceinline__ void acc_wgmma_wait(float* acc) {
  wg_detail::wait<N>();
#pragma unroll
  for (int r = 0; r < L::kCount; ++r) wg_detail::fence_registers(acc[r]);
}

/// acc_gemm_wg's instructions, committed and left running: the caller waits
/// with acc_wgmma_wait before it reads acc or lets the operands be
/// overwritten (Note [Warp specialisation]: a GEMM's main loop keeps one gemm
/// running while the next is issued).
template <typename L, int K, bool TA, bool TB, int AR, int SWA, int BR, int SWB, int NC, typename T>
__device__ __forceinline__ void acc_gemm_wg_issue(float* acc, const T* a, const T* b, bool clear) {
  static_assert(L::kIL && L::kWR == 1 && L::kWM % 4 == 0, "a warpgroup layout");
  static_assert(K % 16 == 0 && L::kWarpN % NC == 0 && NC % 8 == 0 && NC <= 256,
                "whole instructions");
  constexpr int G = L::kWM / 4;     // warpgroups along M
  const int g = wg_detail::wg_row_block<L>();  // this one's place among them
  const int n0 = wg_detail::wg_col0<L>();
  const wg_detail::Descriptor a0 = wg_detail::operand_base<SWA, AR, !TA>(mma_detail::smem_addr(a));
  const wg_detail::Descriptor b0 = wg_detail::operand_base<SWB, BR, TB>(mma_detail::smem_addr(b));
  wg_detail::begin<L>(acc);
#pragma unroll
  for (int s = 0; s < K / 16; ++s) {
#pragma unroll
    for (int mt = 0; mt < L::MT; ++mt) {
      const uint64_t da = wg_detail::operand<SWA, AR, !TA, T>(a0, 64 * (g + mt * G), s * 16);
#pragma unroll
      for (int c = 0; c < L::kWarpN / NC; ++c) {
        const uint64_t db = wg_detail::operand<SWB, BR, TB, T>(b0, n0 + c * NC, s * 16);
        WgmmaOp<NC>::template ss<T, TA, !TB>(acc + (mt * L::NT + c * (NC / 8)) * 4, da, db,
                                             (s > 0 || !clear) ? 1 : 0);
      }
    }
  }
  wg_detail::commit();
}

template <typename L, int K, bool TA, bool TB, int AR, int SWA, int BR, int SWB, int NC, typename T>
__device__ __forceinline__ void acc_gemm_wg(float* acc, const T* a, const T* b, bool clear) {
  acc_gemm_wg_issue<L, K, TA, TB, AR, SWA, BR, SWB, NC>(acc, a, b, clear);
  acc_wgmma_wait<L, 0>(acc);
}

/// The A operand of an RS gemm packed into the instructions' registers, kept
/// by the caller while the gemm runs (acc_gemm_wg_rs_issue) and pinned after
/// the wait, so that they stay the instructions' until then.
template <typename L, int K>
struct RsOperand {
  unsigned r[K / 16][L::MT][4];
  __device__ __forceinline__ void pin() {
#pragma unroll
    for (int s = 0; s < K / 16; ++s) {
#pragma unroll
      for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
        for (int q = 0; q < 4; ++q) wg_detail::fence_registers(r[s][mt][q]);
      }
    }
  }
};

/// acc_gemm_wg_rs's instructions, committed and left running; `af` holds A
/// until the caller's acc_wgmma_wait, then af.pin().
template <typename L, int K, bool TB, int BR, int SWB, int NC, typename T>
__device__ __forceinline__ void acc_gemm_wg_rs_issue(float* acc, const T* a, const T* b,
                                                     bool clear, RsOperand<L, K>& af) {
  static_assert(L::kIL && L::kWR == 1 && L::kWM % 4 == 0, "a warpgroup layout");
  static_assert(K % 16 == 0 && L::kWarpN % NC == 0 && NC % 8 == 0 && NC <= 256,
                "whole instructions");
  constexpr int KT = K / 8;  // A's 8-column tiles per 16-row block
  const wg_detail::Descriptor b0 = wg_detail::operand_base<SWB, BR, TB>(mma_detail::smem_addr(b));
  const int n0 = wg_detail::wg_col0<L>();
#pragma unroll
  for (int s = 0; s < K / 16; ++s) {
#pragma unroll
    for (int mt = 0; mt < L::MT; ++mt) {
      const T* t = a + (mt * KT + 2 * s) * 4;
#pragma unroll
      for (int q = 0; q < 4; ++q) af.r[s][mt][q] = mma_detail::pack16(t[2 * q], t[2 * q + 1]);
    }
  }
  wg_detail::begin<L>(acc);
#pragma unroll
  for (int s = 0; s < K / 16; ++s) {
#pragma unroll
    for (int mt = 0; mt < L::MT; ++mt) {
#pragma unroll
      for (int c = 0; c < L::kWarpN / NC; ++c) {
        const uint64_t db = wg_detail::operand<SWB, BR, TB, T>(b0, n0 + c * NC, s * 16);
        WgmmaOp<NC>::template rs<T, !TB>(acc + (mt * L::NT + c * (NC / 8)) * 4, af.r[s][mt], db,
                                         (s > 0 || !clear) ? 1 : 0);
      }
    }
  }
  wg_detail::commit();
}

/// A from registers (an MmaAcc<M, K, WM, 1, M, 1, true> of T, whose
/// registers are the instructions' A fragments), packed before the first
/// instruction and kept until the last has read them.
template <typename L, int K, bool TB, int BR, int SWB, int NC, typename T>
__device__ __forceinline__ void acc_gemm_wg_rs(float* acc, const T* a, const T* b, bool clear) {
  RsOperand<L, K> af;
  acc_gemm_wg_rs_issue<L, K, TB, BR, SWB, NC>(acc, a, b, clear, af);
  acc_wgmma_wait<L, 0>(acc);
  af.pin();
}

namespace wg_detail {

// One chunk of copy_swizzled element by element: a left edge of src inside
// the chunk, or rows src does not align to 16 bytes.
template <int KVEC, typename D, typename SV>
__device__ __noinline__ void chunk_elements(D* o, const SV* i, bool row, int64_t c_lo, int64_t c_hi) {
  for (int k = 0; k < KVEC; ++k) {
    o[k] = row && k >= c_lo && k < c_hi ? convert<D>(i[k]) : convert<D>(0.f);
  }
}

}  // namespace wg_detail

// A whole swizzled tile from `src`: 16-byte chunks, consecutive threads on
// consecutive chunks of a row (whole transactions of global memory, and
// conflict-free shared stores: a row's chunks land in distinct banks),
// unrolled. A tile at a tensor's edge moves each chunk that src has whole
// or in a prefix (or not at all) as one vector, zero-filled (cp.async's
// zero-fill where ASYNC); a chunk across src's left edge, and rows src does
// not align to 16 bytes, go element by element.
template <int SW, int ROWS, int COLS, int THREADS, bool ASYNC, bool INSIDE = false, typename D,
          typename S>
__device__ __forceinline__ void copy_swizzled(D* tile, const Rect<S>& src, int rank = thread_rank()) {
  using SV = typename RemoveConst<S>::type;
  constexpr int kVec = 16 / int(sizeof(D));
  constexpr int kChunks = COLS / kVec;
  constexpr int kTotal = ROWS * kChunks;
  static_assert(COLS % kVec == 0, "rows of whole 16-byte chunks");
  char* const bytes = reinterpret_cast<char*>(tile);
  const SV* const origin = src.base + src.origin;
  const bool aligned = is_same_v<D, SV> && (reinterpret_cast<uint64_t>(origin) |
                                            uint64_t(src.stride * int64_t(sizeof(D)))) % 16 == 0;
  const bool whole = INSIDE || (src.r_lo <= 0 && src.r_hi >= ROWS && src.c_lo <= 0 && src.c_hi >= COLS);
  constexpr int kSteps = (kTotal + THREADS - 1) / THREADS;
  if (INSIDE || (aligned && whole)) {
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      const int e = rank + step * THREADS;
      if (kTotal % THREADS != 0 && e >= kTotal) break;
      const int r = e / kChunks, c = (e % kChunks) * kVec;
      void* o = bytes + swizzled_byte<SW, ROWS, D>(r, c);
      const SV* i = origin + int64_t(r) * src.stride + c;
      if constexpr (ASYNC) {
        copy_detail::cp_async_whole<16>(o, i);
      } else {
        *reinterpret_cast<Bytes<16>*>(o) = *reinterpret_cast<const Bytes<16>*>(i);
      }
    }
    return;
  }
  if constexpr (!INSIDE) {
    const SV* nowhere = reinterpret_cast<const SV*>(reinterpret_cast<uint64_t>(src.base) & ~uint64_t(15));
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      const int e = rank + step * THREADS;
      if (kTotal % THREADS != 0 && e >= kTotal) break;
      const int r = e / kChunks, c = (e % kChunks) * kVec;
      D* o = reinterpret_cast<D*>(bytes + swizzled_byte<SW, ROWS, D>(r, c));
      const SV* i = origin + int64_t(r) * src.stride + c;
      const bool row = r >= src.r_lo && r < src.r_hi;
      const int64_t hi = src.c_hi - c < kVec ? src.c_hi - c : kVec;
      if (aligned && (!row || src.c_lo <= c)) {
        const int n = row && hi > 0 ? int(hi) * int(sizeof(D)) : 0;
        if constexpr (ASYNC) {
          copy_detail::cp_async<16>(o, n > 0 ? i : nowhere, n);
        } else if (n == 16) {
          *reinterpret_cast<Bytes<16>*>(o) = *reinterpret_cast<const Bytes<16>*>(i);
        } else {
          wg_detail::chunk_elements<kVec>(o, i, row, 0, n / int(sizeof(D)));
        }
      } else {
        wg_detail::chunk_elements<kVec>(o, i, row, src.c_lo - c, src.c_hi - c);
      }
    }
  }
}

// A whole swizzled tile to `dst` (Note [Swizzled store tiles]: the store a
// TMA store could not take): 16-byte chunks, consecutive threads on
// consecutive chunks of a row (conflict-free shared reads, whole
// transactions of global memory), each written whole where dst has it and
// is aligned to 16 bytes, else element by element within dst.
template <int SW, int ROWS, int COLS, int THREADS, typename S, typename D>
__device__ __forceinline__ void copy_from_swizzled(const S* tile, const Rect<D>& dst,
                                                   int rank = thread_rank()) {
  using DV = typename RemoveConst<D>::type;
  constexpr int kVec = 16 / int(sizeof(S));
  constexpr int kChunks = COLS / kVec;
  constexpr int kTotal = ROWS * kChunks;
  constexpr int kSteps = (kTotal + THREADS - 1) / THREADS;
  static_assert(COLS % kVec == 0, "rows of whole 16-byte chunks");
  const char* const bytes = reinterpret_cast<const char*>(tile);
  DV* const origin = dst.base + dst.origin;
  const bool aligned = is_same_v<S, DV> && (reinterpret_cast<uint64_t>(origin) |
                                            uint64_t(dst.stride * int64_t(sizeof(DV)))) % 16 == 0;
#pragma unroll
  for (int step = 0; step < kSteps; ++step) {
    const int e = rank + step * THREADS;
    if (kTotal % THREADS != 0 && e >= kTotal) break;
    const int r = e / kChunks, c = (e % kChunks) * kVec;
    if (r < dst.r_lo || r >= dst.r_hi) continue;
    alignas(16) S v[kVec];
    *reinterpret_cast<Bytes<16>*>(v) =
        *reinterpret_cast<const Bytes<16>*>(bytes + swizzled_byte<SW, ROWS, S>(r, c));
    DV* const o = origin + int64_t(r) * dst.stride + c;
    if (aligned && c >= dst.c_lo && c + kVec <= dst.c_hi) {
      *reinterpret_cast<Bytes<16>*>(o) = *reinterpret_cast<const Bytes<16>*>(v);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        if (c + k >= dst.c_lo && c + k < dst.c_hi) o[k] = convert<DV>(v[k]);
      }
    }
  }
}

}  // namespace tilejit::cuda
