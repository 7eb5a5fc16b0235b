// PrimFunc: a kernel's declared signature, launch configuration and body.
//
// A PrimFunc is plain data: parameters in signature order (tensors with
// symbolic shapes, or scalars), the launch grid as expressions, and a body:
// either source text per target ("cpu", "cuda"; phase 1's T.source) or a
// TileBody, tile IR holding one or more KernelStmt. Which parameters are
// outputs or workspaces is not part of it: jit() options say that, as in the
// seed API.
#pragma once

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "tilejit/core/data_type.h"
#include "tilejit/ir/buffer.h"
#include "tilejit/ir/expr.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::ir {

struct TensorType {
  std::vector<Expr> shape;
  DataType dtype;
};

struct Param {
  std::string name;
  bool is_scalar = false;
  TensorType tensor;  // when !is_scalar
  DataType scalar;    // when is_scalar: int32, int64 or float32
};

struct LaunchConfig {
  /// One to three extents (x, y, z); the number of blocks is their product.
  std::vector<Expr> grid{Expr(1)};
  /// Threads per block (CUDA); the CPU backend runs a block on one thread.
  int threads = 1;
  /// Dynamic shared memory per block in bytes (CUDA).
  Expr dynamic_smem_bytes{0};
};

/// Body source text per target name.
using SourceBodies = std::map<std::string, std::string>;

/// A body in tile IR. Invariants (TileBuilder::finish and verify() establish
/// them): `stmt` is a KernelStmt or a SeqStmt of KernelStmts, run in order on
/// one stream; `params` has one entry per signature parameter, the kGlobal
/// Buffer of a tensor parameter (param = its index) or, for a scalar, an
/// undefined Buffer; `scalars` likewise holds the Var of each scalar parameter
/// (undefined for tensors); `globals` lists the T.alloc_global buffers in
/// creation order. After transform::plan_workspaces, global_params[i] is the
/// index of the (trailing, hidden) parameter that globals[i] became, and
/// params holds globals[i] at that index; empty before.
struct TileBody {
  Stmt stmt;
  std::vector<Buffer> params;
  std::vector<Expr> scalars;
  std::vector<Buffer> globals;
  std::vector<int> global_params;
  /// Empty for TileLang's tile language. "ascend" for a TileLang-Ascend
  /// program (T.Kernel(n, is_npu=True), python/tilejit/language/ascend.py):
  /// the CPU target emulates its cores, and no other target runs it.
  std::string dialect;

  /// The KernelStmts of `stmt`, in launch order.
  std::vector<const KernelStmt*> kernels() const;
};

struct PrimFunc {
  std::string name;
  std::vector<Param> params;
  /// For a tile body: the first kernel's grid and threads (product of its
  /// thread extents); every kernel's own launch is in its KernelStmt.
  LaunchConfig launch;
  std::variant<SourceBodies, TileBody> body;

  bool is_tile() const noexcept { return std::holds_alternative<TileBody>(body); }
  /// The source bodies; an empty map for a tile body.
  const SourceBodies& sources() const noexcept;
  /// The source bodies, making the body a SourceBodies if it is not one.
  SourceBodies& mutable_sources();
  /// The tile body, or nullptr.
  const TileBody* tile() const noexcept { return std::get_if<TileBody>(&body); }

  /// The index of the parameter called `name`, or -1.
  int param_index(const std::string& name) const;
};

/// Builds a PrimFunc and validates it (names, dtypes, grid rank, scalar
/// dtypes) when build() is called; every error is a ValueError or TypeError
/// that names the function and the parameter.
///
///   auto f = tilejit::prim_func("splitk")
///                .tensor("A", {M, K}, DataType::float32())
///                .tensor("C", {M, N}, DataType::float32())
///                .scalar("alpha", DataType::float32())
///                .grid({ceildiv(M, 64), split_k})
///                .body("cpu", "...")
///                .build();
///
/// Tile bodies come from TileBuilder (tile_builder.h).
class PrimFuncBuilder {
 public:
  explicit PrimFuncBuilder(std::string name);

  PrimFuncBuilder& tensor(std::string name, std::vector<Expr> shape, DataType dtype);
  PrimFuncBuilder& scalar(std::string name, DataType dtype);
  PrimFuncBuilder& grid(std::vector<Expr> extents);
  PrimFuncBuilder& threads(int threads);
  PrimFuncBuilder& dynamic_smem(Expr bytes);
  PrimFuncBuilder& body(std::string target, std::string source);

  PrimFunc build() const;

 private:
  PrimFunc func_;
};

inline PrimFuncBuilder prim_func(std::string name) { return PrimFuncBuilder(std::move(name)); }

/// Checks a PrimFunc made by hand as build() does.
void validate(const PrimFunc& func);

}  // namespace tilejit::ir
