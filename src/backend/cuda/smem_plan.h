// Shared-memory planning for a T.Kernel: where each shared and fragment
// tile lies in the block's one dynamic shared-memory buffer, with tiles whose
// lifetimes cannot overlap sharing bytes.
//
// Note [Shared-memory liveness]
// A wrong overlap silently corrupts results, so every rule errs towards
// keeping buffers apart.
//  - Positions. The body's statements are numbered in program order: each
//    tile op, store, let and evaluate, each if's condition, each loop's
//    header (a For's min and extent, a While's condition), the loops of a
//    T.Parallel nest included. A buffer is accessed at a position when the
//    statement there loads it in any expression (an index of another
//    buffer's region too), stores to it, or names it in a region (T.copy
//    src/dst, T.gemm a/b/c, T.fill dst, T.reduce src/dst, T.atomic_add
//    dst/src, T.print).
//  - A buffer's live range runs from its first access to its last. When the
//    first access reads the buffer (a load, a copy's source, a gemm
//    accumulating, a reduce with clear=False, an atomic add, a print), the
//    range starts at the kernel's first position.
//  - Loops. For each loop holding an access of the buffer, the range covers
//    the whole loop (header to last body position) unless the buffer is
//    "fresh each iteration" there:
//     1. the loop is serial or unrolled (ForKind::kSerial, kUnroll) or a
//        while, and lies in no T.Parallel or vectorized loop; T.Pipelined
//        loops never are, so that a lowering may overlap their iterations;
//     2. the loop's header does not access the buffer;
//     3. the buffer's first access in the loop is in a statement of the
//        body's own sequence (under no if, while or inner loop) that
//        overwrites all of it and reads none of it: a T.copy or T.fill into
//        the whole buffer, a T.gemm with clear_accum into the whole buffer, a
//        T.reduce with clear=True into the whole buffer, or a perfect
//        T.Parallel nest whose loops run over exactly the buffer's shape
//        (min 0, extents its dimensions), whose innermost body begins with a
//        store to the buffer at exactly the nest's variables, and which
//        touches the buffer nowhere but at those variables;
//     4. the buffer is not accessed after the loop.
//    A buffer is fresh too in a loop meeting 1 whose inner loop (at any
//    depth, under an if or not) holds the buffer's first access in it and
//    meets 1-4: the buffer is then touched nowhere after that inner loop.
//    Either way no value of the buffer crosses an iteration boundary, and
//    its range within the loop is that of its accesses. Nested loops apply
//    the rule at each level. A `continue` or `break` before the overwrite skips
//    the rest of the iteration or leaves the loop, so neither breaks 3.
//  - Offsets are then assigned largest buffer first, each at the lowest
//    multiple of 128 bytes (or of its request's alignment) where it meets no buffer already placed whose live
//    range overlaps its own. A buffer the body never accesses is taken to
//    be live throughout (it may stand for memory the lowering uses in ways
//    the body does not show), so it shares no byte.
// The 128-byte boundary is the alignment ldmatrix, cp.async and the swizzles
// need. The plan says nothing of barriers: the lowering must treat buffers
// whose bytes meet as one buffer when it looks for hazards between
// statements (Note [CUDA lowering of tile IR], "Barriers"), or a thread may
// write a tile's successor while another still reads the tile. Across a
// loop's back edge the barrier at the end of its body does that work.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

/// A shared or fragment buffer of a kernel and the bytes it takes.
struct SmemRequest {
  ir::Buffer buffer;
  int64_t bytes;
  /// The alignment of its offset, past the 128 bytes every buffer gets:
  /// 1024 for a swizzled tile (Note [Warpgroup gemms]).
  int64_t align = 128;
};

struct SmemPlan {
  /// Buffer id -> byte offset in the block's dynamic shared memory, one
  /// entry per request.
  std::map<uint64_t, int64_t> offsets;
  /// The bytes the block needs: the largest offset + bytes (0 without
  /// requests).
  int64_t total = 0;
  /// Buffer id -> its bytes (the request's).
  std::map<uint64_t, int64_t> bytes;
};

/// Offsets in one dynamic shared-memory buffer for `requests` (buffers
/// allocated by AllocStmts somewhere in `body`, a T.Kernel's body after
/// transform::verify, predicate and select_layouts), each at a multiple of
/// 128 bytes; two buffers share bytes only where their live ranges in `body`
/// cannot overlap (Note [Shared-memory liveness]). Buffers are matched by
/// id; accesses of buffers not requested are ignored. Throws InternalError
/// for an undefined buffer, a buffer requested twice or negative bytes.
SmemPlan plan_shared_memory(const ir::Stmt& body, const std::vector<SmemRequest>& requests);

}  // namespace tilejit::cuda
