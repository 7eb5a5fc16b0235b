// Pairs of blocks that load the tiles they share once (Hopper's thread
// block clusters and TMA multicast).
//
// Note [Cluster multicast]
// A GEMM block of 128 x 128 x 32 tiles reads 16 KiB from L2 per iteration
// for 1 MFLOP of mma: at the tensor cores' rate that is more than L2 gives
// the multiprocessors, and the kernel waits for its loads. Two blocks that
// differ only in one grid index often load the same tile (bx and bx + 1
// both read A's rows by * 128): launched as a cluster of two, each loads
// half of that tile's rows and TMA writes the half into both blocks'
// shared memory (cp.async.bulk.tensor ... .multicast::cluster), so L2
// serves the tile once. As CUTLASS's kernels do:
//
//   the kernel is __cluster_dims__(2, 1, 1) (or (1, 2, 1)): blocks 2i and
//   2i + 1 of that grid dimension are a cluster, rank = %cluster_ctarank;
//   the barriers' initialisation is made visible to the cluster
//   (barrier.cluster) instead of the block (__syncthreads);
//   the producer of each block loads, for a shared copy, the rows
//   [rank * R/2, (rank + 1) * R/2) of the tile (a tensor map whose box has
//   R/2 rows, in place of the whole tile's) into both blocks, counted on
//   the stage's "landed" barrier at the same offset in each; that barrier
//   still waits for the whole tile's bytes, half of them from the other
//   block's producer;
//   a stage of such a group is free once both blocks' consumers have
//   handed it back: each consumer warp, once all its lanes have read it
//   (__syncwarp), arrives with one lane on the "free" barrier of its own
//   block and of the other (mapa, mbarrier.arrive.shared::cluster, a
//   release at the block's scope as CUTLASS's: at cluster scope the README
//   GEMM ran 2.3x slower), which counts 2 x the consumer warps. The
//   producer waits on its own block's barrier alone. (A first version had
//   each producer wait for its own consumers and then trade an arrival
//   with the other producer: one more hop on the way from a free stage to
//   its load, 29% slower than blocks alone on the README GEMM.)
// Every tile written into a block is one its consumers wait for, and every
// arrival the other block's consumers make on a block's barriers is one
// its producer waits for: after its loop, the producer waits for the last
// `stages` iterations' hand-backs too (a GEMM whose gemm is kept in flight
// hands back its last stage after the loop), so neither block of a pair
// leaves while the other still reaches into it.
//
// The planner takes a warp-specialised kernel (Note [Warp specialisation])
// and grid dimension 0 (else 1) where
//  - the consumers' body is one gemm, a GEMM's main loop, whose tiles are
//    used at most 64 times per element loaded (rows x columns / (rows +
//    columns) of its accumulator, kMaxReuse: 128 x 128 tiles, not 128 x
//    256, which did not gain), and the grid has at least 256 blocks
//    (kMinBlocks). Measured on the H200 with TileLang's
//    GEMMs (128 x 128 x 32 tiles, 128 threads): the README GEMM at 8192^3
//    ran at 623 TFLOP/s in pairs and 461 alone, at 4096^3 582 and 533; the
//    fp16 4096^3 GEMM 567 and 532, with B transposed 518 and 438; grids of
//    64 blocks (1024^3, 1000^3) 2-6% slower. Flash attention at head dim 64,
//    whose K and V tiles a pair shares too, ran at 386 against 388. Clusters
//    of 2 x 2 blocks (A shared along x and B along y) ran slower than pairs
//    along x on every one of these (572, 490, 484, 475), so a kernel is
//    paired along one dimension only;
//  - the grid's extent in it is a constant and even; under T.use_swizzle
//    (rasterize.h), which remaps the block indices, the pair is hardware
//    blocks x and x + 1, which run one column of tiles (bx, by and by + 1,
//    sharing B's tile) in row order where the x extent and every panel's
//    rows are even, one row of tiles in column order likewise;
//  - the loop's bounds do not read that block index (both producers run
//    the same iterations), and the loop is not scheduled (order, stage);
//  - at least one prefetched TMA copy's region (as issued) does not read
//    it either (both blocks load the same tile), with an even number of
//    rows whose half leaves each panel's second half 1024-aligned
//    (R/2 x panel bytes a multiple of 1024: the swizzle is the address's);
//  - it is on (tl.disable_cluster_multicast turns it off).
// The lowering report's T.Pipelined entry says "pairs of blocks along x"
// (or y) and each shared copy's path is "tma_load_multicast"; a GEMM's main
// loop left alone says why in its reason ("no cluster: a grid of 64
// blocks, under 256").
#pragma once

#include <map>
#include <string>

#include "backend/cuda/pipeline.h"
#include "backend/cuda/tma_copies.h"
#include "backend/cuda/warp_specialize.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

struct ClusterPlan {
  /// The grid dimension of the pair (0: x, 1: y); -1: no cluster.
  int dim = -1;
  /// The copies both blocks of a pair load, each with the tensor map of
  /// half the tile's rows (its box's rows halved).
  std::map<const ir::CopyOp*, int> halves;
  /// Why a GEMM's main loop is not run in pairs ("no cluster: ..."; empty
  /// for other loops).
  std::string refused;
  bool on() const { return dim >= 0; }
  /// Whether both blocks of a pair fill the stages of `group` (and so both
  /// blocks' consumers hand them back).
  bool shares(const StageGroup& group) const {
    for (const ir::CopyOp* c : group.copies) {
      if (halves.count(c)) return true;
    }
    return false;
  }
};

/// Note [Cluster multicast] for `kernel`; adds the half boxes' maps to `maps`.
ClusterPlan plan_cluster(const ir::KernelStmt& kernel, const WarpSpecialization& ws,
                         const PipelinePlan& pipelines, const TmaPlan& tma, bool enabled,
                         TensorMaps* maps);

}  // namespace tilejit::cuda
