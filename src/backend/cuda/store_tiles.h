// The shared tiles an epilogue stages an accumulator in, swizzled.
//
// Note [Swizzled store tiles]
// An epilogue often stages its accumulator in a shared tile and copies the
// tile to a tensor (TileLang's C_local -> C_shared -> C). Row-major, such a
// tile's rows are a power of two of bytes apart (512 for 256 16-bit
// columns), so the eight 16-byte rows of each matrix stmatrix stores all
// fall in the same four banks: an 8-way conflict on every store. On the
// H200, the 128 x 256 GEMM of TileLang's benchmark stalled on it (MIO
// throttle 1.32 per issue against TileLang's 0.53; 188 against 181 us at
// 4096^3).
//
// A 2-D 16-bit shared tile whose every write is a whole T.copy from a
// register accumulator stmatrix can store (stmatrix_layout) and whose every
// read is a whole T.copy to a global tensor, all of them the block's (not
// in T.Parallel, a thread range's branch or a pipelined loop), takes a gemm
// operand's swizzle on sm_90a (panels of 128 or 64 bytes, swizzle.h):
//   - acc_store_shared writes each lane's 16-byte row at its swizzled place,
//     eight rows of a matrix in eight distinct bank groups;
//   - a TMA store reads the tile with the same swizzle, one box per panel
//     (Note [TMA stores]), as TileLang's epilogue does;
//   - where TMA does not take the copy (a dtype conversion, a tensor the
//     kernel reads, disable_tma, an unaligned pitch), copy_from_swizzled
//     moves 16-byte chunks, conflict-free.
// Anything else that touches the tile (an element load, a region of
// another op) keeps it row-major.
#pragma once

#include <cstdint>
#include <map>
#include <set>

#include "backend/cuda/fragments.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

/// The tiles of `kernel` Note [Swizzled store tiles] swizzles, with their
/// panels' bytes, given the register layouts `regs` and the buffers that
/// thread ranges touch (`in_groups`).
std::map<uint64_t, int> swizzled_store_tiles(const ir::KernelStmt& kernel,
                                             const std::set<uint64_t>& in_groups,
                                             const std::map<uint64_t, FragmentLayout>& regs);

}  // namespace tilejit::cuda
