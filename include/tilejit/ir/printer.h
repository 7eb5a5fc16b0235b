// The printer of the tile IR: readable text, stable enough for golden files.
//
//   func gemm(A: float32[M, K], B: float32[K, N], C: float32[M, N])
//   kernel grid=(ceildiv(N, 128), ceildiv(M, 128)) threads=(128) -> (bx, by):
//     alloc A_s: shared float32[128, 32]
//     fill(C_f, 0)
//     for k in pipelined(0, ceildiv(K, 32), stages=3):
//       copy(A[by * 128, k * 32], A_s)
//     ...
//
// IR variables print by name; distinct variables of the same name print as
// `i`, `i_1`, ... in order of first appearance (Note [Variables]).
#pragma once

#include <string>

#include "tilejit/ir/expr.h"
#include "tilejit/ir/stmt.h"

namespace tilejit::ir {

struct PrimFunc;

// to_string(const Expr&) is declared in expr.h, to_string(const Region&) in
// buffer.h; all print through the same printer.

/// A statement, each nested level indented by two spaces; ends in a newline.
std::string to_string(const Stmt& s);
/// The signature line, then the body: the tile IR, or for a source body one
/// line per target ("source cpu: 12 lines").
std::string print(const PrimFunc& f);

}  // namespace tilejit::ir
