// JitOptions and the legalisation of out_idx / workspace_idx.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "tilejit/ir/prim_func.h"
#include "tilejit/ir/workspace_init.h"
#include "tilejit/runtime/backend.h"

namespace tilejit {

/// "empty", "zero", "zero_once".
const char* workspace_init_name(WorkspaceInit init);
/// Parses the names above; ValueError otherwise.
WorkspaceInit parse_workspace_init(const std::string& name);
/// The same for the entry `workspace_init[workspace] = name` of `kernel`'s
/// options, whose error names both ("k: workspace_init['W'] = 'zeros' ...").
WorkspaceInit parse_workspace_init(const std::string& name, const std::string& kernel,
                                   const std::string& workspace);

/// An index list as the seed API takes it: absent, one int, or a list. Copied
/// on construction: legalisation never touches the caller's list.
class IndexSpec {
 public:
  IndexSpec() = default;
  IndexSpec(int index) : given_(true), values_{index} {}  // NOLINT: `out_idx = 3`
  IndexSpec(int64_t index) : given_(true), values_{index} {}  // NOLINT
  IndexSpec(std::initializer_list<int64_t> values) : given_(true), values_(values) {}
  IndexSpec(std::vector<int64_t> values) : given_(true), values_(std::move(values)) {}  // NOLINT

  bool given() const noexcept { return given_; }
  const std::vector<int64_t>& values() const noexcept { return values_; }

 private:
  bool given_ = false;
  std::vector<int64_t> values_;
};

struct JitOptions {
  /// Parameters returned as outputs, in return order. Negative indices count
  /// from the end of the signature.
  IndexSpec out_idx;
  /// Parameters allocated as scratch and never returned.
  IndexSpec workspace_idx;
  /// Init policy per workspace parameter name; unnamed workspaces are kEmpty.
  std::map<std::string, WorkspaceInit> workspace_init;
  /// "cpu", "cuda", or "auto": the available backend that ranks the
  /// PrimFunc highest (runtime::auto_backend(); cuda before cpu, each when
  /// the PrimFunc has a body for it).
  std::string target = "auto";
  runtime::CompileOptions compile;
  /// Read and write the disk cache of binaries.
  bool disk_cache = true;
  /// Check every index of a scalar load or store of a shared, fragment or
  /// local buffer when the kernel runs: an index outside its dimension is an
  /// error naming the kernel, the buffer, the dimension and the index (a
  /// RuntimeError on the CPU, a trap on CUDA; Note [Debug bounds] in
  /// src/backend/common/tile_codegen.h). Also on when the environment sets
  /// TILEJIT_DEBUG_BOUNDS to anything but "" or "0". A tile body only.
  bool debug_bounds = false;
  /// Hopper's TMA for the tile loads of pipelined loops where it applies
  /// (Note [TMA copies] in src/backend/cuda/tma_copies.h); false keeps them
  /// on cp.async (TileLang's tl.disable_tma_lower).
  bool tma = true;
  /// A producer warpgroup for the TMA loads of a pipelined loop where it
  /// applies (Note [Warp specialisation] in
  /// src/backend/cuda/warp_specialize.h); false keeps the loads in the
  /// kernel's own threads (TileLang's tl.disable_warp_specialized).
  bool warp_specialize = true;
  /// Pairs of blocks that load the tiles they share once, through TMA
  /// multicast, where a warp-specialised kernel has such tiles (Note
  /// [Cluster multicast] in src/backend/cuda/cluster_multicast.h); false
  /// launches every block alone (tilejit's tl.disable_cluster_multicast).
  bool cluster_multicast = true;
  /// CUDA on sm_90a: a warp-specialised GEMM main loop whose K step covers
  /// under 128 bytes loads several per stage (Note [Coarser K steps] in
  /// src/backend/cuda/coarse_k_steps.h); false keeps the program's step
  /// (tilejit's tl.disable_coarse_k_steps).
  bool coarse_k_steps = true;
  /// CUDA on sm_90a: a warp-specialised GEMM's store of its accumulator
  /// goes through a shared tile and TMA (Note [Staged epilogues] in
  /// src/backend/cuda/staged_epilogue.h); false stores it from the
  /// registers as written (tilejit's tl.disable_staged_epilogue).
  bool staged_epilogue = true;
};

/// Parameter indices by role, legalised.
struct LegalizedIndices {
  std::vector<int> outputs;     // in out_idx order
  std::vector<int> workspaces;  // in workspace_idx order
};

/// Legalises out_idx and workspace_idx against `func`'s signature as
/// DESIGN.md says: negatives count from the end; out of range, duplicates,
/// overlap, and a scalar named as output or workspace are ValueErrors naming
/// the index and the parameter.
LegalizedIndices legalize_indices(const ir::PrimFunc& func, const IndexSpec& out_idx,
                                  const IndexSpec& workspace_idx);

}  // namespace tilejit
