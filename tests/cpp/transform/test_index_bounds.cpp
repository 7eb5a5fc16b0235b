// transform::check_index_bounds (through verify, which runs it): tile-buffer
// accesses whose index provably leaves its dimension, with the exact
// message, and the guarded or undecidable ones that must pass.
#include "tilejit/transform/index_bounds.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/test_util.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/transform/verify.h"

namespace tilejit::transform {
namespace {

using namespace tilejit::ir;  // NOLINT: the tests read as IR
using tilejit::testing::expect_error;

const DataType f32 = DataType::float32();
const Span kAt{"k.py", 7, 5};

// f(X: f32[M]) with one kernel over bx whose body `fill_body` records;
// verified (which checks the bounds).
PrimFunc build(const std::function<void(TileBuilder&, Buffer X, Expr bx)>& fill_body) {
  TileBuilder b("f");
  Buffer X = b.tensor_param("X", {symbolic("M")}, f32);
  Expr bx = b.begin_kernel({ceildiv(symbolic("M"), 64)}, {128})[0];
  fill_body(b, X, bx);
  b.end_kernel();
  return verify(b.finish());
}

void expect_bounds_error(const std::function<void(TileBuilder&, Buffer X, Expr bx)>& fill_body,
                         const std::string& message) {
  expect_error([&] { build(fill_body); }, ErrorKind::kValueError, message);
}

TEST(IndexBoundsErrors, ParallelExtentPastAFragment) {
  // Issue 20, item 4: T.Parallel(64) over a 32-element fragment.
  expect_bounds_error(
      [](TileBuilder& b, Buffer X, Expr) {
        Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
        Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
        b.store(F, {i}, load(X, {i}), kAt);
        b.end_for();
      },
      "k.py:7:5: store: index i takes the values 0 to 63, but dimension 0 of f [32] has extent 32");
  // One past the end is enough.
  expect_bounds_error(
      [](TileBuilder& b, Buffer X, Expr) {
        Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
        Expr i = b.begin_for("i", 0, 33, ForKind::kParallel);
        b.store(F, {i}, load(X, {i}), kAt);
        b.end_for();
      },
      "k.py:7:5: store: index i takes the values 0 to 32, but dimension 0 of f [32] has extent 32");
}

TEST(IndexBoundsErrors, NestsOffsetsAndNegativeIndices) {
  expect_bounds_error(
      [](TileBuilder& b, Buffer, Expr) {
        Buffer S = b.alloc("S", {4, 48}, f32, Scope::kShared);
        Expr k = b.begin_for("k", 0, 4, ForKind::kSerial);
        Expr i = b.begin_for("i", 0, 4, ForKind::kParallel);
        Expr j = b.begin_for("j", 0, 16, ForKind::kParallel);
        b.store(S, {i, k * 16 + j}, 0.0, kAt);
        b.end_for();
        b.end_for();
        b.end_for();
      },
      "k.py:7:5: store: index k * 16 + j takes the values 0 to 63, but dimension 1 of S [4, 48] "
      "has extent 48");
  expect_bounds_error(
      [](TileBuilder& b, Buffer, Expr) {
        Buffer L = b.alloc("acc", {64}, f32, Scope::kLocal);
        Expr i = b.begin_for("i", 0, 64, ForKind::kUnroll);
        b.store(L, {63 - (i + 1)}, 0.0, kAt);
        b.end_for();
      },
      "k.py:7:5: store: index 63 - (i + 1) takes the values -1 to 62, but dimension 0 of acc "
      "[64] has extent 64");
}

TEST(IndexBoundsErrors, LoadsNameTheirStatement) {
  expect_bounds_error(
      [](TileBuilder& b, Buffer X, Expr bx) {
        Buffer S = b.alloc("S", {64}, f32, Scope::kShared);
        Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
        b.store(X, {bx * 64 + i}, load(S, {i + 8}), kAt);
        b.end_for();
      },
      "k.py:7:5: store: index i + 8 takes the values 8 to 71, but dimension 0 of S [64] has "
      "extent 64");
  expect_bounds_error(
      [](TileBuilder& b, Buffer, Expr) {
        Buffer S = b.alloc("S", {64}, f32, Scope::kShared);
        Expr i = b.begin_for("i", 0, 65, ForKind::kSerial);
        b.begin_if(load(S, {i}) > 0.0, kAt);
        b.end_if();
        b.end_for();
      },
      "k.py:7:5: if: index i takes the values 0 to 64, but dimension 0 of S [64] has extent 64");
}

TEST(IndexBoundsErrors, LetsStandForTheirValues) {
  expect_bounds_error(
      [](TileBuilder& b, Buffer, Expr) {
        Buffer F = b.alloc("f", {64}, f32, Scope::kFragment);
        Expr i = b.begin_for("i", 0, 32, ForKind::kParallel);
        Expr x = b.let("x", i * 2 + 2);
        b.store(F, {x}, 0.0, kAt);
        b.end_for();
      },
      "k.py:7:5: store: index x takes the values 2 to 64, but dimension 0 of f [64] has extent 64");
}

TEST(IndexBoundsErrors, ThreadIndicesTakeEveryValue) {
  // Every thread runs the store (Note [Thread semantics]): tx is 0 to 127.
  expect_bounds_error(
      [](TileBuilder& b, Buffer X, Expr) {
        Buffer F = b.alloc("f", {32}, f32, Scope::kShared);
        Expr tx = b.thread_binding(0);
        b.store(F, {tx}, load(X, {tx}), kAt);
      },
      "k.py:7:5: store: index tx takes the values 0 to 127, but dimension 0 of f [32] has extent 32");
  // A guard on the thread range narrows it, as on a loop variable.
  build([](TileBuilder& b, Buffer X, Expr) {
    Buffer F = b.alloc("f", {32}, f32, Scope::kShared);
    Expr tx = b.thread_binding(0);
    b.begin_if(tx < Expr(32));
    b.store(F, {tx}, load(X, {tx}), kAt);
    b.end_if();
  });
}

TEST(IndexBoundsErrors, ConditionsNarrowButDoNotHide) {
  // The guard admits one index too many.
  expect_bounds_error(
      [](TileBuilder& b, Buffer, Expr) {
        Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
        Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
        b.begin_if(i <= 32);
        b.store(F, {i}, 0.0, kAt);
        b.end_if();
        b.end_for();
      },
      "k.py:7:5: store: index i takes the values 0 to 32, but dimension 0 of f [32] has extent 32");
  // An equality leaves one value; the else branch of i < 32 is i >= 32.
  expect_bounds_error(
      [](TileBuilder& b, Buffer, Expr) {
        Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
        Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
        b.begin_if(eq(i, 40));
        b.store(F, {i}, 0.0, kAt);
        b.end_if();
        b.end_for();
      },
      "k.py:7:5: store: index i takes the value 40, but dimension 0 of f [32] has extent 32");
  expect_bounds_error(
      [](TileBuilder& b, Buffer, Expr) {
        Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
        Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
        b.begin_if(i < 32);
        b.store(F, {i}, 0.0);
        b.begin_else();
        b.store(F, {i - 16}, 0.0, kAt);
        b.end_if();
        b.end_for();
      },
      "k.py:7:5: store: index i - 16 takes the values 16 to 47, but dimension 0 of f [32] has "
      "extent 32");
  // A loop of symbolic extent (a K loop) is taken to run.
  expect_bounds_error(
      [](TileBuilder& b, Buffer, Expr) {
        Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
        b.begin_for("k", 0, symbolic("M"), ForKind::kPipelined, 2);
        Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
        b.store(F, {i}, 0.0, kAt);
        b.end_for();
        b.end_for();
      },
      "k.py:7:5: store: index i takes the values 0 to 63, but dimension 0 of f [32] has extent 32");
}

// Each body stores or loads f [32] with an index that would leave it were it
// not for what the case names; verify must accept all of them.
TEST(IndexBounds, AccessesItCannotProveOutOfBoundsPass) {
  const std::vector<std::pair<const char*, std::function<void(TileBuilder&, Buffer, Expr)>>>
      cases = {
          {"a guard on the loop variable",
           [](TileBuilder& b, Buffer X, Expr) {
             Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
             Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
             b.begin_if(i < 32);
             b.store(F, {i}, load(X, {i}));
             b.end_if();
             b.begin_if(logical_not(i < 32));
             b.store(F, {i - 32}, load(X, {i}));
             b.end_if();
             b.begin_if(logical_and(i >= 8, 2 * i - 1 < 63));
             b.store(F, {i - 8}, 0.0);
             b.end_if();
             b.begin_if(logical_or(i < 16, i >= 48));
             b.begin_else();
             b.store(F, {i - 16}, 0.0);
             b.end_if();
             b.begin_if(63 - i < 32);  // i >= 32, through a negative coefficient
             b.store(F, {i - 32}, 0.0);
             b.end_if();
             b.end_for();
           }},
          {"a guard it does not understand",
           [](TileBuilder& b, Buffer X, Expr bx) {
             Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
             Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
             b.begin_if(bx * 64 + i < symbolic("M"));
             b.store(F, {i}, load(X, {i}));
             b.end_if();
             b.begin_if(ne(i, 40));
             b.store(F, {i}, 0.0);
             b.end_if();
             b.begin_while(load(X, {i}) > 0.0);
             b.store(F, {i}, 0.0);
             b.end_while();
             b.end_for();
           }},
          {"a branch that never runs",
           [](TileBuilder& b, Buffer, Expr) {
             Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
             Expr i = b.begin_for("i", 0, 32, ForKind::kParallel);
             b.begin_if(i >= 32);
             b.store(F, {i}, 0.0);
             b.end_if();
             b.end_for();
             Expr j = b.begin_for("j", 0, 0, ForKind::kSerial);
             b.store(F, {j + 100}, 0.0);
             b.end_for();
           }},
          {"a break or continue in the loop",
           [](TileBuilder& b, Buffer, Expr) {
             Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
             Expr i = b.begin_for("i", 0, 64, ForKind::kSerial);
             b.begin_if(i >= 32);
             b.break_loop();
             b.end_if();
             b.store(F, {i}, 0.0);
             b.end_for();
             Expr j = b.begin_for("j", 0, 64, ForKind::kSerial);
             b.begin_if(j >= 32);
             b.continue_loop();
             b.end_if();
             b.store(F, {j}, 0.0);
             b.end_for();
           }},
          {"a select or a short-circuit",
           [](TileBuilder& b, Buffer X, Expr bx) {
             Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
             Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
             b.store(X, {bx * 64 + i}, select(i < 32, load(F, {i}), load(F, {i - 32})));
             b.begin_if(logical_and(i < 32, load(F, {i}) > 0.0));
             b.end_if();
             b.begin_if(logical_or(i >= 32, load(F, {i}) > 0.0));
             b.end_if();
             b.end_for();
           }},
          {"an index that is not affine in known variables",
           [](TileBuilder& b, Buffer, Expr bx) {
             Buffer F = b.alloc("f", {32}, f32, Scope::kFragment);
             Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
             b.store(F, {floormod(i, 32)}, 0.0);
             b.store(F, {floordiv(i, 2)}, 0.0);
             b.store(F, {bx + i}, 0.0);  // bx is not a loop variable
             b.end_for();
             Expr n = b.begin_for("n", 0, symbolic("M"), ForKind::kSerial);
             b.store(F, {n}, 0.0);  // a loop of symbolic extent
             b.end_for();
           }},
          {"a global tensor (predicated instead)",
           [](TileBuilder& b, Buffer X, Expr) {
             Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
             b.store(X, {i + 1000}, 0.0);
             b.end_for();
           }},
      };
  for (const auto& [name, body] : cases) {
    SCOPED_TRACE(name);
    EXPECT_NO_THROW(build(body));
  }
}

TEST(IndexBounds, SourceBodiesPass) {
  PrimFunc f = prim_func("s").tensor("A", {4}, f32).body("cpu", "x").build();
  EXPECT_NO_THROW(check_index_bounds(f));
}

}  // namespace
}  // namespace tilejit::transform
