// The C++ printer of tile-IR bodies that the CPU and CUDA backends share:
// names, scalar expressions, statements (loops, ifs, stores, lets) and the
// normalisation of tile-op regions. Each target derives from TileCodegen and
// gives what is its own: where a tile buffer lives (emit_alloc), how a loop
// runs (emit_for), how a store is written, the math functions, and the tile
// ops (emit_tile_op). The CPU's is backend/cpu/tile_codegen.h, the CUDA's
// backend/cuda/tile_codegen.h.
//
// Scalars (both targets): integers compute in int64_t whatever their IR
// dtype (indices cannot overflow where the IR's int32 would), bfloat16 and
// float16 in float, rounded when stored or cast; everything else in its own
// type. Elements outside a tensor are neither read nor written:
// transform::predicate guards the scalar accesses, and the tile ops check
// bounds.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/core/data_type.h"
#include "tilejit/core/error.h"
#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/stmt.h"
#include "tilejit/runtime/backend.h"

namespace tilejit::backend {

/// How the generated code reaches a buffer.
struct BufferAccess {
  std::string name;            ///< C++: a View (tensor parameter) or a T* / T[] (tile)
  DataType dtype;
  bool global = false;         ///< a tensor, whose elements may not exist
  /// Bytes the data pointer is known to be aligned to (0: unknown): 256 for
  /// a T.alloc_global workspace, which lies at a 256-byte offset of its
  /// arena (the pool's, or a caller's that the call checks).
  int64_t base_align = 0;
  std::vector<std::string> shape;    ///< C++ int64 expressions, one per dimension
  std::vector<int64_t> static_shape; ///< constant extents; -1 where dynamic (globals)
  std::string data;            ///< C++ pointer to element 0
  /// Where a tile's elements are: one array of the block (shared memory, or
  /// the CPU's block), each thread's own array (a local buffer, or a
  /// replicated fragment), or a tile spread over the threads' registers
  /// (Note [Layouts]). A tensor's are kBlock.
  enum class Storage : uint8_t { kBlock, kThread, kRegisters };
  Storage storage = Storage::kBlock;
  /// A tile's name and shape as its allocation declares them (static_shape
  /// may be padded): what Note [Debug bounds] checks against and names.
  std::string buffer;
  std::vector<int64_t> extents;
};

/// The C++ literal of an integer (LL past int32) and of a float of `t`.
std::string int_literal(int64_t v);
std::string float_literal(double v, DataType t);

/// True when `s` holds a loop (so a loop around it is not the innermost).
bool has_loop(const ir::Stmt& s);

/// Note [Line directives]: `source` with each kLineRestoreMarker line made
/// the #line of the unit's own next line, in the unit named `unit`.
std::string restore_line_numbers(const std::string& source, const std::string& unit);

class TileCodegen {
 public:
  /// `symbols`: the request's, declared by the entry (names taken).
  /// `display`: the target's name in messages ("CPU", "CUDA").
  /// `base_levels`: the indentation (two spaces a level) of the body's
  /// outermost statements before any indent().
  TileCodegen(const ir::PrimFunc& func, const std::vector<std::string>& symbols,
              std::ostream& os, const char* display, int base_levels);
  virtual ~TileCodegen() = default;
  TileCodegen(const TileCodegen&) = delete;
  TileCodegen& operator=(const TileCodegen&) = delete;

  /// The C++ names of the block indices (x first), for T.print.
  std::vector<std::string> block_names;

  // Note [Debug bounds]
  // With SourceRequest::debug_bounds (JitOptions::debug_bounds,
  // TILEJIT_DEBUG_BOUNDS=1, pass_configs {"tl.debug_bounds": True}), every
  // index of a scalar load or store of a tile buffer goes through the target
  // library's checked_index(index, extent, kernel, "f [32]", dim) in
  // tile_element: an index outside its dimension throws on the CPU (the
  // block's error, Note [Exceptions from a body]) and prints and traps on
  // CUDA. Tensors need no check (transform::predicate guards them), and
  // register fragments are indexed by their own loops. Indices that
  // transform::check_index_bounds can decide are rejected before this. On
  // CUDA every mbarrier wait (Notes [TMA copies], [Warp specialisation])
  // gives up after a timeout too, printing the kernel, the block, the
  // thread and the barrier's name, and traps: a hang becomes an error.
  /// Whether tile_element checks its indices (Note [Debug bounds]).
  bool debug_bounds = false;

  /// The C++ of a scalar expression, in its compute type.
  std::string expr(const ir::Expr& e);
  /// The C++ type a value of `t` computes in ("int64_t", "float", ...).
  ///
  /// Note [Unsigned arithmetic]
  /// Signed integers and uint8 / uint16 compute in int64, which holds every
  /// value of theirs. uint32 and uint64 compute in uint32_t / uint64_t: a
  /// uint32 product wraps at 2^32 as in TileLang's C, and a uint64 at or above
  /// 2^63 has no int64. An operation whose promoted operand type is unsigned
  /// (ir::promote: the wider type, the unsigned one at one width, as TVM)
  /// converts both operands to it first, so `x * 2654435769` on a uint32 `x`
  /// wraps and int8(-1) < uint8(200) is false, as in C.
  static const char* compute_type(DataType t);
  /// The C++ type a buffer of `t` stores ("tilejit::bfloat16", ...); throws
  /// TypeError naming `what` for a dtype the target has no type for.
  const char* storage_type(DataType t, const ir::Span& span, const std::string& what);

  const BufferAccess& access(const ir::Buffer& b, const ir::Span& span, const char* op);
  /// The access of the tile an allocation makes (a fresh name, its constant
  /// shape) and its element count; ValueError for a layout other than
  /// row-major or a dynamic shape, naming the buffer.
  BufferAccess tile_access(const ir::AllocStmt& op, int64_t* elements);
  /// Registers the access of a tile buffer (from emit_alloc).
  void set_access(const ir::Buffer& b, BufferAccess a) { buffers_[b.id()] = std::move(a); }
  /// A C++ name not used yet, starting with `base`.
  std::string fresh(const std::string& base);
  /// The C++ name of an IR variable (a loop's, a let's), given on first use.
  std::string var_name(const ir::Expr& v);
  /// Binds an IR variable to a C++ name (block and thread indices).
  void bind_var(const ir::Expr& var, const std::string& name);
  /// Forgets a binding made by bind_var (a variable bound for one region).
  void unbind_var(const ir::Expr& var) { vars_.erase(var.var_id()); }

  /// The element of a tile buffer (not a tensor) at `indices`, as an
  /// lvalue. The default is the row-major flat index into `a.name`.
  virtual std::string tile_element(const BufferAccess& a, const std::vector<ir::Expr>& indices);
  /// The element `indices` of any buffer (a View call for a tensor).
  std::string element(const BufferAccess& a, const std::vector<ir::Expr>& indices);

  /// Writes one line at the current indentation.
  void line(const std::string& text);
  /// How many lines line() has written.
  int64_t lines_written() const { return lines_; }
  /// The marker a target's assembler replaces by the #line that returns to
  /// the generated unit (Note [Line directives]).
  static constexpr const char* kLineRestoreMarker = "//@tilejit line restore";
  void indent() { depth_ += 1; }
  void dedent() { depth_ -= 1; }

  /// Throws `kind` with "<span or func>: <op>: <what>".
  [[noreturn]] void fail(ErrorKind kind, const ir::Span& span, const std::string& op,
                         const std::string& what) const;

  const ir::PrimFunc& func() const { return func_; }
  const char* display() const { return display_; }

  /// Emits a statement (the kernel's body, recursively).
  void emit_stmt(const ir::Stmt& s);
  /// Emits the statements of an if's branch or a while's body: the default
  /// is emit_stmt; a target may wrap them.
  virtual void emit_block(const ir::Stmt& s) { emit_stmt(s); }
  /// Called before each statement but a sequence is emitted (a target's
  /// barriers before what its expressions read).
  virtual void before_stmt(const ir::Stmt&) {}
  /// A target may emit a statement (not a sequence) its own way, before
  /// before_stmt: the CPU's thread loops (Note [Thread semantics] in
  /// tilejit/transform/thread_uniformity.h). Returns true when it did.
  virtual bool emit_own(const ir::Stmt&) { return false; }
  /// An if and a while: the defaults print them with emit_block around
  /// their branches and body.
  virtual void emit_if(const ir::IfStmt& op);
  virtual void emit_while(const ir::WhileStmt& op);

  /// The namespace of the target's tile library ("tilejit::cpu").
  virtual std::string lib() const = 0;
  /// Where the block's threads share the iterations of an element-by-element
  /// tile op: the C++ of the thread's index and of the block's thread count
  /// (nullptr: a block is one thread).
  virtual const char* thread_index() const { return nullptr; }
  virtual const char* thread_count() const { return nullptr; }
  /// Template arguments the target's gemm takes after the CPU's (", 128":
  /// the block's threads on the GPU).
  virtual std::string gemm_template_tail() const { return ""; }
  /// The target's further template arguments of the library's copy.
  virtual std::string copy_template_tail(const ir::CopyOp&) const { return ""; }
  /// The target's further template arguments of fill and reduce (", 64":
  /// the threads that make them), and further call arguments of copy, fill,
  /// reduce and gemm (", rank": the thread's index among them).
  virtual std::string group_template_tail() const { return ""; }
  virtual std::string group_args() const { return ""; }

  /// The C++ of a math function applied to arguments already in compute
  /// type `ct`: "exp", "exp2", "log", "log2", "sqrt", "tanh", "abs",
  /// "floor", "ceil", "sin", "cos", "pow", "min", "max".
  virtual std::string math(const char* fn, const char* ct,
                           const std::vector<std::string>& args) const = 0;
  /// The C++ of a warp shuffle (Note [Warp shuffles] in
  /// tilejit/transform/hoist_shuffles.h), `args` the C++ of its value (in
  /// its compute type), lane or delta, width and mask.
  virtual std::string shuffle(const ir::CallNode& call, const std::vector<std::string>& args) = 0;

 protected:
  /// Note [Line directives]: each statement's lines are preceded by a #line
  /// naming the author's file:line (CUDA: NVRTC's and ptxas's messages, and
  /// -lineinfo's tools, name the user's line).
  void use_line_directives() { line_directives_ = true; }
  virtual void emit_alloc(const ir::AllocStmt& op) = 0;
  virtual void emit_for(const ir::ForStmt& op) = 0;
  virtual void emit_store(const ir::StoreStmt& op) = 0;
  /// T.copy, T.gemm, T.fill, T.reduce_*, T.atomic_add, T.print.
  virtual void emit_tile_op(const ir::Stmt& s) = 0;
  /// T.sync_threads() (ir::SyncStmt); inside a T.Parallel nest it is an
  /// error at its line (sync_in_parallel).
  virtual void emit_sync(const ir::Stmt& s) = 0;
  [[noreturn]] void sync_in_parallel(const ir::Stmt& s);
  /// The C++ of the end of a loop from `lo` over `extent` (a literal, or a
  /// fresh const int64_t declared here).
  std::string loop_end(const std::string& v, const ir::ForStmt& op, const std::string& lo);

  /// An access a target serves from a register array while it emits a
  /// loop's body (CUDA: Note [Vectorised runs]): element() of the buffer
  /// whose C++ name is `access` at `indices` prints `array[lane]`.
  struct RunElement {
    std::string access;
    std::vector<ir::Expr> indices;
    std::string array, lane;
  };
  std::vector<RunElement> run_elements_;

 private:
  /// `index` (C++) of dimension `dim` of tile `b` through the target's
  /// checked_index (Note [Debug bounds]).
  std::string checked_index(const BufferAccess& b, size_t dim, const std::string& index);

  const ir::PrimFunc& func_;
  std::ostream& os_;
  const char* display_;
  int depth_ = 0;
  int base_levels_ = 0;
  int64_t lines_ = 0;
  // Note [Line directives]: on for CUDA; the last (file, line) emitted.
  bool line_directives_ = false;
  std::string directive_file_;
  int directive_line_ = 0;
  bool directive_used_ = false;  // a line was emitted under the last #line
  std::map<uint64_t, std::string> vars_;          // IR var id -> C++ name
  std::map<uint64_t, BufferAccess> buffers_;      // buffer id -> access
  std::map<std::string, int> used_names_;         // C++ names taken -> next suffix
};

// ---------------------------------------------------------------------------
// Tile-op regions (Note [Region operands] in buffer.h).

/// `r` as a full slice: a whole buffer spans its shape; a start corner
/// takes `other`'s extents, aligned to its last dimensions (the others of
/// extent 1), as TileLang reads T.copy(A[bx, k * 64], A_s).
ir::Region resolve(TileCodegen& cg, const ir::Region& r, const std::vector<ir::Expr>* other,
                   const ir::Span& span, const std::string& op);
std::vector<ir::Expr> extents_of(const ir::Region& r);
/// Both operands of a copy-like op resolved: a corner takes the other's extents.
std::pair<ir::Region, ir::Region> resolve_pair(TileCodegen& cg, const ir::Region& a,
                                               const ir::Region& b, const ir::Span& span,
                                               const std::string& op);

// ---------------------------------------------------------------------------
// Tile ops as calls of the target's tile library (lower_tile_ops.cpp), whose
// functions have the same names and meaning on every target.
void lower_copy(TileCodegen& cg, const ir::CopyOp& op);
void lower_gemm(TileCodegen& cg, const ir::GemmOp& op);
void lower_fill(TileCodegen& cg, const ir::FillOp& op);
void lower_reduce(TileCodegen& cg, const ir::ReduceOp& op);
void lower_atomic_add(TileCodegen& cg, const ir::AtomicAddOp& op);
void lower_print(TileCodegen& cg, const ir::PrintOp& op);
/// The library's Rect (copy.h) of one side of a copy whose iteration shape
/// is at most 2-D with contiguous rows: `source` the (const) source, else
/// the destination. Given `column`, a 1-D side that is strided is taken too,
/// as the Rect's column 0 (its rows the vector), and *column says which.
std::string copy_side_rect(TileCodegen& cg, const ir::CopyOp& op, bool source,
                           bool* column = nullptr);

}  // namespace tilejit::backend
