// Where the CUDA lowering keeps each fragment, and how it pads the operands
// of the tensor-core gemm.
//
// Note [Register accumulators]
// A fragment is one block-wide array in shared memory (Note [CUDA lowering
// of tile IR]) unless it is a T.gemm accumulator that can live in registers
// as mma.sync leaves it (tilejit/cuda/mma_acc.h, MmaAcc<M, N, WM, WN>). That
// is the TileLang program's usual accumulator, and what makes a GEMM fast:
// it is never written to memory between the K steps. A fragment C gets the
// "mma" layout when
//  - it is 2-D float32 and the C of at least one T.gemm whose A and B are
//    bfloat16 or float16 (one type) in shared memory (a shared buffer, or a
//    fragment that stays in shared memory), with M and N multiples of 16 per
//    warp of the grid below and K a multiple of 16;
//  - every other use of it is a whole-buffer T.fill, a whole-buffer T.copy
//    from or to a buffer that is not itself in registers, a whole-buffer
//    row reduction (dim=1) into a buffer that is not, or an access inside a
//    T.Parallel nest over exactly its shape at exactly the nest's indices
//    (`acc[i, j]` in `for i, j in T.Parallel(M, N)`), a nest that touches
//    no other register fragment of another layout;
//  - its part per thread is at most kMaxAccRegisters floats.
// The warp grid (WM x WN = threads / 32) follows the first gemm's policy:
// FullRow puts every warp on its own rows, FullCol on its own columns,
// Square splits both as evenly as the shape allows; where that grid does not
// divide the shape, the others are tried. Anything else keeps the fragment
// in shared memory, where every access is legal: the choice changes speed,
// never meaning.
//
// Note [Padded gemm operands]
// ldmatrix reads eight rows of 16 bytes at once; rows of a 16-bit tile whose
// length is a multiple of 64 elements fall into the same shared-memory banks
// (an 8-way conflict). A 16-bit 2-D shared tile that is an operand of a
// tensor-core gemm therefore gets rows of its length + 8 elements (16 bytes
// more): consecutive rows start in consecutive 16-byte bank groups. Every
// access goes through the padded row length, so nothing else changes.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

inline constexpr int64_t kMaxAccRegisters = 128;
/// Elements added to each row of a padded gemm operand.
inline constexpr int64_t kOperandPad = 8;

struct AccLayout {
  int64_t m = 0, n = 0;
  int wm = 1, wn = 1;
  /// The device type: "tilejit::cuda::MmaAcc<M, N, WM, WN>".
  std::string type() const;
  int64_t registers() const { return m * n / (32 * int64_t(wm) * wn); }
  bool operator==(const AccLayout&) const = default;
};

struct FragmentChoice {
  /// Buffer id -> its register layout (Note [Register accumulators]).
  std::map<uint64_t, AccLayout> registers;
  /// Buffer ids of the padded gemm operands (Note [Padded gemm operands]).
  std::map<uint64_t, bool> padded;
};

/// The choice for the kernel `kernel`, run with `threads` threads.
FragmentChoice choose_fragments(const ir::KernelStmt& kernel, int threads);

/// The loops of the T.Parallel nest that starts at `op`: each loop whose
/// body is (a sequence of one) T.Parallel loop, outermost first.
std::vector<const ir::ForStmt*> parallel_nest(const ir::ForStmt& op);

}  // namespace tilejit::cuda
