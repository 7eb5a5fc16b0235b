// LoweringReport: where a backend's lowering put each buffer and which path
// each tile op took, and why not a faster one (issue 21 item 5).
//
// Backend::generate() makes it with the source (GeneratedSource::report);
// jit() keeps it on the Kernel (Kernel::lowering_report()). It is computed
// from the program each time the source is generated, so a kernel loaded
// from the disk cache has it too, and it is part of no cache key.
//
// An op's record is a Diagnostic (diagnostic.h): its `path` is the path
// taken ("cp_async", "mma", "pipelined", ...) and its `reason` says why not
// a faster one ("" when it is the fastest the target has). What the
// lowering did another way than the program asked is also in
// GeneratedSource::diagnostics, which the Python package raises as warnings;
// the report lists every op, the fast ones included.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilejit/ir/buffer.h"
#include "tilejit/ir/span.h"
#include "tilejit/runtime/diagnostic.h"

namespace tilejit::runtime {

/// Where a buffer's elements live on the target.
enum class Placement { kRegisters, kShared, kGlobal, kLocal };

/// "registers", "shared", "global" or "local".
const char* placement_name(Placement p);

struct BufferRecord {
  /// The buffer's name in the author's program.
  std::string name;
  /// Its declared scope: "global", "shared", "fragment" or "local".
  std::string scope;
  Placement placement = Placement::kShared;
  /// Where within the placement, where the target says more: on the CPU,
  /// "stack" or "arena" (tiles above 16 KiB, one arena per call); "" on CUDA.
  std::string storage;
  /// Its layout (Note [Layouts] in tilejit/ir/layout.h): "row_major",
  /// "local", "shared(pitch 72, rows 64)", "fragment(mma 128x128, warps
  /// 4x1)", ...; "" for a tensor.
  std::string layout;
  /// Bytes it takes where it is placed (stages and padding included); 0
  /// where the shape is symbolic.
  int64_t bytes = 0;
  /// Its allocation's line (the parameter's for a tensor; empty span for IR
  /// built without one).
  ir::Span span;
  /// Where a faster placement was refused (a fragment kept in shared memory
  /// on CUDA): the op that forced it, at its line, and why; `op` is empty
  /// otherwise.
  Diagnostic forced_by = {};
};

struct LoweringReport {
  /// One per buffer the kernel allocates, in program order.
  std::vector<BufferRecord> buffers;
  /// One per tile op (and T.Pipelined loop), in program order.
  std::vector<Diagnostic> ops;
};

/// The record of `b` placed at `p`: its name, scope, allocation line, and
/// `bytes`.
BufferRecord buffer_record(const ir::Buffer& b, Placement p, int64_t bytes);

/// The elements of `b` times its element size; 0 where a dimension is
/// symbolic.
int64_t constant_bytes(const ir::Buffer& b);

}  // namespace tilejit::runtime
