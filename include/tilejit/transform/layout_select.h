// layout_select: the memory layout of each tile buffer, per target.
#pragma once

#include <cstdint>
#include <map>

#include "tilejit/ir/layout.h"
#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

enum class LayoutTarget : uint8_t { kCpu, kCuda };

/// Gives every shared, fragment and local buffer of the tile body of `func`
/// the row-major layout (Note [Layouts] in tilejit/ir/layout.h), and
/// returns the body with every use of the buffer (allocation, loads,
/// stores, tile-op regions) carrying it. A buffer that arrives with a layout
/// keeps it where it is row-major, else it is a ValueError naming the
/// buffer and the layout.
///
/// On the CPU that is the whole choice: a block runs on one thread, so
/// nothing is gained by swizzling or by splitting a fragment across threads
/// (the CPU tile library's functions take a pointer and a row length). The
/// CUDA backend starts from it and its layout inference (cuda::
/// infer_layouts) gives fragments register layouts and gemm operands padded
/// or swizzled shared layouts. Global buffers have no layout (tensors are
/// row-major, strides given by their shape). A source body is returned
/// unchanged.
ir::PrimFunc select_layouts(const ir::PrimFunc& func, LayoutTarget target);

/// `func` with every use of each buffer that `layouts` names (by id)
/// carrying that layout: the one way a layout pass writes its choice into
/// the IR.
ir::PrimFunc apply_layouts(const ir::PrimFunc& func, const std::map<uint64_t, ir::Layout>& layouts);

}  // namespace tilejit::transform
