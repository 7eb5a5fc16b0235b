// Span: where in the author's program a node came from.
#pragma once

#include <string>

namespace tilejit::ir {

/// A position in the author's source: file, 1-based line and column. Empty
/// (line 0) for nodes made by the C++ builder without one. Diagnostics of the
/// builder and the passes begin with it (Note [Diagnostics] in tile_builder.h).
struct Span {
  std::string file;
  int line = 0;
  int col = 0;

  bool empty() const noexcept { return line <= 0 && file.empty(); }
  /// "file.py:12:8"; "" when empty.
  std::string str() const;
};

}  // namespace tilejit::ir
