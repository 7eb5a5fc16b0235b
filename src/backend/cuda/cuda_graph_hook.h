// CUDA-graph capture support: which graph a stream is capturing into, and
// tying a callback to that graph's lifetime. CudaBackend::is_capturing() and
// CudaBackend::on_graph_destroyed() are built on these; the workspace pool
// uses them for Note [Graph-owned arenas] (workspace_pool.h).
//
// Note [Graph lifetime through user objects]
// A workspace block baked into a captured graph must stay out of
// circulation for as long as the graph, or any executable graph instantiated
// from it, can still run. The driver tracks exactly that lifetime for user
// objects: a user object retained by a graph is handed on to every
// executable instantiated from it, and its destructor runs once the last of
// them is destroyed, after any launch still in flight has finished
// (cuGraphExecDestroy frees an in-flight executable on completion). The
// destructor runs on a driver thread and may not call CUDA, so what it runs
// must only hand the block back (the pool's callback takes the pool's mutex
// and pushes the block onto its free list).
//
// The block itself is allocated while its stream captures; the allocator
// makes such allocations outside the capture (Note [Allocating under
// capture] in cuda_memory.cpp), so the memory is not a graph node and
// outlives the capture.
#pragma once

#include <cuda.h>

#include "tilejit/core/device.h"
#include "tilejit/runtime/allocator.h"

namespace tilejit::cuda {

/// Whether `stream` on `device` is capturing; when it is and `graph` is not
/// null, `*graph` is the graph being captured into. A capture that was
/// invalidated still counts (the stream is inside a capture sequence).
/// Throws RuntimeError on a driver failure, e.g. the legacy stream while
/// another stream captures in global mode (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT).
bool capture_graph(Device device, runtime::Stream stream, CUgraph* graph);

/// Makes `destroy(context)` run once `graph` and every executable graph
/// made from it are destroyed (Note [Graph lifetime through user objects]).
/// `destroy` runs on a driver thread and must not call CUDA. Throws
/// RuntimeError when the driver lacks user objects (before CUDA 11.3) or a
/// call fails; `destroy` is then never called.
void attach_to_graph(Device device, CUgraph graph, void (*destroy)(void*) noexcept,
                     void* context);

}  // namespace tilejit::cuda
