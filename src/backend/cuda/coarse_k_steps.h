// Wider K steps for a warp-specialised GEMM main loop.
//
// Note [Coarser K steps]
// TileLang's README GEMM loads a 128 x 32 tile of A and a 32 x 128 tile of
// B per iteration: a stage of 16 KiB and 4 wgmma per warpgroup between two
// waits on its barriers. On the H200 its tensor pipe was busy 73% of the
// time (ncu, 4096^3) against cuBLAS's 91%, and the same program with
// block_K = 64 ran 5-8% faster (668-680 TFLOP/s against 627-643 at 8192^3,
// 626-639 against 583-595 at 4096^3, pairs of blocks, one call).
//
// A warp-specialised GEMM main loop (Note [Warp specialisation]) whose K
// step covers 64 bytes of its operands' rows (32 bf16 or fp16 elements)
// runs two of the program's iterations per iteration: its shared tiles are
// twice as long along K (128-byte rows, the widest swizzle's), each copy
// loads two consecutive tiles at once (its K coordinate `ko * 32` becomes
// `ko * 64`), the loop runs half the iterations, and the gemm multiplies
// along 64. (Steps of 16 elements do not reach this path: their tiles are
// no TMA boxes of wgmma's.)
// That is the same computation: wgmma's K steps of 16 accumulate in the
// same order into the same accumulator, and TMA fills a tile's part past
// the tensor's edge with zeros either way, so the result is bit for bit the
// program's. It applies where
//  - the loop's body is global-to-shared copies and one gemm of two shared
//    tiles, whole, each filled by one copy whose K coordinate steps by the
//    tile's K extent per iteration and whose other coordinates do not read
//    the loop variable; the tiles are used nowhere else;
//  - the loop runs a constant, even number of iterations from 0, with no
//    T.Pipelined(order=, stage=, group=);
//  - the wider loop is warp-specialised too, with as many stages and as
//    many blocks per multiprocessor (the stages' shared memory doubles);
//  - it is on (tl.disable_coarse_k_steps turns it off).
// The lowering report's T.Pipelined entry says ", 2 K steps of 32 per
// stage"; a GEMM main loop of 64-byte steps that keeps them says why.
#pragma once

#include <optional>
#include <string>

#include "tilejit/ir/expr.h"
#include "tilejit/ir/prim_func.h"

namespace tilejit::cuda {

/// What Note [Coarser K steps] did to a kernel's warp-specialised loop.
struct CoarseKSteps {
  int factor = 1;      ///< the program's iterations per iteration
  int64_t k_step = 0;  ///< the program's K step (elements)
  /// Why a GEMM main loop of 64-byte K steps keeps them ("" else).
  std::string refused;
};

/// `f` with the pipelined loop of kernel `index` whose variable is
/// `loop_var` running two of its iterations per iteration (Note [Coarser K
/// steps]), and *plan saying so; nullopt where the loop does not allow it,
/// with plan->refused saying why where the loop is a GEMM main loop of
/// 64-byte K steps.
std::optional<ir::PrimFunc> coarsen_k_steps(const ir::PrimFunc& f, size_t index,
                                            const ir::Expr& loop_var, CoarseKSteps* plan);

}  // namespace tilejit::cuda
