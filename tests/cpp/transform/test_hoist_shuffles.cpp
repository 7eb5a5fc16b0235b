// transform::hoist_shuffles (Note [Warp shuffles]): every shuffle the value
// of a let of its own in front of its statement, inner shuffles first, so
// that the partial-tile guard predicate puts around a store, or a select,
// never decides whether a lane shuffles.
#include "tilejit/transform/hoist_shuffles.h"

#include <gtest/gtest.h>

#include <string>

#include "common/test_util.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/transform/predicate.h"
#include "tilejit/transform/verify.h"

namespace tilejit::transform {
namespace {

using namespace tilejit::ir;  // NOLINT: the tests read as IR

const DataType f32 = DataType::float32();

Expr shfl(Intrinsic op, const Expr& value, const Expr& b) {
  return call_intrinsic(op, {value, b, make_int(32, DataType::int32()),
                             make_int(0xFFFFFFFF, DataType::int64())});
}

std::string body_of(const PrimFunc& f) { return to_string(f.tile()->kernels()[0]->body); }

TEST(HoistShuffles, AShuffleInAGuardedStoreAndASelectIsALetBeforeIt) {
  TileBuilder b("guarded");
  const Expr n = symbolic("n");
  Buffer X = b.tensor_param("X", {n}, f32);
  Buffer Y = b.tensor_param("Y", {n}, f32);
  b.begin_kernel({ceildiv(n, 64)}, {64});
  const Expr tx = b.thread_binding(0);
  const Expr inner = shfl(Intrinsic::kShflDown, load(X, {tx}), make_int(1, DataType::int32()));
  b.store(Y, {tx},
          select(eq(floormod(tx, 2), 0),
                 shfl(Intrinsic::kShflXor, inner, make_int(1, DataType::int32())), 0.0));
  b.end_kernel();
  const std::string body = body_of(predicate(hoist_shuffles(verify(b.finish()))));
  EXPECT_EQ(body,
            "let shfl = shfl_down(select(tx < n, X[tx], 0.0), 1, 32, 4294967295)\n"
            "let shfl_1 = shfl_xor(shfl, 1, 32, 4294967295)\n"
            "if tx < n:\n"
            "  Y[tx] = select(tx % 2 == 0, shfl_1, 0.0)\n");
}

TEST(HoistShuffles, AShufflesOwnLetStaysAndABodyWithoutOneIsUnchanged) {
  TileBuilder b("own");
  Buffer Y = b.tensor_param("Y", {Expr(32)}, DataType::int32());
  b.begin_kernel({Expr(1)}, {32});
  const Expr tx = b.thread_binding(0);
  const Expr v = b.let("v", shfl(Intrinsic::kShflSync, tx * 10, make_int(31, DataType::int32())));
  b.store(Y, {tx}, v);
  b.end_kernel();
  const PrimFunc f = verify(b.finish());
  const PrimFunc g = hoist_shuffles(f);
  EXPECT_EQ(body_of(g), body_of(f));
  EXPECT_EQ(body_of(g),
            "let v = shfl_sync(tx * 10, 31, 32, 4294967295)\n"
            "Y[tx] = v\n");
  EXPECT_TRUE(holds_shuffle(f.tile()->stmt));

  TileBuilder c("none");
  Buffer Z = c.tensor_param("Z", {Expr(32)}, f32);
  c.begin_kernel({Expr(1)}, {32});
  c.store(Z, {c.thread_binding(0)}, 1.0);
  c.end_kernel();
  const PrimFunc h = verify(c.finish());
  EXPECT_EQ(hoist_shuffles(h).tile()->stmt.get(), h.tile()->stmt.get());
  EXPECT_FALSE(holds_shuffle(h.tile()->stmt));
}

TEST(HoistShuffles, AShuffleInAWhileConditionIsAnError) {
  TileBuilder b("spin");
  Buffer Y = b.tensor_param("Y", {Expr(32)}, DataType::int32());
  b.begin_kernel({Expr(1)}, {32});
  const Expr tx = b.thread_binding(0);
  b.begin_while(shfl(Intrinsic::kShflXor, tx, make_int(1, DataType::int32())) < 3);
  b.store(Y, {tx}, tx);
  b.end_while();
  b.end_kernel();
  const PrimFunc f = verify(b.finish());
  tilejit::testing::expect_error(
      [&] { hoist_shuffles(f); }, ErrorKind::kValueError,
      "spin: while: the condition holds T.shfl_xor, a warp shuffle, which every lane must run "
      "together at each test; assign the shuffle's result to a T.alloc_var before the loop and "
      "at the end of its body, and test that");
}

}  // namespace
}  // namespace tilejit::transform
