// transform::predicate: the guards of tensor accesses inside tile ops'
// operand expressions (the row of a gather read from a tensor, a fill value),
// while the tile ops' own regions stay as they are; and the user's guards
// that the ranges prove, folded (Note [Folded guards]).
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

// for i in T.Parallel(128): if bx * 128 + i < n: B[bx * 128 + i] = A[...] * 2,
// over blocks of 128 (TileLang's elementwise idiom with the user's guard).
PrimFunc guarded(const Expr& n, const Expr& grid) {
  TileBuilder b("guarded");
  Buffer A = b.tensor_param("A", {n}, f32);
  Buffer B = b.tensor_param("B", {n}, f32);
  const Expr bx = b.begin_kernel({grid}, {128})[0];
  const Expr i = b.begin_for("i", 0, 128, ForKind::kParallel);
  b.begin_if(bx * 128 + i < n);
  b.store(B, {bx * 128 + i}, load(A, {bx * 128 + i}) * 2.0);
  b.end_if();
  b.end_for();
  b.end_kernel();
  return predicate(verify(b.finish()));
}

TEST(Predicate, AGuardTheStaticShapesProveIsFolded) {
  EXPECT_EQ(body_of(guarded(1024, ceildiv(1024, 128))),
            "for i in parallel(0, 128):\n"
            "  B[bx * 128 + i] = A[bx * 128 + i] * 2.0\n");
  // 1000 is no multiple of 128: the last block's tail is out, the guard
  // stays (and the accesses under it need no other).
  EXPECT_EQ(body_of(guarded(1000, ceildiv(1000, 128))),
            "for i in parallel(0, 128):\n"
            "  if bx * 128 + i < 1000:\n"
            "    B[bx * 128 + i] = A[bx * 128 + i] * 2.0\n");
}

TEST(Predicate, ASymbolicGridProvesTheGuardWhenItRoundsDown) {
  const Expr n = symbolic("n");
  EXPECT_EQ(body_of(guarded(n, floordiv(n, 128))),
            "for i in parallel(0, 128):\n"
            "  B[bx * 128 + i] = A[bx * 128 + i] * 2.0\n");
  EXPECT_EQ(body_of(guarded(n, ceildiv(n, 128))),
            "for i in parallel(0, 128):\n"
            "  if bx * 128 + i < n:\n"
            "    B[bx * 128 + i] = A[bx * 128 + i] * 2.0\n");
}

TEST(Predicate, AConditionThatNeverHoldsKeepsItsElseBranch) {
  TileBuilder b("never");
  Buffer A = b.tensor_param("A", {1024}, f32);
  const Expr bx = b.begin_kernel({8}, {128})[0];
  const Expr i = b.begin_for("i", 0, 128, ForKind::kParallel);
  b.begin_if(bx * 128 + i >= 1024);
  b.store(A, {bx * 128 + i}, Expr(1.0));
  b.begin_else();
  b.store(A, {bx * 128 + i}, Expr(2.0));
  b.end_if();
  b.begin_if(i > 127);  // no else: nothing is left
  b.store(A, {i}, Expr(3.0));
  b.end_if();
  b.end_for();
  b.end_kernel();
  EXPECT_EQ(body_of(predicate(verify(b.finish()))),
            "for i in parallel(0, 128):\n"
            "  A[bx * 128 + i] = 2.0\n"
            "  pass\n");
}

TEST(Predicate, AConjunctionLosesThePartsThatAlwaysHold) {
  TileBuilder b("both");
  Buffer A = b.tensor_param("A", {1024}, f32);
  const Expr bx = b.begin_kernel({8}, {128})[0];
  const Expr i = b.begin_for("i", 0, 128, ForKind::kParallel);
  const Expr idx = bx * 128 + i;
  b.begin_if(logical_and(logical_and(idx < 1024, load(A, {idx}) > 0.0), idx >= 0));
  b.store(A, {idx}, Expr(0.0));
  b.end_if();
  b.end_for();
  b.end_kernel();
  EXPECT_EQ(body_of(predicate(verify(b.finish()))),
            "for i in parallel(0, 128):\n"
            "  if A[bx * 128 + i] > 0.0:\n"
            "    A[bx * 128 + i] = 0.0\n");
}

TEST(Predicate, ThreadIndicesAndLetsHaveRangesToo) {
  TileBuilder b("threads");
  Buffer A = b.tensor_param("A", {1024}, f32);
  const Expr bx = b.begin_kernel({8}, {128})[0];
  const Expr tx = b.thread_binding(0);
  b.begin_if(tx < 128);  // every thread: folded
  b.store(A, {bx * 128 + tx}, Expr(1.0));
  b.end_if();
  b.begin_if(tx < 64);  // half of them: kept
  b.store(A, {bx * 128 + tx}, Expr(2.0));
  b.end_if();
  const Expr r = b.let("r", bx * 128 + tx);
  b.begin_if(r < 1024);
  b.store(A, {r}, Expr(3.0));
  b.end_if();
  b.end_kernel();
  EXPECT_EQ(body_of(predicate(verify(b.finish()))),
            "A[bx * 128 + tx] = 1.0\n"
            "if tx < 64:\n"
            "  A[bx * 128 + tx] = 2.0\n"
            "let r = bx * 128 + tx\n"
            "A[r] = 3.0\n");
}

}  // namespace
}  // namespace tilejit::transform
