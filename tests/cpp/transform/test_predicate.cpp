// transform::predicate: the guards of tensor accesses inside tile ops'
// operand expressions (the row of a gather read from a tensor, a fill value),
// while the tile ops' own regions stay as they are.
#include "tilejit/transform/predicate.h"

#include <gtest/gtest.h>

#include <string>

#include "tilejit/ir/printer.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/transform/verify.h"

namespace tilejit::transform {
namespace {

using namespace tilejit::ir;  // NOLINT: the tests read as IR

const DataType f32 = DataType::float32();

std::string body_of(const PrimFunc& f) { return to_string(f.tile()->kernels()[0]->body); }

TEST(Predicate, LoadsInsideTileOpOperandsAreGuarded) {
  TileBuilder b("gather");
  const Expr rows = symbolic("rows"), n = symbolic("n");
  Buffer KV = b.tensor_param("KV", {rows, 8}, f32);
  Buffer Idx = b.tensor_param("Idx", {n}, DataType::int32());
  Buffer Scale = b.tensor_param("Scale", {n}, f32);
  const Expr bx = b.begin_kernel({ceildiv(n, 2)}, {128})[0];
  Buffer g = b.alloc("g", {1, 8}, f32, Scope::kShared);
  b.copy(region(KV, {Range{load(Idx, {bx * 2 + 1}), 1}, Range{0, 8}}), whole(g));
  b.fill(whole(g), load(Scale, {bx * 2 + 1}));
  b.end_kernel();
  const std::string body = body_of(predicate(verify(b.finish())));
  // The row index and the fill value read 0 past the ends of Idx and Scale;
  // KV's region is the copy's to bound.
  EXPECT_EQ(body,
            "alloc g: shared float32[1, 8]\n"
            "copy(KV[select(bx * 2 + 1 < n, Idx[bx * 2 + 1], 0):select(bx * 2 + 1 < n, "
            "Idx[bx * 2 + 1], 0) + 1, 0:8], g[0:1, 0:8])\n"
            "fill(g[0:1, 0:8], select(bx * 2 + 1 < n, Scale[bx * 2 + 1], 0.0))\n");
}

}  // namespace
}  // namespace tilejit::transform
