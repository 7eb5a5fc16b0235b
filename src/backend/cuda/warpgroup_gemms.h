// Which gemms of a CUDA tile kernel run on Hopper's warpgroup instructions,
// and which shared tiles they read swizzled.
//
// Note [Warpgroup gemms]
// On sm_90a a T.gemm into a register accumulator runs on wgmma.mma_async
// (tilejit/cuda/wgmma.h): each warpgroup of four warps computes 64-row
// blocks of C from operands that the instruction reads from shared memory
// itself (SS), or A from registers (RS: flash attention's probabilities),
// with no ldmatrix and no per-warp operand fragments. What it needs:
//  - the accumulator in wgmma's layout: the G = threads / 128 warpgroups
//    in a GM x GN grid, all along M (GN = 1) or, under
//    GemmWarpPolicy.FullCol or where M has too few rows, all along N (MLA
//    decoding's 64 heads over two warpgroups); each warpgroup's four warps
//    on 16 rows of each of its 64-row blocks (FragmentLayout::il_rows, wm =
//    4 * GM, wn = GN). M a multiple of 64 * GM, a warpgroup's N a multiple
//    of 8, cut into instructions of at most 256 columns (and starting a
//    panel of a B whose panels run along N). The accumulator takes this
//    layout when every gemm into it has its operands below; its row
//    vectors and its A operands in registers then take the same rows
//    (held alike by the GN warpgroups of a row), and everything else that
//    reads them (register loops, reductions across warpgroups through the
//    scratch, copies) goes through MmaAcc / MmaRows as before;
//  - each shared operand in the swizzled layout (wgmma.h): panels of 64 or
//    128 bytes of row, the widest the row allows (rows of 64 bytes, or a
//    multiple of 128), 1024-aligned,
//    written only by whole-tile T.copy from global or shared memory (which
//    then writes it swizzled: copy_swizzled) and read only by such gemms.
//    A tile used any other way (an element read, a copy out of it, a gemm
//    into an accumulator of another layout) keeps the row-major layout;
//  - A and B of one 16-bit dtype, whole buffers, K a multiple of 16, A
//    stored M x K (not transposed).
// A gemm that cannot run on wgmma (an operand above refused, or its A a
// fragment the choice keeps in shared memory) runs on mma.sync, and its
// accumulator takes the mma layouts: choose_fragments makes the choice
// again without the warpgroup layout for it, and the tiles it reads stay
// row-major (swizzled_operands refuses every tile of a gemm off wgmma,
// until nothing changes). The lowering report says why, at the gemm.
// The device library also has the 32-byte swizzle and A read M-major
// (wgmma.h takes both); the choice leaves them out until a GPU run has
// checked them, so rows of 32 bytes and a transposed A keep mma.sync.
// A stage of a pipelined operand is a whole tile: the stage bytes round up
// to 1024. What the generic proxy wrote to shared memory (stores and
// cp.async alike) reaches wgmma's async proxy through a fence.proxy.async
// by each writing thread before the barrier that hands the tile over: in a
// kernel with swizzled tiles every block barrier is proxy_barrier, and a
// pipeline fences before its per-iteration barrier. The gemm waits for its
// instructions before it returns, so a later copy may overwrite the tiles
// it read, and the registers it wrote are the accumulator's again.
// The target decides: the generated source is for one architecture
// (SourceRequest::arch), and on any other the gemms run on mma.sync in the
// layouts of Note [Register accumulators].
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/fragments.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::cuda {

/// The bytes of a swizzled panel's row for a 2-D 16-bit tile of `cols`
/// columns: 64 or 128, or 0 where its rows take none.
int swizzle_bytes(int64_t cols, int64_t element_bytes);

/// The kernel's shared tiles that may be swizzled operands, with their
/// panel bytes: 2-D 16-bit shared buffers written only by whole-tile copies
/// and read only as whole gemm operands.
std::map<uint64_t, int> swizzlable_operands(const ir::KernelStmt& kernel,
                                            const std::set<uint64_t>& in_groups);

/// Why an m x n accumulator written by `gemms` cannot take the warpgroup
/// layout at `threads` threads with its columns split over `wgn`
/// warpgroups ("": it can).
std::string warpgroup_accumulator(const std::vector<const ir::GemmOp*>& gemms,
                                  const std::map<uint64_t, int>& swizzlable, int64_t m, int64_t n,
                                  int threads, int wgn);

/// Of `swizzlable`, the tiles every gemm of which runs on wgmma: its C in
/// `regs` in the warpgroup layout, its other operand swizzled too or (A) a
/// register fragment.
std::map<uint64_t, int> swizzled_operands(const std::vector<const ir::GemmOp*>& gemms,
                                          const std::map<uint64_t, int>& swizzlable,
                                          const std::map<uint64_t, FragmentLayout>& regs);

/// How a gemm into a warpgroup accumulator runs: `columns` per wgmma
/// instruction (0: on mma.sync, for `why`), A from registers or not.
struct WarpgroupGemm {
  int columns = 0;
  bool a_in_registers = false;
  std::string why;
};
/// Of a gemm during layout inference: its fragments in `registers`, its
/// swizzled tiles in `swizzled`.
WarpgroupGemm warpgroup_gemm(const ir::GemmOp& op,
                             const std::map<uint64_t, FragmentLayout>& registers,
                             const std::map<uint64_t, int>& swizzled);
/// Of a gemm whose buffers carry their layouts (infer_layouts.h).
WarpgroupGemm warpgroup_gemm(const ir::GemmOp& op);

}  // namespace tilejit::cuda
