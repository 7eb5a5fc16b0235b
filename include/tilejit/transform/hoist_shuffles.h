// hoist_shuffles: every warp shuffle of a tile body evaluated on its own, by
// every thread that runs the statement holding it.
//
// Note [Warp shuffles]
// T.shfl_sync(value, src_lane, width=32, mask=0xFFFFFFFF), T.shfl_up /
// T.shfl_down / T.shfl_xor(value, delta, width, mask) are TileLang's (and
// CUDA's) warp shuffles: each thread offers `value` and reads the value of
// another lane of its warp (lane = linear thread id % 32, warps of 32
// consecutive threads, x fastest), within segments of `width` lanes, by
// PTX's shfl.sync rules: a source outside the segment (up, down) or past it
// (xor) gives the thread its own value. An ir::CallNode with an
// ir::Intrinsic::kShfl* op, of the value's dtype.
//
// A shuffle is an exchange: every lane of the mask must reach it together,
// and what it returns depends on what the other lanes offer at that point.
// So that no target evaluates one conditionally (a C++ `?:` or `&&`, the
// guard transform::predicate puts around a store into a tensor) or late (a
// Python name bound to it and used after the value changed), this pass
// gives each shuffle a LetStmt of its own, in front of the statement that
// holds it, in the order the statement evaluates them (inner shuffles
// first): afterwards a shuffle is only ever the whole value of a let. A
// shuffle in a while loop's condition, which runs again at every
// iteration, is an error at the while.
//
// The targets then take it from there: CUDA calls __shfl_*_sync
// (tilejit/cuda/shuffle.h); the CPU, which runs a block's threads one after
// another (Note [CPU lowering of tile IR]), fills an array with every
// thread's value in one thread loop and reads the source lane's element in
// the next (tilejit/cpu/shuffle.h), which needs every thread of the source
// lanes to run the let: a shuffle under a condition, loop or exit that
// depends on the thread and is not a thread range, or in a T.Parallel loop,
// is a ValueError there (transform::thread_uniformity rejects the T.Parallel
// case on both targets).
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// `func` (verified) with every shuffle the value of a let of its own, as
/// Note [Warp shuffles] says; returned unchanged when it has none.
ir::PrimFunc hoist_shuffles(const ir::PrimFunc& func);

/// Whether `e` holds a warp shuffle.
bool holds_shuffle(const ir::Expr& e);
/// Whether `s` (or a statement or expression in it) holds a warp shuffle.
bool holds_shuffle(const ir::Stmt& s);
/// The shuffle a let binds, or null.
const ir::CallNode* shuffle_of(const ir::LetStmt& let);
/// The first let of a shuffle in `s` (after hoist_shuffles); undefined when none.
ir::Stmt first_shuffle(const ir::Stmt& s);

}  // namespace tilejit::transform
