// Which stores of the block's code write elements no other thread writes.
//
// Note [Thread-exclusive writes]
// A barrier orders two writes of one buffer only where two threads may
// write the same element (a write-after-write hazard). TileLang's naive
// GEMV fills its tiles element by element in a loop,
//
//   for tk in T.serial(128):
//       A_shared[tk] = A[bk * 128 + tk]              (one thread stores)
//       B_shared[tn, tk] = B[bn * 128 + tn, bk * 128 + tk]   (each its row)
//
// and neither store meets another thread's: without this note the loop's
// back edge took a __syncthreads per element. A store's partition key says
// why its elements are its thread's own:
//  - kOneThread: a store no thread's value changes, which the group's first
//    thread makes alone (Note [Thread semantics]);
//  - c > 0: the flat index is c * tx + r with tx the block's one thread
//    index and r in [0, c) over the constant ranges of the loops around the
//    store (Note [Exact affine ranges]): thread t writes only [c t, c t + c).
// Two writes of a buffer with the same key never meet across threads, so
// the barrier placement (barriers.cpp) skips their write-after-write
// hazard; reads of the buffer still wait for them. A store in a thread
// range (a group), into a tile that shares bytes with another, or whose
// index has no such form has no key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "tilejit/ir/affine.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cuda {

struct ExclusiveWrites {
  static constexpr int64_t kOneThread = 0;
  const transform::ThreadUniformity* uniformity = nullptr;
  /// The block's one thread index (0: a block of more than one dimension,
  /// whose stores get no c key) and the block's threads.
  uint64_t thread_var = 0;
  int64_t threads = 0;

  /// `op`'s key inside loops over `loops` (variable id -> its values).
  std::optional<int64_t> key(const ir::StoreStmt& op,
                             const std::map<uint64_t, ir::IntRange>& loops) const;
  /// Per buffer, the key every store in `body` to it shares (a buffer some
  /// store of which has none, or another, is absent); the constant loops
  /// inside `body` add their ranges to `loops`.
  std::map<uint64_t, int64_t> keys(const ir::Stmt& body,
                                   const std::map<uint64_t, ir::IntRange>& loops) const;
};

}  // namespace tilejit::cuda
