// The prefetches of pipelined loops that Hopper's TMA performs.
//
// Note [TMA copies]
// On sm_90a, a prefetched copy (Note [Software pipelining]) into a
// swizzled tile (Note [Warpgroup gemms]) is issued by one thread as
// cp.async.bulk.tensor, one instruction per panel of the tile, instead of
// every thread's 16-byte cp.async, when
//  - the source is a tensor parameter the kernel never writes, of the
//    tile's dtype, of at most 5 dimensions, each a constant or a symbol;
//  - each of its pitches (the bytes of the dimensions inside) is a multiple
//    of 16 bytes whatever the symbols are: the product of its constant
//    factors is (a K x N tile of B[K, N] with N symbolic is not; one of
//    K[batch, seq, 32, 128] is);
//  - the source region is the tile: its innermost extent is the tile's
//    columns, one other extent its rows (at most 256), every other 1, all
//    constant;
//  - each panel of the tile starts 1024-aligned (rows * panel bytes a
//    multiple of 1024), so that TMA's swizzle, computed from the shared
//    address, is the tile's;
//  - the copy does not say T.copy(..., disable_tma=True).
// TMA fills what lies outside the tensor with zeros, which is T.copy's
// meaning, so a tile at the tensor's edge takes the same path.
//
// Each TMA copy of the loop gets an mbarrier per stage (shared memory,
// initialised by thread 0 before the loop). The prefetch of iteration j
// into stage s is `if (tid == 0) { expect_tx(bar[s], the tile's bytes);
// tma_load per panel }`; in iteration k every thread waits on
// bar[(k - lo) % S] for the parity ((k - lo) / S) & 1 right before the
// first statement of the body that reads the tile, so that flash
// attention's Q K^T runs while V lands. The barrier that starts each
// iteration still orders the reads of the stage that iteration k's
// prefetch overwrites, as with cp.async. The lowering report gives such a
// copy the path "tma_load", and a prefetched swizzled copy left on cp.async the
// reason why.
//
// Note [TMA stores]
// On sm_90a, a T.copy from a shared tile to a tensor parameter (an
// epilogue's C_shared -> C, flash attention's O_shared -> Output) is one
// cp.async.bulk.tensor store by thread 0 instead of every thread's vector
// stores, when the tile is 2-D, row-major (its rows a multiple of 16 bytes
// and at most 256 elements) or swizzled by Note [Swizzled store tiles] (one
// box per panel, then one wait), not padded, not a pipeline's stage, of the
// tensor's dtype, at most 256 rows; the
// region is the tile (as for loads); the tensor's pitches are multiples of
// 16 bytes; the kernel never reads the tensor; and the copy is the block's
// (not inside T.Parallel or a thread's own code). TMA writes nothing outside
// the tensor, which is T.copy's meaning at an edge. The threads' writes of
// the tile reach the async proxy through the barrier before the copy, which
// fences (fence.proxy.async) as it does for wgmma's operands; thread 0 then
// issues the store and waits until TMA has read the tile
// (cp.async.bulk.wait_group.read) before it goes on, so the next barrier
// also orders any later write of the tile after the read. The lowering
// report gives the copy the path "tma_store", or says why not.
//
// Note [Tensor maps]
// A TMA copy reads the tensor through a CUtensorMap: the unit's kernels
// share one per (tensor, box, swizzle), each a 64-byte aligned member of
// the __grid_constant__ argument block (tilejit::Args::tmaps), described
// by a kTensorMap argument of the KernelAbi (the tensor's parameter, its
// dims as constants or symbol slots, the box and the swizzle). The CUDA
// module encodes them at each launch (tensor_maps.h) with
// cuTensorMapEncodeTiled: the tensor's address and symbolic extents are the
// call's. A tensor whose address is not a multiple of 16 bytes (a view at
// an odd offset) fails the call with an error naming the argument. (Running
// such a call on cp.async instead would need both paths in the kernel and
// a flag in the block; a pitch that only some symbols' values make a
// multiple of 16 would need the same, so today it keeps cp.async: the
// planner refuses it.)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backend/cuda/fragments.h"
#include "backend/cuda/pipeline.h"
#include "tilejit/ir/prim_func.h"
#include "tilejit/runtime/kernel_abi.h"
#include "tilejit/transform/thread_uniformity.h"

namespace tilejit::cuda {

/// The unit's tensor maps, in tilejit::Args::tmaps order.
struct TensorMaps {
  std::vector<runtime::AbiArg> args;  ///< kind kTensorMap; offset and size unset
  /// The TmaCopy plans that read each map.
  std::vector<int> users;
  /// The index of `a` in args, added when new; one more user.
  int add(const runtime::AbiArg& a);
  /// `map`, which one user had, for `a` instead: changed in place when that
  /// user was its only one (no map is encoded at a call for nothing), else
  /// add(a).
  int replace(int map, const runtime::AbiArg& a);
};

struct TmaCopy {
  int map = -1;            ///< index into TensorMaps::args
  int panels = 1;          ///< instructions: one per panel of the tile
  int64_t panel_cols = 0;  ///< the tile's columns per panel
  int64_t rows = 0, cols = 0;
  int64_t bytes = 0;  ///< the tile's bytes, which the stage's barrier waits for
  /// The box dimension (innermost first) and the coordinate of the tile's
  /// rows.
  int rows_box = 1;
};

struct TmaPlan {
  std::map<const ir::CopyOp*, TmaCopy> copies;
  /// Note [TMA stores]: shared tiles stored to tensors by TMA.
  std::map<const ir::CopyOp*, TmaCopy> stores;
  /// Prefetched copies into swizzled tiles left on cp.async, and copies
  /// from shared tiles to tensors left on the threads' stores, and why.
  std::map<const ir::CopyOp*, std::string> refused;
};

/// Note [TMA copies] for the pipelined loops of `kernel` and Note [TMA
/// stores] for its copies to tensors; `enabled`: the target is sm_90a and
/// TMA is not turned off. Adds the maps to `maps`.
TmaPlan plan_tma(const ir::KernelStmt& kernel,
                 const std::vector<std::string>& symbols, const PipelinePlan& pipelines,
                 const transform::ThreadUniformity& uniformity,
                 bool enabled, TensorMaps* maps);

}  // namespace tilejit::cuda
