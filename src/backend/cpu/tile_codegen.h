// The CPU backend's code generation for tile-IR bodies, in two files over
// the printer both targets share (backend/common/tile_codegen.h):
//   tile_codegen.cpp     the unit, the entry, allocations, loops and stores
// and the tile ops (T.copy, T.gemm, T.fill, T.reduce_*, T.atomic_add,
// T.print) as calls of the CPU tile library (device/cpu/tilejit/cpu/*.h),
// written by backend/common/lower_tile_ops.cpp.
//
// Note [CPU lowering of tile IR]
// The grid's blocks run on the thread pool exactly as a source body's do
// (cpu_codegen.cpp's entry: blocks [begin, end) of the grid per call, x
// fastest), each block on one host thread, which runs the block's threads
// as Note [Thread semantics] (tilejit/transform/thread_uniformity.h) says:
//  - a uniform statement, and every block-collective op (T.copy, T.gemm,
//    T.fill, reductions, T.Parallel nests), runs once: the CPU library does
//    the whole tile, so every fragment holds the whole tile, and shared and
//    fragment buffers are the same thing, a per-block row-major array (the
//    layout transform::select_layouts gives every tile buffer on the CPU);
//  - a thread-dependent statement runs in a loop over the threads of its
//    group (tilejit_t, from which T.get_thread_binding's indices are
//    computed), each statement in a loop of its own, which orders it after
//    everything before it as a barrier would; a loop or if whose body does
//    not read what it writes through block-visible memory is one statement;
//  - a thread's own local buffers and lets live in arrays with one slot per
//    thread; a buffer no thread writes differently stays one array;
//  - under an `if` on a thread range, the collective ops run once and the
//    thread loops cover the range.
// Arrays up to kMaxStackTileBytes live on the block's stack; larger ones in
// the entry's Arena (tile.h), one per call of the entry, reused by the
// blocks of that call.
//
// Loops: T.Parallel and T.vectorized loops that hold no other loop carry
// `#pragma GCC ivdep`, so g++ vectorises them without proving independence
// (TileLang's contract for T.Parallel); T.unroll carries `#pragma GCC unroll`;
// T.Pipelined is a plain loop (there is nothing to overlap on one thread).
//
#pragma once

#include <cstdint>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "backend/common/tile_codegen.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/backend.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cpu {

/// Tile buffers above this size go to the entry's Arena, not the stack.
inline constexpr int64_t kMaxStackTileBytes = 16 * 1024;

/// The unit for a PrimFunc with a tile body (verified, one kernel).
runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request);

using backend::BufferAccess;

class CpuTileCodegen final : public backend::TileCodegen {
 public:
  /// `threads`: the names of the kernel's thread indices (declared in each
  /// thread loop).
  CpuTileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
                 std::ostream& os, const ir::KernelStmt& kernel,
                 const transform::ThreadUniformity& uniformity);

  std::string lib() const override { return "tilejit::cpu"; }
  std::string math(const char* fn, const char* ct,
                   const std::vector<std::string>& args) const override;
  /// Never called: emit_shuffle makes a shuffle's let (Note [Warp shuffles]).
  std::string shuffle(const ir::CallNode& call, const std::vector<std::string>& args) override;
  /// The arena bytes the body's large tiles need, known once emitted.
  int64_t arena_bytes() const { return arena_bytes_; }
  /// Binds the kernel's thread indices to C++ names (declared per loop).
  void bind_threads();

 private:
  void emit_alloc(const ir::AllocStmt& op) override;
  void emit_for(const ir::ForStmt& op) override;
  void emit_store(const ir::StoreStmt& op) override;
  void emit_tile_op(const ir::Stmt& s) override;
  void emit_sync(const ir::Stmt& s) override;
  bool emit_own(const ir::Stmt& s) override;

  /// `s` run by each thread of the group, in a loop of its own.
  void emit_thread_loop(const ir::Stmt& s);
  /// The loop over the group's threads, with their indices, around `body`.
  template <typename Body>
  void thread_loop(Body body);
  /// A shuffle's let (Note [Warp shuffles]): every thread's value into an
  /// array, then every thread's read of its source lane's.
  void emit_shuffle(const ir::LetStmt& let, const ir::Stmt& s);
  /// The ValueError for the shuffle in `s`, which the threads here do not
  /// run together: `where` says what divides them.
  [[noreturn]] void shuffle_unreachable(const ir::Stmt& s, const ir::Span& span,
                                        const std::string& construct, const std::string& where);
  /// The branches of an if on a thread range, each with its threads.
  void emit_range_if(const ir::IfStmt& op);
  /// `s` reads nothing it writes through block-visible memory, so each
  /// thread may run it whole before the next starts.
  bool self_contained(const ir::Stmt& s) const;

  const ir::KernelStmt& kernel_;
  const transform::ThreadUniformity& uniformity_;
  transform::ThreadRange group_;
  std::vector<std::string> thread_names_;
  std::set<uint64_t> locals_;  // the kernel's local buffers
  bool in_thread_ = false;
  int parallel_depth_ = 0;
  int64_t arena_bytes_ = 0;
};

using TileCodegen = backend::TileCodegen;

}  // namespace tilejit::cpu
