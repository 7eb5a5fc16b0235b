// A tile program with a user's guard (Note [Folded guards]), shared by the
// CPU and CUDA tests of transform::predicate's folding.
#pragma once

#include <cstdint>

#include "tilejit/ir/tile_builder.h"

namespace tilejit::testing {

// B[bx * 128 + i] = A[bx * 128 + i] * 2 under `if bx * 128 + i < n`, over
// T.ceildiv(n, 128) blocks of T.Parallel(128).
inline ir::PrimFunc guarded(int64_t n) {
  using ir::Buffer;
  using ir::Expr;
  ir::TileBuilder b("guarded");
  Buffer A = b.tensor_param("A", {n}, DataType::float32());
  Buffer B = b.tensor_param("B", {n}, DataType::float32());
  const Expr bx = b.begin_kernel({ir::ceildiv(n, 128)}, {128})[0];
  const Expr i = b.begin_for("i", 0, 128, ir::ForKind::kParallel);
  b.begin_if(bx * 128 + i < n);
  b.store(B, {bx * 128 + i}, ir::load(A, {bx * 128 + i}) * 2.0);
  b.end_if();
  b.end_for();
  b.end_kernel();
  return b.finish();
}

}  // namespace tilejit::testing
