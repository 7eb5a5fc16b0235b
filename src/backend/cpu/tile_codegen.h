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
// fastest), each block on one thread. So a block has one thread: T.Kernel's
// `threads` are ignored and T.get_thread_binding is 0, every fragment holds
// the whole tile, and shared and fragment buffers are the same thing, a
// per-block row-major array (the layout transform::select_layouts gives
// every tile buffer on the CPU). Arrays up to kMaxStackTileBytes live on the
// block's stack; larger ones in the entry's Arena (tile.h), one per call of
// the entry, reused by the blocks of that call.
//
// Loops: T.Parallel and T.vectorized loops that hold no other loop carry
// `#pragma GCC ivdep`, so g++ vectorises them without proving independence
// (TileLang's contract for T.Parallel); T.unroll carries `#pragma GCC unroll`;
// T.Pipelined is a plain loop (there is nothing to overlap on one thread).
//
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "backend/common/tile_codegen.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cpu {

/// Tile buffers above this size go to the entry's Arena, not the stack.
inline constexpr int64_t kMaxStackTileBytes = 16 * 1024;

/// The unit for a PrimFunc with a tile body (verified, one kernel).
runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request);

using backend::BufferAccess;

class CpuTileCodegen final : public backend::TileCodegen {
 public:
  CpuTileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
                 std::ostream& os)
      : TileCodegen(func, symbols, os, "CPU", /*base_levels=*/2) {}

  std::string lib() const override { return "tilejit::cpu"; }
  std::string math(const char* fn, const char* ct,
                   const std::vector<std::string>& args) const override;
  /// The arena bytes the body's large tiles need, known once emitted.
  int64_t arena_bytes() const { return arena_bytes_; }

 private:
  void emit_alloc(const ir::AllocStmt& op) override;
  void emit_for(const ir::ForStmt& op) override;
  void emit_store(const ir::StoreStmt& op) override;
  void emit_tile_op(const ir::Stmt& s) override;

  int64_t arena_bytes_ = 0;
};

using TileCodegen = backend::TileCodegen;

}  // namespace tilejit::cpu
