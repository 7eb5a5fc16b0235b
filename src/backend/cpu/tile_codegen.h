// The CPU backend's code generation for tile-IR bodies, in two files:
//   tile_codegen.cpp     the unit, the entry, names, scalar expressions and
//                        statements (loops, ifs, stores, lets, allocations)
//   lower_tile_ops.cpp   the tile ops (T.copy, T.gemm, T.fill, T.reduce_*,
//                        T.atomic_add, T.print) as calls of the CPU tile
//                        library (device/cpu/tilejit/cpu/*.h)
// TileCodegen is what the second needs of the first.
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
// Scalars: integers compute in int64_t whatever their IR dtype (indices
// cannot overflow where the IR's int32 would), bfloat16 and float16 in
// float, rounded when stored or cast; everything else in its own type.
// Elements outside a tensor are neither read nor written: transform::
// predicate guards the scalar accesses, and the tile ops check bounds.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "tilejit/core/data_type.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::cpu {

/// Tile buffers above this size go to the entry's Arena, not the stack.
inline constexpr int64_t kMaxStackTileBytes = 16 * 1024;

/// The unit for a PrimFunc with a tile body (verified, one kernel).
runtime::GeneratedSource generate_tile_source(const runtime::SourceRequest& request);

/// How the generated code reaches a buffer.
struct BufferAccess {
  std::string name;            ///< C++: a View (tensor parameter) or a T* / T[] (tile)
  DataType dtype;
  bool global = false;         ///< a tensor, whose elements may not exist
  std::vector<std::string> shape;    ///< C++ int64 expressions, one per dimension
  std::vector<int64_t> static_shape; ///< constant extents; -1 where dynamic (globals)
  std::string data;            ///< C++ pointer to element 0
};

class TileCodegen {
 public:
  /// `symbols`: the request's, declared by the entry (names taken).
  TileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
              std::ostream& os);

  /// The C++ names of the block indices (x first), for T.print.
  std::vector<std::string> block_names;

  /// The C++ of a scalar expression, in its compute type (see the Note).
  std::string expr(const ir::Expr& e);
  /// The C++ type a value of `t` computes in ("int64_t", "float", ...).
  static const char* compute_type(DataType t);
  /// The C++ type a buffer of `t` stores ("tilejit::bfloat16", ...); throws
  /// TypeError naming `what` for a dtype the CPU backend has no type for.
  const char* storage_type(DataType t, const ir::Span& span, const std::string& what);

  const BufferAccess& access(const ir::Buffer& b, const ir::Span& span, const char* op);
  /// A C++ name not used yet, starting with `base`.
  std::string fresh(const std::string& base);

  /// Writes one line at the current indentation.
  void line(const std::string& text);
  void indent() { depth_ += 1; }
  void dedent() { depth_ -= 1; }

  /// Throws `kind` with "<span or func>: <op>: <what>".
  [[noreturn]] void fail(ErrorKind kind, const ir::Span& span, const std::string& op,
                         const std::string& what) const;

  const ir::PrimFunc& func() const { return func_; }

  /// Emits the kernel's body (its statements; see tile_codegen.cpp).
  void emit_stmt(const ir::Stmt& s);
  /// The arena bytes the body's large tiles need, known once emitted.
  int64_t arena_bytes() const { return arena_bytes_; }

  /// Binds an IR variable to a C++ name (block and thread indices).
  void bind_var(const ir::Expr& var, const std::string& name);

 private:
  std::string var_name(const ir::Expr& v);
  void emit_alloc(const ir::AllocStmt& op);
  void emit_for(const ir::ForStmt& op);

  const ir::PrimFunc& func_;
  std::ostream& os_;
  int depth_ = 0;
  std::map<uint64_t, std::string> vars_;          // IR var id -> C++ name
  std::map<uint64_t, BufferAccess> buffers_;      // buffer id -> access
  std::map<std::string, int> used_names_;         // C++ names taken -> next suffix
  int64_t arena_bytes_ = 0;
};

// lower_tile_ops.cpp: each tile op as library calls.
void lower_copy(TileCodegen& cg, const ir::CopyOp& op);
void lower_gemm(TileCodegen& cg, const ir::GemmOp& op);
void lower_fill(TileCodegen& cg, const ir::FillOp& op);
void lower_reduce(TileCodegen& cg, const ir::ReduceOp& op);
void lower_atomic_add(TileCodegen& cg, const ir::AtomicAddOp& op);
void lower_print(TileCodegen& cg, const ir::PrintOp& op);

}  // namespace tilejit::cpu
