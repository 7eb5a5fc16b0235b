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
// "tma_store" from it) at the copy's line. tl.disable_staged_epilogue
// turns it off.
#pragma once

#include <cstdint>
#include <optional>

#include "tilejit/ir/prim_func.h"

namespace tilejit::cuda {

/// `f` with kernel `index`'s copy of the accumulator `acc` (a buffer id) to
/// a tensor staged through a shared tile (Note [Staged epilogues]); nullopt
/// where the kernel has no such copy.
std::optional<ir::PrimFunc> stage_epilogue(const ir::PrimFunc& f, size_t index, uint64_t acc);

}  // namespace tilejit::cuda
