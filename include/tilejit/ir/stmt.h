// Statements of the tile IR, tile ops included.
//
// A Stmt is a cheap handle on an immutable node, like Expr. Every node has a
// kind and the Span of the author's line it came from.
//
// Note [Declarations in a sequence]
// AllocStmt and LetStmt have no body: each declares its buffer or variable for
// the rest of the SeqStmt that holds it (and what nests there), the way the
// generated C++ declares a local. A KernelStmt's body is a SeqStmt whose first
// statements are usually its allocations.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/span.h"

namespace tilejit::ir {

enum class StmtKind : uint8_t {
  kKernel,
  kAlloc,
  kSeq,
  kFor,
  kIf,
  kWhile,
  kBreak,
  kContinue,
  kStore,
  kLet,
  kEvaluate,
  kSync,
  // tile ops
  kCopy,
  kGemm,
  kFill,
  kReduce,
  kAtomicAdd,
  kPrint,
};
/// "Kernel", "Copy", ...
const char* stmt_kind_name(StmtKind k);
constexpr bool is_tile_op(StmtKind k) { return k >= StmtKind::kCopy; }

struct StmtNode {
  StmtKind kind;
  Span span;

 protected:
  StmtNode(StmtKind k, Span s) : kind(k), span(std::move(s)) {}
};

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}

  bool defined() const noexcept { return node_ != nullptr; }
  StmtKind kind() const noexcept { return node_->kind; }
  const Span& span() const noexcept { return node_->span; }
  const StmtNode* get() const noexcept { return node_.get(); }

  template <typename T>
  const T* as() const noexcept {
    return (defined() && T::classof(kind())) ? static_cast<const T*>(get()) : nullptr;
  }

 private:
  std::shared_ptr<const StmtNode> node_;
};

#define TILEJIT_IR_STMT_CLASSOF(K) \
  static constexpr bool classof(StmtKind k) { return k == StmtKind::K; }

/// T.use_swizzle(panel_size, order): the order in which a kernel's blocks
/// take their (bx, by), for L2 reuse between blocks that run together.
/// panel_size 0 is the launch's own order. A target may ignore it (the CPU
/// does): it never changes what the kernel computes, only which block
/// computes what (device/cuda/tilejit/cuda/rasterize.h has the CUDA order).
enum class RasterOrder : uint8_t { kRow, kColumn };
/// "row", "col".
const char* raster_order_name(RasterOrder order);

struct Rasterization {
  int panel_size = 0;
  RasterOrder order = RasterOrder::kRow;
  bool enabled() const noexcept { return panel_size > 0; }
  bool operator==(const Rasterization&) const = default;
};

/// A launch: `grid` extents (1-3; x first), one block index Var per extent
/// (IR variables, int32: bx, by, bz), `threads` per block (1-3 extents) with
/// one thread index Var each (tx, ty, tz; what T.get_thread_binding returns),
/// and the blocks' rasterisation (T.use_swizzle; none by default).
/// A tile body runs its kernels in order on one stream.
struct KernelStmt : StmtNode {
  std::vector<Expr> grid;
  std::vector<Expr> block_vars;
  std::vector<int> threads;
  std::vector<Expr> thread_vars;
  Stmt body;
  Rasterization raster;
  KernelStmt(std::vector<Expr> g, std::vector<Expr> bv, std::vector<int> t,
             std::vector<Expr> tv, Stmt b, Span s, Rasterization r = {})
      : StmtNode(StmtKind::kKernel, std::move(s)), grid(std::move(g)), block_vars(std::move(bv)),
        threads(std::move(t)), thread_vars(std::move(tv)), body(std::move(b)), raster(r) {}
  TILEJIT_IR_STMT_CLASSOF(kKernel)
};

/// Declares a shared, fragment or local buffer (Note [Declarations in a
/// sequence]).
struct AllocStmt : StmtNode {
  Buffer buffer;
  AllocStmt(Buffer b, Span s) : StmtNode(StmtKind::kAlloc, std::move(s)), buffer(std::move(b)) {}
  TILEJIT_IR_STMT_CLASSOF(kAlloc)
};

struct SeqStmt : StmtNode {
  std::vector<Stmt> stmts;
  SeqStmt(std::vector<Stmt> ss, Span s)
      : StmtNode(StmtKind::kSeq, std::move(s)), stmts(std::move(ss)) {}
  TILEJIT_IR_STMT_CLASSOF(kSeq)
};

enum class ForKind : uint8_t { kSerial, kUnroll, kParallel, kVectorized, kPipelined };
/// "serial", "unroll", "parallel", "vectorized", "pipelined".
const char* for_kind_name(ForKind kind);

/// TileLang's T.Pipelined(order=, stage=, group=): the body's statements in
/// groups (consecutive, covering the body in program order), each run at a
/// place in the iteration (`order`) for the iteration `stage` steps behind
/// (`stage` 0: this one, 1: the one before; -1 with order -1: the group's
/// prefetched copies, which the pipeline issues). Empty: program order.
struct PipelineSchedule {
  std::vector<int> order, stage;
  std::vector<std::vector<int>> group;
  bool empty() const { return order.empty(); }
  bool operator==(const PipelineSchedule&) const = default;
};

/// The tile op a loop of the front end's stands for, and why it is a loop
/// (a T.copy through a remapped global, element by element: Note [Remapped
/// globals] in python/tilejit/language/remap.py); lowering reports list it
/// as that op's "elementwise" path. Empty for the author's own loops.
struct LoopOrigin {
  std::string op, reason;
  bool empty() const { return op.empty(); }
  bool operator==(const LoopOrigin&) const = default;
};

/// for var in [min, min + extent). T.Parallel(a, b) is two nested kParallel
/// loops. `stages` is the pipeline depth of a kPipelined loop (0 otherwise).
struct ForStmt : StmtNode {
  Expr var;
  Expr min, extent;
  ForKind for_kind;
  int stages;
  Stmt body;
  PipelineSchedule schedule;  ///< a kPipelined loop's; empty otherwise
  LoopOrigin origin;          ///< a front-end loop's tile op; empty otherwise
  ForStmt(Expr v, Expr mn, Expr ext, ForKind k, int st, Stmt b, Span s,
          PipelineSchedule sched = {}, LoopOrigin orig = {})
      : StmtNode(StmtKind::kFor, std::move(s)), var(std::move(v)), min(std::move(mn)),
        extent(std::move(ext)), for_kind(k), stages(st), body(std::move(b)),
        schedule(std::move(sched)), origin(std::move(orig)) {}
  TILEJIT_IR_STMT_CLASSOF(kFor)
};

/// `else_case` may be undefined.
struct IfStmt : StmtNode {
  Expr cond;
  Stmt then_case, else_case;
  IfStmt(Expr c, Stmt t, Stmt e, Span s)
      : StmtNode(StmtKind::kIf, std::move(s)), cond(std::move(c)), then_case(std::move(t)),
        else_case(std::move(e)) {}
  TILEJIT_IR_STMT_CLASSOF(kIf)
};

struct WhileStmt : StmtNode {
  Expr cond;
  Stmt body;
  WhileStmt(Expr c, Stmt b, Span s)
      : StmtNode(StmtKind::kWhile, std::move(s)), cond(std::move(c)), body(std::move(b)) {}
  TILEJIT_IR_STMT_CLASSOF(kWhile)
};

struct BreakStmt : StmtNode {
  explicit BreakStmt(Span s) : StmtNode(StmtKind::kBreak, std::move(s)) {}
  TILEJIT_IR_STMT_CLASSOF(kBreak)
};

struct ContinueStmt : StmtNode {
  explicit ContinueStmt(Span s) : StmtNode(StmtKind::kContinue, std::move(s)) {}
  TILEJIT_IR_STMT_CLASSOF(kContinue)
};

/// buffer[indices] = value.
struct StoreStmt : StmtNode {
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
  StoreStmt(Buffer b, std::vector<Expr> idx, Expr v, Span s)
      : StmtNode(StmtKind::kStore, std::move(s)), buffer(std::move(b)), indices(std::move(idx)),
        value(std::move(v)) {}
  TILEJIT_IR_STMT_CLASSOF(kStore)
};

/// Binds the IR variable `var` to `value` (Note [Declarations in a sequence]).
struct LetStmt : StmtNode {
  Expr var;
  Expr value;
  LetStmt(Expr v, Expr val, Span s)
      : StmtNode(StmtKind::kLet, std::move(s)), var(std::move(v)), value(std::move(val)) {}
  TILEJIT_IR_STMT_CLASSOF(kLet)
};

struct EvaluateStmt : StmtNode {
  Expr value;
  EvaluateStmt(Expr v, Span s) : StmtNode(StmtKind::kEvaluate, std::move(s)), value(std::move(v)) {}
  TILEJIT_IR_STMT_CLASSOF(kEvaluate)
};

/// T.sync_threads(): a barrier of the block's threads (of a thread range's,
/// under one): what every thread stored before it is seen by every thread
/// after it, in shared and in global memory. A block-collective statement
/// (Note [Thread semantics] in tilejit/transform/thread_uniformity.h).
struct SyncStmt : StmtNode {
  explicit SyncStmt(Span s) : StmtNode(StmtKind::kSync, std::move(s)) {}
  TILEJIT_IR_STMT_CLASSOF(kSync)
};

// ---------------------------------------------------------------------------
// Tile ops. Region operands as Note [Region operands] (buffer.h) says.

/// T.copy(src, dst): element-wise copy with dtype conversion; elements outside
/// a global tensor are neither read (they read as 0) nor written.
struct CopyOp : StmtNode {
  Region src, dst;
  /// T.copy(..., disable_tma=True): never a TMA copy (Note [TMA copies]).
  bool disable_tma = false;
  CopyOp(Region a, Region b, Span s, bool no_tma = false)
      : StmtNode(StmtKind::kCopy, std::move(s)), src(std::move(a)), dst(std::move(b)),
        disable_tma(no_tma) {}
  TILEJIT_IR_STMT_CLASSOF(kCopy)
};

/// T.gemm(A, B, C): C += op(A) * op(B) (C = ... when clear_accum).
struct GemmOp : StmtNode {
  Region a, b, c;
  bool trans_a, trans_b, clear_accum;
  int policy;
  GemmOp(Region x, Region y, Region z, bool ta, bool tb, bool clear, int pol, Span s)
      : StmtNode(StmtKind::kGemm, std::move(s)), a(std::move(x)), b(std::move(y)),
        c(std::move(z)), trans_a(ta), trans_b(tb), clear_accum(clear), policy(pol) {}
  TILEJIT_IR_STMT_CLASSOF(kGemm)
};

/// T.fill(dst, value) and T.clear(dst) (value 0).
struct FillOp : StmtNode {
  Region dst;
  Expr value;
  FillOp(Region d, Expr v, Span s)
      : StmtNode(StmtKind::kFill, std::move(s)), dst(std::move(d)), value(std::move(v)) {}
  TILEJIT_IR_STMT_CLASSOF(kFill)
};

enum class ReduceKind : uint8_t { kSum, kMax, kMin, kAbsSum, kAbsMax };
/// "sum", "max", "min", "abssum", "absmax".
const char* reduce_kind_name(ReduceKind kind);

/// T.reduce_<kind>(src, dst, dim, clear): dst is src with dimension `dim`
/// reduced away. clear=false combines with dst's previous contents.
struct ReduceOp : StmtNode {
  ReduceKind reduce_kind;
  Region src, dst;
  int dim;
  bool clear;
  ReduceOp(ReduceKind k, Region a, Region b, int d, bool c, Span s)
      : StmtNode(StmtKind::kReduce, std::move(s)), reduce_kind(k), src(std::move(a)),
        dst(std::move(b)), dim(d), clear(c) {}
  TILEJIT_IR_STMT_CLASSOF(kReduce)
};

/// T.atomic_add(dst, src): a region added element-wise (`src` defined), or a
/// scalar value added at dst's corner (`value` defined; dst is then a corner
/// or a one-element slice).
struct AtomicAddOp : StmtNode {
  Region dst;
  Region src;  // src.buffer undefined when `value` is given
  Expr value;
  AtomicAddOp(Region d, Region sr, Expr v, Span s)
      : StmtNode(StmtKind::kAtomicAdd, std::move(s)), dst(std::move(d)), src(std::move(sr)),
        value(std::move(v)) {}
  TILEJIT_IR_STMT_CLASSOF(kAtomicAdd)
};

/// T.print: a scalar value (`value`), or a buffer region (`region.buffer`
/// defined), with an optional message.
struct PrintOp : StmtNode {
  Expr value;
  Region region;
  std::string message;
  PrintOp(Expr v, Region r, std::string m, Span s)
      : StmtNode(StmtKind::kPrint, std::move(s)), value(std::move(v)), region(std::move(r)),
        message(std::move(m)) {}
  TILEJIT_IR_STMT_CLASSOF(kPrint)
};

#undef TILEJIT_IR_STMT_CLASSOF

// ---------------------------------------------------------------------------
// Construction (plain; the builder and the verifier do the checking).

template <typename T, typename... Args>
Stmt make_stmt(Args&&... args) {
  return Stmt(std::make_shared<const T>(std::forward<Args>(args)...));
}

/// A SeqStmt of `stmts`; a single statement is returned as it is.
Stmt seq(std::vector<Stmt> stmts, Span span = {});

}  // namespace tilejit::ir
