// Diagnostic: something a backend's lowering reports about the author's
// program that is not an error -- a tile op lowered another way than the
// program asked for, and why.
//
// Backend::generate() returns them with the source (GeneratedSource), in
// program order; jit() keeps them on the Kernel (Kernel::diagnostics()),
// and the Python package raises each as a tilejit.PerformanceWarning at the
// author's line. They are part of no cache key: generating the same source
// again reports the same records.
#pragma once

#include <string>

#include "tilejit/ir/span.h"

namespace tilejit::runtime {

struct Diagnostic {
  /// The op as the author wrote it: "T.copy".
  std::string op;
  /// The op's line in the author's program (empty for IR built without one).
  ir::Span span;
  /// What the lowering did instead: "not pipelined, copied synchronously in
  /// each iteration".
  std::string path;
  /// Why: what in the program prevented the path asked for.
  std::string reason;

  /// "<span>: <op>: <path>: <reason>", with `func_name` in place of an empty
  /// span (the prefix of the library's errors, Note [Diagnostics] in
  /// ir/tile_builder.h).
  std::string message(const std::string& func_name) const;
};

}  // namespace tilejit::runtime
