// Where the CUDA lowering keeps each fragment, and how it pads the operands
// of the tensor-core gemm.
//
// Note [Register accumulators]
// A fragment is one block-wide array in shared memory (Note [CUDA lowering
// of tile IR]) unless it can live in registers as mma.sync leaves its
// accumulators (tilejit/cuda/mma_acc.h): each thread holds its own elements,
// no barrier guards them, and a T.Parallel nest over one is a loop over the
// thread's registers. Three kinds qualify:
//  - accumulators, MmaAcc<M, N, WM, WN>: a 2-D float32 fragment that is the
//    C of a T.gemm whose A and B are bfloat16 or float16 (one type) in
//    shared memory or in registers, with M and N multiples of 16 per warp of
//    the grid below and K a multiple of 16. That is the TileLang program's
//    usual accumulator, and what makes a GEMM fast: it is never written to
//    memory between the K steps. The warp grid (WM x WN = threads / 32)
//    follows the first gemm's policy: FullRow puts every warp on its own
//    rows, FullCol on its own columns, Square splits both as evenly as the
//    shape allows; where that grid does not divide the shape (warp tiles of
//    16-row by 8-column mma tiles), the others are tried;
//  - operands, MmaAcc<M, K, WM, 1, M, WN> of 16-bit elements: a 2-D
//    bfloat16 or float16 fragment that is the (untransposed) A of gemms
//    whose C is an accumulator in registers of M rows over WM x WN warps:
//    its registers are then already the mma's A fragments (flash
//    attention's probabilities, cast from the scores, never touch memory).
//    With WN > 1 (FullCol, as MLA decoding has it) each of the WN warps of
//    a warp row holds that row's whole A (WR = WN); a copy of a whole
//    16-bit shared tile into it is one ldmatrix per 16 x 16 block;
//  - row vectors, MmaRows<M, WM, WN>: a 1-D float32 fragment of M elements
//    (the online softmax's maxima and sums) whose uses line up with the
//    rows of such an accumulator: the four threads of a quad, in each of
//    the WN warps of a warp row, that hold a row's elements each hold its
//    value. A row reduction with WN > 1 combines a quad by shuffles, then
//    the WN warps in the shared scratch (scratch_floats), and every holder
//    takes the result; a loop over the rows runs on every holder, and a
//    store from it to memory, or a copy of the vector to memory (a row of
//    a tile, or a strided column), is one holder's (leader()).
// Every use must be one the registers can serve: a whole-buffer T.fill; a
// whole-buffer T.copy to or from memory the block can reach, or to or from
// another register fragment of the same layout; a whole-buffer row
// reduction (dim=1) of an accumulator into memory or into a row vector of
// its rows; an access inside a T.Parallel nest at exactly the nest's
// indices: `acc[i, j]` in `for i, j in T.Parallel(M, N)` (one register
// layout per nest), `rows[i]` there too, or in `for i in T.Parallel(M)`
// whose stores all go to register row vectors (each thread then runs the
// iterations of its own rows). Anything else keeps the fragment in shared
// memory, where every access is legal, and what cannot stay in registers
// without it follows: the choice changes speed, never meaning. A
// fragment's part per thread is at most kMaxAccRegisters elements.
//
// Note [Partitioned fragments]
// A fragment that no T.gemm touches (the tile of a row reduction, of a
// norm, of an elementwise kernel) lives in registers too where every use is
// one that Note [Register accumulators] allows, with the layout TileLang's
// LayoutInference gives a T.Parallel loop: the tile is split over the
// block's threads as TR thread rows of TC consecutive threads, each thread
// holding M / TR rows and, of each, runs of V consecutive columns
// (tilejit/cuda/part_tile.h). The layout is a function of the tile's shape
// and the block's threads alone, so every fragment of one shape has the
// same one whatever its element type, and a copy or a T.Parallel nest
// between them is register to register. V is the longest run (8, 4, 2, 1)
// that divides N; TC is then the most threads, a power of two, that the
// row's runs divide evenly, and TR = threads / TC must divide M. The row
// vectors of such a tile are PartRows, held by each of a row's TC threads;
// a row reduction combines a row's threads by warp shuffles and, where a
// row spans warps (TC > 32), in shared memory. A 16-bit tile may be reduced
// (in float) in this layout; an mma layout's reductions take float32.
// Where a partitioned tile meets an mma tile (a copy, a nest), the mma tile
// keeps its layout and the partitioned one goes back to shared memory.
//
// Note [1-D and replicated fragments]
// A 1-D fragment that no tile's rows involve (it is not reduced into from
// a tile's rows, not read in a 2-D nest, and meets no such row vector
// through copies or 1-D nests) lives in registers in one of two layouts:
//  - partitioned, a 1 x N PartTile (part_layout(1, N, threads)): the block's
//    threads each hold runs of V consecutive elements, so a T.Parallel(N)
//    nest over it is a register loop whose index is each register's column
//    (`flat` below; unlike a row vector, whose nests index rows). Every
//    iteration runs once, on the thread that holds its element, so the
//    nest may store anywhere. Its whole reduction (T.reduce_*(x, out,
//    dim=0) into one element) is part_reduce_rows_to of that tile, its one
//    row folded per thread, over the warp by shuffles and across warps in
//    the row reductions' scratch (two barriers, as any row spanning warps),
//    the result in every thread, the same bits in each (each shuffle step
//    combines the same two values, commutatively, and every thread folds
//    the warps' values in one order), as a replicated result needs;
//  - replicated, Replicated<N> (N <= kMaxReplicated): a fragment whose every
//    element access is at constant indices and, inside T.Parallel nests, a
//    read (TileLang's `lse[0] = ...` at block level, `max_x[0]` in a nest).
//    Every thread holds every element: code outside T.Parallel nests is
//    uniform (Note [CUDA lowering of tile IR]), so each thread computes the
//    same values, and a read anywhere is a plain register read, with no
//    barrier. It is printed as a thread's local array: every thread stores
//    its own copy at block level. To memory, its elements go through
//    rows_store, whose one storing thread (thread 0) is what a store of a
//    shared fragment's element at block level does too; every thread storing
//    the same value would be as correct, but costs the block threads x
//    N stores of one address. Values that are not uniform (an element stored
//    from a thread-dependent expression at block level, which races in
//    shared memory) are outside what the program means, as before.
// Fragments of 16-bit floats and integers qualify as float32 ones do; a
// reduction takes float or 16-bit elements into a float or 16-bit result
// (the CPU's too run in float). What one rule refuses keeps the fragment in
// shared memory with the reason (kept_shared).
//
// Note [Short accumulators]
// A decoding kernel's gemm has as many rows as query heads share a kv head,
// often fewer than the 16 of an mma tile (1 for multi-head attention). Its
// accumulator is then an MmaAcc<16, N, 1, WN, M> whose rows from M on exist
// only in registers: every op skips them (stores, loads, reductions, the
// register loops), and the A operand in shared memory is allocated with 16
// rows, so ldmatrix reads memory of the tile; the rows past M hold whatever
// is there and feed only the rows that are skipped.
//
// Note [Padded gemm operands]
// ldmatrix reads eight rows of 16 bytes at once; rows of a 16-bit tile whose
// length is a multiple of 64 elements fall into the same shared-memory banks
// (an 8-way conflict). A 16-bit 2-D shared tile that is an operand of a
// tensor-core gemm therefore gets rows of its length + 8 elements (16 bytes
// more): consecutive rows start in consecutive 16-byte bank groups. Every
// access goes through the padded row length, so nothing else changes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/layout.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/diagnostic.h"

namespace tilejit::cuda {

inline constexpr int64_t kMaxAccRegisters = 128;
/// Elements of a replicated fragment (Note [1-D and replicated fragments]).
inline constexpr int64_t kMaxReplicated = 16;
/// Elements added to each row of a padded gemm operand.
inline constexpr int64_t kOperandPad = 8;

/// A register fragment's layout (Note [Layouts] in tilejit/ir/layout.h):
/// an accumulator or operand, a row vector, a partitioned tile, a flat or a
/// replicated one (the Notes above).
using ir::FragmentLayout;

/// Its device type: "tilejit::cuda::MmaAcc<M, N, WM, WN[, MR[, WR]]>",
/// "tilejit::cuda::MmaRows<M, WM[, WR]>", "tilejit::cuda::PartTile<M, N,
/// TR, TC, V>", "tilejit::cuda::PartRows<M, TR, TC>" or
/// "tilejit::cuda::Replicated<M>".
std::string layout_type(const FragmentLayout& l);

/// A tile's register layout, or nullptr where it is not in registers (a
/// replicated fragment is: each thread's own array).
inline const FragmentLayout* register_layout(const ir::Buffer& b) {
  return b.defined() ? b->layout.fragment() : nullptr;
}
/// The layout of a row reduction's source whose rows span warps, which meet
/// in a shared scratch (mma_acc.h, part_tile.h); nullptr where warp shuffles
/// suffice or the source is not in registers.
inline const FragmentLayout* scratch_layout(const ir::ReduceOp& op) {
  const FragmentLayout* l = register_layout(op.src.buffer);
  return l != nullptr && l->scratch_floats() > 0 ? l : nullptr;
}
/// The bytes of a swizzled shared tile's panel rows (Note [Warpgroup
/// gemms]), 0 for a tile that is not swizzled.
inline int swizzle_of(const ir::Buffer& b) {
  const ir::SharedLayout* s = b.defined() ? b->layout.shared() : nullptr;
  return s != nullptr ? s->swizzle : 0;
}
/// An accumulator layout stmatrix stores whole into a rows x cols 16-bit
/// shared tile (acc_store_shared): mma tiles, not replicated, every row
/// real, whole 16 x 16 blocks per warp.
inline bool stmatrix_layout(const FragmentLayout& from, int64_t rows, int64_t cols) {
  return !from.part() && !from.rows() && !from.repl && from.m_real == 0 &&
         from.n % (16 * from.wn) == 0 && from.m == rows && from.n == cols;
}
/// A shared tile whose rows are longer than the buffer's (Note [Padded gemm
/// operands]).
inline bool rows_padded(const ir::Buffer& b) {
  const ir::SharedLayout* s = b.defined() ? b->layout.shared() : nullptr;
  return s != nullptr && b.rank() == 2 && b.shape()[1].is_const() &&
         s->pitch > b.shape()[1].int_value();
}

// Note [Register budget]
// The register fragments of a kernel are live together in its main loop,
// beside the addresses, the gemms' ldmatrix fragments and the temporaries:
// past 255 registers a thread ptxas spills, and local memory in a main loop
// costs more than the registers saved. TileLang's MLA decoding on 8 warps
// under FullCol shows it: 128 registers for the output accumulator, 64 for
// the probabilities that every warp of a warp row holds whole, 40 for the
// row vectors, 16 for the scores: 248, which spilled 460 bytes and ran
// 1.6x slower than with the last two kinds in shared memory. Where the
// register fragments take more than register_budget(threads) 32-bit
// registers a thread, the fragments that several warps hold alike (WR > 1:
// A operands and row vectors of accumulators split over columns) are kept
// in shared memory, as they were before such layouts existed; the lowering
// report names the budget at each. The accumulators are then chosen again
// with warp tiles of at least 16 columns: 8-column tiles (FullCol on 64
// columns over 8 warps) exist to give such fragments one layout, and
// without them they make every warp read the whole A (MLA: 8 times over
// instead of 4, 12% slower on the H200). (TileLang's Hopper lowering holds the
// same program in 16 registers of A per thread through wgmma, which reads B
// from shared memory: the CUDA backend's part 2.)
inline int64_t register_budget(int threads) {
  const int64_t per_thread = threads > 0 ? std::min<int64_t>(255, 65536 / threads) : 255;
  return per_thread - 56;
}

/// What layout inference says of the fragments it did not put where the
/// fast paths want them (for the lowering report).
struct LayoutReasons {
  /// Accumulator id -> why it did not take the warpgroup layout, where the
  /// target has wgmma (the lowering report's reason for mma.sync).
  std::map<uint64_t, std::string> not_warpgroup;
  /// Buffer id -> what kept a fragment in shared memory: the op that forced
  /// it, at its line, and why.
  std::map<uint64_t, runtime::Diagnostic> kept_shared;
};

/// choose_fragments' choice, which infer_layouts (infer_layouts.h) writes
/// into the IR as the buffers' layouts.
struct FragmentChoice {
  /// Buffer id -> its register layout (Note [Register accumulators]); the
  /// element type is the buffer's.
  std::map<uint64_t, FragmentLayout> registers;
  /// Buffer id -> the bytes of its panels' rows (64 or 128), for the
  /// shared operands of warpgroup gemms (Note [Warpgroup gemms]).
  std::map<uint64_t, int> swizzled;
  /// Buffer ids of the padded gemm operands (Note [Padded gemm operands]).
  std::map<uint64_t, bool> padded;
  /// Buffer id -> rows allocated, for the A operands in shared memory of
  /// gemms into an accumulator of fewer than 16 rows (Note [Short
  /// accumulators]).
  std::map<uint64_t, int64_t> padded_rows;
  LayoutReasons reasons;
};

/// The partitioned layout of an m x n tile over `threads` threads (Note
/// [Partitioned fragments]), or none (part_layout.cpp).
std::optional<FragmentLayout> part_layout(int64_t m, int64_t n, int threads);

/// The choice for the kernel `kernel`, run with `threads` threads.
/// `in_groups`: buffers that ops of a thread range (Note [Thread
/// semantics]) touch, which stay in shared memory. `warpgroups`: the
/// target has wgmma (sm_90a; Note [Warpgroup gemms]).
FragmentChoice choose_fragments(const ir::KernelStmt& kernel, int threads,
                                const std::set<uint64_t>& in_groups = {},
                                bool warpgroups = false);

/// The loops of the T.Parallel nest that starts at `op`: each loop whose
/// body is (a sequence of one) T.Parallel loop, outermost first.
std::vector<const ir::ForStmt*> parallel_nest(const ir::ForStmt& op);

}  // namespace tilejit::cuda
