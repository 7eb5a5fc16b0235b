// CallPlan: everything a call needs, decided once at jit time.
//
// Note [Call plan]
// The plan turns a PrimFunc plus legalised indices into flat data the call
// path walks without allocating:
//  - inputs: the parameters that are neither outputs nor workspaces, in
//    signature order, each with its dtype, rank and static extents;
//  - bindings: for each symbol, where its value comes from: a scalar input,
//    or an input dimension that is the symbol itself or an affine form of it
//    (2 * s + 1: solved as (dim - 1) / 2, divisibility checked). Scalars win,
//    then plain dimensions, then affine ones, each in signature order;
//  - one ShapeProgram computing, in this order: the expected value of every
//    input dimension that is neither static nor a binding source (checks),
//    every output dimension, every workspace dimension, then per launch
//    (a source body has one, a tile body one per T.Kernel, run in order)
//    the three grid extents and the dynamic shared memory bytes.
// A symbol needed by an output, a workspace, the grid or an input check that
// no binding provides is an error at jit time, not at the call.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tilejit/core/data_type.h"
#include "tilejit/core/tensor.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/shape_program.h"
#include "tilejit/jit/jit_options.h"
#include "tilejit/runtime/backend.h"

namespace tilejit {

enum class ParamRole : uint8_t { kInput, kOutput, kWorkspace };

struct InputSpec {
  int param = 0;  // index in the signature
  bool scalar = false;
  DataType dtype;
  int rank = 0;
  /// Static extent per dimension, or -1 when the extent is symbolic.
  std::array<int64_t, kMaxRank> static_dims{};
};

struct SymbolBinding {
  int symbol = 0;  // slot
  int input = 0;   // input position
  int dim = -1;    // -1: the input is a scalar
  int64_t coeff = 1;
  int64_t offset = 0;
};

/// An input dimension whose extent must equal a computed value.
struct DimCheck {
  int input = 0;
  int dim = 0;
  int result = 0;  // index into the program's results
};

/// An output or workspace buffer.
struct BufferSpec {
  int param = 0;
  DataType dtype;
  int rank = 0;
  int first_result = 0;  // its dims are results [first_result, first_result + rank)
  WorkspaceInit init = WorkspaceInit::kEmpty;
};

/// One launch of the kernel (a source body has one; a tile body one per
/// T.Kernel, run in order): where the shape program's results hold its grid
/// and dynamic shared memory, and the expressions they are, for errors.
struct LaunchSpec {
  runtime::LaunchResults results;
  ir::Expr grid[3];
  ir::Expr smem;
};

struct CallPlan {
  std::string kernel_name;
  std::vector<ParamRole> roles;  // per parameter
  std::vector<std::string> symbols;
  std::vector<InputSpec> inputs;
  std::vector<SymbolBinding> bindings;
  std::vector<DimCheck> checks;
  std::vector<BufferSpec> outputs;     // in out_idx order
  std::vector<BufferSpec> workspaces;  // in workspace_idx order
  ir::ShapeProgram program;
  /// The outputs' then the workspaces' dimensions are the results
  /// [first_buffer_result, first_launch_result); each launch's four follow.
  int first_buffer_result = 0;
  int first_launch_result = 0;
  std::vector<LaunchSpec> launches;
  /// The results of the grid extents that are not constants above 0: the
  /// call checks that each is positive (most grids are (ceildiv(n, b), 1,
  /// 1): one check).
  std::vector<int> grid_checks;
  /// When every output and workspace extent is below this power of two,
  /// every output's size in bytes fits in int64 (its rank and dtype bound
  /// it), and the call skips the exact check: one compare of the OR of the
  /// extents, which a negative extent fails too.
  uint64_t small_extents = 0;
  bool has_zero_once = false;
  /// Unique per plan in this process; seeds the zero_once layout tag.
  uint64_t id = 0;
};

/// Builds the plan. Throws ValueError naming the symbol and the parameter
/// that needs it when a symbol cannot be bound, and for workspace_init names
/// that are not workspaces.
CallPlan build_call_plan(const ir::PrimFunc& func, const LegalizedIndices& indices,
                         const JitOptions& options);

/// Limits of one call, checked at plan time.
inline constexpr int kMaxParams = 64;
inline constexpr int kMaxSymbols = 64;
inline constexpr int kMaxResults = 1024;

}  // namespace tilejit
