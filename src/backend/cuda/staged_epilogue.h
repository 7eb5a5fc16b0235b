// A GEMM's epilogue through shared memory and TMA.
//
// Note [Staged epilogues]
// TileLang's README GEMM ends with `T.copy(C_local, C[by * 128, bx *
// 128])`: each thread stores its accumulator's elements, two adjacent
// columns at a time, so every warp's store touches eight rows of 16 bytes,
// half of each 32-byte sector (ncu: 1,048,576 excess sectors of 2,097,152
// at 4096^3), and the block's tensor work waits while it stores. TileLang's
// own examples often stage the tile (`T.copy(C_local, C_shared);
// T.copy(C_shared, C[...])`), which tilejit lowers to stores into a
// swizzled shared tile and a TMA store of whole 128-byte rows. On the H200
// the README GEMM staged so ran at 640-674 TFLOP/s against 615-620 at
// 8192^3 and 670-688 against 617-618 at 4096^3 (same call).
//
// So in a warp-specialised kernel whose main loop is one gemm (Note [Warp
// specialisation]), a copy of that gemm's accumulator, whole, to a region
// of its shape of a bf16 or fp16 tensor, standing in the kernel's body after
// the loop, becomes those two copies through a shared tile of the tensor's
// dtype that the compiler allocates (named after the accumulator,
// `C_local_staged`), swizzled by Note [Swizzled store tiles]. (A float32
// tile would be row-major there, its stores conflicting eight ways: not
// measured, not done.) The
// values stored are the same (the conversion to the tensor's dtype happens
// at the first copy, as it did at the one). The tile lives only after the
// loop, so it shares the bytes of the loop's stages (Note [Shared-memory
// liveness]). It is kept where the kernel planned again is warp-specialised
// as before, with its stages and blocks per multiprocessor, and the tile's
// store takes TMA (Note [TMA stores]); the lowering report then has a buffer
// entry for the tile and the copy's two entries ("registers" into the tile,
// "tma_store" from it) at the copy's line; a store of such an accumulator
// left as written says why in its reason ("not staged: ..."): a float32
// tensor, a store that would not take TMA, stages that would not fit.
// tl.disable_staged_epilogue turns it off.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tilejit/ir/prim_func.h"

namespace tilejit::cuda {

/// What Note [Staged epilogues] did with a kernel's store of its main
/// loop's accumulator.
struct StagedEpilogue {
  uint64_t acc = 0;     ///< the accumulator's buffer id; 0 without a GEMM main loop
  uint64_t tile = 0;    ///< the shared tile the store goes through; 0 where none
  std::string refused;  ///< why its store stays as written ("" where staged or none)
};

/// Whether `copy` stores all of the accumulator `acc` (2-D, constant
/// shape) to a tensor region of its shape, of any dtype.
bool stores_accumulator(const ir::CopyOp& copy, uint64_t acc);

/// `f` with kernel `index`'s copy of the accumulator epilogue->acc to a bf16
/// or fp16 tensor staged through a shared tile (Note [Staged epilogues]),
/// whose id goes to epilogue->tile; nullopt where the kernel's body has no
/// such copy, with epilogue->refused set where it has one to another dtype.
std::optional<ir::PrimFunc> stage_epilogue(const ir::PrimFunc& f, size_t index,
                                           StagedEpilogue* epilogue);

}  // namespace tilejit::cuda
