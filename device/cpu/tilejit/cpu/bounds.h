// The run-time index checks of a unit generated with debug_bounds (Note
// [Debug bounds] in src/backend/common/tile_codegen.h): an index of a tile
// buffer outside its dimension throws, and the entry reports the exception
// as the block's error, which the host raises as a RuntimeError naming the
// kernel and the block (Note [Exceptions from a body] in
// src/backend/cpu/cpu_codegen.cpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "tilejit/cpu/prelude.h"

#pragma GCC visibility push(hidden)

namespace tilejit::cpu {

// Out of line and cold, so that a checked access stays a compare and a
// branch in the loop that makes it.
[[noreturn, gnu::cold, gnu::noinline]] inline void index_out_of_bounds(int64_t index,
                                                                       const char* buffer,
                                                                       int dim) {
  char text[256];
  std::snprintf(text, sizeof text, "bounds check: index %lld lies outside %s in dimension %d",
                static_cast<long long>(index), buffer, dim);
  throw std::runtime_error(text);
}

/// `index`, once it is known to lie in [0, extent), dimension `dim` of
/// `buffer` (its name and shape: "f [32]"). `kernel` is for the CUDA
/// library's message; on the CPU the host names the kernel and the block.
inline int64_t checked_index(int64_t index, int64_t extent, const char* /*kernel*/,
                             const char* buffer, int dim) {
  if (__builtin_expect(index < 0 || index >= extent, 0)) index_out_of_bounds(index, buffer, dim);
  return index;
}

}  // namespace tilejit::cpu

#pragma GCC visibility pop
