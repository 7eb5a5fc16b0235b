// TileBuilder: builds a PrimFunc with a tile-IR body, one call per construct.
// The C++ face is this class; the Python front end drives the same object
// through nanobind (python/src/ir_builder.cpp).
//
//   TileBuilder b("add");
//   Expr n = symbolic("n");
//   Buffer A = b.tensor_param("A", {n}, DataType::float32());
//   Buffer C = b.tensor_param("C", {n}, DataType::float32());
//   auto bx = b.begin_kernel({ceildiv(n, 256)}, {128})[0];
//   Buffer A_s = b.alloc("A_s", {256}, DataType::float32(), Scope::kShared);
//   b.copy(corner(A, {bx * 256}), whole(A_s));
//   Expr i = b.begin_for("i", 0, 256, ForKind::kParallel);
//   b.store(A_s, {i}, load(A_s, {i}) * 2.0);
//   b.end_for();
//   b.copy(whole(A_s), corner(C, {bx * 256}));
//   b.end_kernel();
//   PrimFunc f = b.finish();
//
// Note [Builder frames]
// begin_kernel / begin_for / begin_if / begin_else / begin_while open a frame
// that collects the statements recorded until the matching end_*; the frame
// becomes one statement of its parent. Allocations and lets are statements of
// the frame they are made in (Note [Declarations in a sequence], stmt.h).
// Parameters come first, before any kernel; everything else lies inside a
// kernel, except alloc_global, which may come anywhere.
//
// Note [Diagnostics]
// Every error of the builder (and of the verifier) is an Error whose message
// begins with where and what: "<file>:<line>:<col>: <op>: <what>", naming the
// buffer(s), e.g. "k.py:12:8: T.copy: source A_s[0:128, 0:64] and destination
// C[...] differ in shape ([128, 64] vs [64, 64])". With an empty span the
// prefix is "<func_name>: <op>: ". Mistakes in the program's structure are
// ValueErrors, wrong dtypes TypeErrors.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tilejit/core/data_type.h"
#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/span.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::ir {

class TileBuilder {
 public:
  explicit TileBuilder(std::string func_name);
  ~TileBuilder();
  TileBuilder(TileBuilder&&) noexcept;
  TileBuilder& operator=(TileBuilder&&) noexcept;

  const std::string& func_name() const noexcept;

  // --- signature (checked as PrimFuncBuilder checks it, at finish())
  /// A tensor parameter: a kGlobal buffer whose `param` is its index.
  Buffer tensor_param(std::string name, std::vector<Expr> shape, DataType dtype, Span span = {});
  /// A scalar parameter: a symbol (Note [Variables]) of its name and dtype.
  Expr scalar_param(std::string name, DataType dtype, Span span = {});

  // --- kernels
  /// T.Kernel(*grid, threads=...): opens a kernel frame (1-3 grid extents,
  /// 1-3 thread extents, each > 0); returns its block index vars (bx, by, bz).
  std::vector<Expr> begin_kernel(std::vector<Expr> grid, std::vector<int> threads, Span span = {});
  void end_kernel(Span span = {});
  /// T.get_thread_binding(dim): the thread index var of dimension `dim` of the
  /// open kernel.
  Expr thread_binding(int dim = 0, Span span = {});
  /// T.use_swizzle(panel_size, order, enable): the open kernel's blocks take
  /// their (bx, by) in TileLang's rasterisation order (KernelStmt::raster),
  /// wherever in the kernel it is called; panel_size > 0, once per kernel;
  /// `enable` false records nothing.
  void use_swizzle(int panel_size, RasterOrder order = RasterOrder::kRow, bool enable = true,
                   Span span = {});

  // --- buffers
  /// T.alloc_shared / alloc_fragment / alloc_local (kShared, kFragment,
  /// kLocal) inside a kernel; static shapes only (ints).
  Buffer alloc(std::string name, std::vector<Expr> shape, DataType dtype, Scope scope,
               Span span = {});
  /// T.alloc_global: a workspace the signature does not show; its shape may use
  /// the signature's symbols.
  Buffer alloc_global(std::string name, std::vector<Expr> shape, DataType dtype,
                      WorkspaceInit init = WorkspaceInit::kEmpty, Span span = {});

  // --- control flow
  /// for <var> in [min, min + extent): returns the loop var (int32 unless min
  /// or extent is int64). `stages` > 0 only for kPipelined.
  Expr begin_for(std::string var_name, Expr min, Expr extent, ForKind kind = ForKind::kSerial,
                 int stages = 0, Span span = {});
  void end_for(Span span = {});
  /// T.Pipelined(order=, stage=, group=) of the innermost open loop, a
  /// kPipelined one; checked against its body at end_for (ValueError at
  /// `span`). An empty `group` is one group per statement.
  void set_pipeline_schedule(std::vector<int> order, std::vector<int> stage,
                             std::vector<std::vector<int>> group, Span span = {});
  /// Marks the innermost open loop as the front end's form of the tile op
  /// `op`, for `reason` (ir::LoopOrigin).
  void set_loop_origin(std::string op, std::string reason, Span span = {});
  void begin_if(Expr cond, Span span = {});
  void begin_else(Span span = {});
  void end_if(Span span = {});
  void begin_while(Expr cond, Span span = {});
  void end_while(Span span = {});
  void break_loop(Span span = {});
  void continue_loop(Span span = {});
  /// T.sync_threads(): a barrier of the block's threads (SyncStmt).
  void sync_threads(Span span = {});

  // --- scalar statements
  void store(Buffer buffer, std::vector<Expr> indices, Expr value, Span span = {});
  /// A scalar temporary bound to `value`: a new IR var of value's dtype.
  Expr let(std::string name, Expr value, Span span = {});
  void evaluate(Expr value, Span span = {});

  // --- tile ops (operand forms: Note [Region operands], buffer.h)
  void copy(Region src, Region dst, Span span = {}, bool disable_tma = false);
  void gemm(Region a, Region b, Region c, bool trans_a = false, bool trans_b = false,
            bool clear_accum = false, int policy = 0, Span span = {});
  /// T.fill / T.clear (value 0).
  void fill(Region dst, Expr value, Span span = {});
  void reduce(ReduceKind kind, Region src, Region dst, int dim, bool clear = true, Span span = {});
  /// T.atomic_add(dst, value): a scalar value.
  void atomic_add(Region dst, Expr value, Span span = {});
  /// T.atomic_add(dst, src): a region.
  void atomic_add(Region dst, Region src, Span span = {});
  /// T.print of a scalar value.
  void print(Expr value, std::string message = {}, Span span = {});
  /// T.print of a buffer region.
  void print(Region region, std::string message = {}, Span span = {});

  /// Marks the function as written in another machine's dialect
  /// (TileBody::dialect), which the CPU target alone emulates.
  void set_dialect(std::string dialect);

  /// Closes the function: every frame closed, at least one kernel, the
  /// signature valid (validate()). Returns the PrimFunc with a TileBody, not
  /// yet verified: transform::verify (a later layer) checks and normalises
  /// it, and jit() runs it; the Python face runs it inside finish(). The
  /// builder is empty afterwards.
  PrimFunc finish(Span span = {});

  struct State;

 private:
  std::unique_ptr<State> state_;
};

/// The prefix of a diagnostic (Note [Diagnostics]): "<span>: <op>: " or,
/// with an empty span, "<func_name>: <op>: ".
std::string diagnostic_prefix(const Span& span, const std::string& func_name,
                              const std::string& op);

}  // namespace tilejit::ir
