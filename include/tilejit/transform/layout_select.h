// layout_select: the memory layout of each tile buffer, per target.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

enum class LayoutTarget : uint8_t { kCpu, kCuda };

/// The layout every shared, fragment and local buffer has on the CPU:
/// element (i_0, ..., i_n) of a buffer of shape (s_0, ..., s_n) at offset
/// sum_d i_d * prod(s_{d+1}, ..., s_n) of one contiguous per-block array.
inline constexpr const char* kRowMajor = "row_major";

/// Gives every shared, fragment and local buffer of the tile body of `func`
/// a layout (BufferNode::layout) and returns the body with every use of the
/// buffer (allocation, loads, stores, tile-op regions) carrying it.
///
/// The contract, for each target's lowering: after this pass every tile
/// buffer's layout is set, and the lowering lays the buffer out as that name
/// says; a lowering meets only names its target chose. A buffer that arrives
/// with a layout keeps it when the target has it, else it is a ValueError
/// naming the buffer and the layout.
///
/// On the CPU the choice is trivial: a block runs on one thread, so nothing
/// is gained by swizzling or by splitting a fragment across threads, and
/// every tile is kRowMajor (the layout the CPU tile library's functions take:
/// a pointer and a row length). A GPU target chooses per op here: fragment
/// layouts for the mma/wgmma accumulators, swizzled shared layouts for their
/// operands. On CUDA every tile is kRowMajor too, for now: shared and
/// fragment buffers in the block's shared memory, local ones per thread.
/// Global buffers have no layout (tensors are row-major, strides
/// given by their shape). A source body is returned unchanged.
ir::PrimFunc select_layouts(const ir::PrimFunc& func, LayoutTarget target);

}  // namespace tilejit::transform
