// Which memory accesses of a thread's run of consecutive elements move as
// vectors (the CUDA lowering's, device/cuda/tilejit/cuda/vector_run.h).
//
// Note [Vectorised runs]
// A thread's loop over V consecutive elements of a row reads and writes
// shared and global memory one element at a time as the program writes it:
// the run of a partitioned fragment's register loop (part_tile.h: registers
// r .. r + V - 1 are columns c .. c + V - 1 of one row) and a T.vectorized
// loop. Where every index of an access but the last is the same for all the
// run's lanes, and the last is `rest + lane` with `rest` the same for all,
// the access's V elements are consecutive in memory. Such an access is
// staged: read as vectors into a V-element register array before the lanes
// (load_run: pieces of 16, 8 or 4 bytes where the address is aligned,
// element by element where not), each lane reading and writing its element
// of the array, and written back as vectors after the lanes (store_run).
// That is what TileLang's VectorizeLoop makes of these loops (its uint4
// loads of a fragment's row from shared memory), and what the norms' and
// the GEMV's loops need to move 16 bytes per instruction.
//
// Staging moves reads before the lanes and writes after them, so it is done
// only where that changes no value:
//  - the run's body is stores and lets alone: no if, loop, select or tile
//    op, so every access runs on every lane and none is guarded (the
//    guards transform::predicate puts at a tensor's edge are selects and
//    ifs, which keep the body element by element);
//  - a buffer the body writes is staged only where every access of it in
//    the body is at the one index: a lane then reads its own element back
//    after writing it, as the program says; any other pattern leaves the
//    buffer's accesses element by element;
//  - an index that reads memory, or a variable the lanes bind differently
//    anywhere but at the end of the last index, leaves its access as it is.
// The caller says which buffers are memory (shared or global, not
// registers, not a thread's locals) and which writes it may stage (a
// block-level T.vectorized loop stores through thread 0, so it stages reads
// only); under Note [Debug bounds] nothing is staged, so that every index is
// checked.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

/// A staged access: `buffer` at `indices` (as the body writes them, at the
/// lane variable), read before the lanes and / or written after them.
struct StagedAccess {
  ir::Buffer buffer;
  std::vector<ir::Expr> indices;
  bool read = false;
  bool written = false;
};

/// The accesses of `body`, a run over the lane variable `lane` (id), that
/// move as vectors (Note [Vectorised runs]); empty when the body is not
/// straight-line. `memory(b)`: b is shared or global memory that the run
/// may stage; `stage_writes`: whether written buffers may be staged.
std::vector<StagedAccess> plan_vector_run(const ir::Stmt& body, uint64_t lane,
                                          const std::function<bool(const ir::Buffer&)>& memory,
                                          bool stage_writes);

}  // namespace tilejit::cuda
