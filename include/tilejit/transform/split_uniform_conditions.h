// split_uniform_conditions: a T.Parallel nest whose selects a block decides
// as a whole, run without them where it does.
#pragma once

#include "tilejit/ir/prim_func.h"

namespace tilejit::transform {

/// Note [Conditions decided per block]: in the tile body of `func`, a
/// T.Parallel nest (of constant extents) whose selects (T.if_then_else)
/// compare affine expressions of the nest's indices and of values fixed
/// through the nest (block indices, the indices of loops around it) becomes
///
///   if (every such condition holds at every index of the nest)
///     <the nest, each of those selects its true value>
///   else if (the condition fails at every index)   (one condition only)
///     <the nest, the select its false value>
///   else
///     <the nest>
///
/// The test is one comparison per condition, made once per execution of the
/// nest and the same in every thread. Flash attention's causal mask
/// `bx * 128 + i >= k * 128 + j` holds over the whole 128 x 128 tile for
/// every key block before the diagonal (`(bx - k) * 128 - 127 >= 0`), so
/// those iterations fill the scores with 0 instead of comparing 128 x 128
/// index pairs; a key mask `k * 128 + j < seq_len` likewise costs nothing
/// but in the last block. fold_conditions (Note [Decided conditions]) has
/// already removed the conditions decided for every block.
ir::PrimFunc split_uniform_conditions(const ir::PrimFunc& func);

}  // namespace tilejit::transform
