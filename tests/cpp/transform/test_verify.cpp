// transform::verify: normalisation of region operands, and every error (kind,
// exact message: span, op, buffer).
#include "tilejit/transform/verify.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/test_util.h"
#include "tilejit/ir/printer.h"
#include "tilejit/ir/tile_builder.h"

namespace tilejit::transform {
namespace {

using namespace tilejit::ir;  // NOLINT: the tests read as IR
using tilejit::testing::expect_error;

const DataType f32 = DataType::float32();
const DataType f16 = DataType::float16();
const Span kAt{"k.py", 12, 8};

// Builds f(A: f32[M, K], C: f32[M, 64]) with one kernel over (bx, by) whose
// body `fill_body` records; returns the verified function.
PrimFunc build(const std::function<void(TileBuilder&, Buffer A, Buffer C, Expr bx)>& fill_body) {
  TileBuilder b("f");
  Buffer A = b.tensor_param("A", {symbolic("M"), symbolic("K")}, f32);
  Buffer C = b.tensor_param("C", {symbolic("M"), 64}, f32);
  Expr bx = b.begin_kernel({ceildiv(symbolic("M"), 128)}, {128})[0];
  fill_body(b, A, C, bx);
  b.end_kernel();
  return verify(b.finish());
}

// The body of the kernel, printed.
std::string body_of(const PrimFunc& f) { return to_string(f.tile()->kernels()[0]->body); }

TEST(Verify, SourceBodiesPassUnchanged) {
  PrimFunc f = prim_func("s").tensor("A", {4}, f32).body("cpu", "x").build();
  PrimFunc g = verify(f);
  EXPECT_FALSE(g.is_tile());
  EXPECT_EQ(g.sources().at("cpu"), "x");
}

TEST(Verify, CornersTakeTheOtherSidesExtents) {
  PrimFunc f = build([](TileBuilder& b, Buffer A, Buffer C, Expr bx) {
    Buffer S = b.alloc("A_s", {128, 32}, f32, Scope::kShared);
    Buffer F = b.alloc("C_f", {128, 64}, f32, Scope::kFragment);
    Expr k = b.begin_for("k", 0, 4);
    b.copy(corner(A, {bx * 128, k * 32}), whole(S));
    b.end_for();
    b.fill(whole(F), 0);
    b.copy(whole(F), corner(C, {bx * 128, 0}));
  });
  EXPECT_EQ(body_of(f),
            "alloc A_s: shared float32[128, 32]\n"
            "alloc C_f: fragment float32[128, 64]\n"
            "for k in serial(0, 4):\n"
            "  copy(A[bx * 128:bx * 128 + 128, k * 32:k * 32 + 32], A_s[0:128, 0:32])\n"
            "fill(C_f[0:128, 0:64], 0.0)\n"
            "copy(C_f[0:128, 0:64], C[bx * 128:bx * 128 + 128, 0:64])\n");
}

TEST(Verify, ACornerOfHigherRankGetsLeadingUnitExtents) {
  TileBuilder b("f");
  Buffer Q = b.tensor_param("Q", {symbolic("B"), symbolic("S"), 64}, f16);
  auto v = b.begin_kernel({4, 4}, {128});
  Buffer S = b.alloc("Q_s", {64, 64}, f16, Scope::kShared);
  b.copy(corner(Q, {v[1], v[0] * 64, 0}), whole(S));
  Buffer T = b.alloc("T_s", {1, 64, 64}, f16, Scope::kShared);
  b.copy(whole(T), whole(S));  // unit dimensions do not count
  b.end_kernel();
  PrimFunc f = verify(b.finish());
  std::string text = print(f);
  EXPECT_NE(text.find("copy(Q[by:by + 1, bx * 64:bx * 64 + 64, 0:64], Q_s[0:64, 0:64])"),
            std::string::npos)
      << text;
}

TEST(VerifyErrors, CopyShapes) {
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer, Buffer C, Expr) {
          Buffer S = b.alloc("A_s", {128, 64}, f32, Scope::kShared);
          b.copy(whole(S), region(C, {{0, 64}, {0, 64}}), kAt);
        });
      },
      ErrorKind::kValueError,
      "k.py:12:8: T.copy: source A_s[0:128, 0:64] and destination C[0:64, 0:64] differ in shape "
      "([128, 64] vs [64, 64])");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer A, Buffer C, Expr) { b.copy(corner(A, {0, 0}), corner(C, {0, 0})); });
      },
      ErrorKind::kValueError,
      "f: T.copy: the source A[0, 0] and the destination C[0, 0] are both start corners; one "
      "side must give the extents");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer A, Buffer, Expr) {
          Buffer S = b.alloc("S", {4, 4, 4}, f32, Scope::kShared);
          b.copy(whole(S), corner(A, {0, 0}));
        });
      },
      ErrorKind::kValueError,
      "f: T.copy: the destination A[0, 0] has rank 2 but the other operand's extents are [4, 4, "
      "4]");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer A, Buffer, Expr) {
          Buffer S = b.alloc("S", {4}, f32, Scope::kShared);
          b.copy(corner(A, {0}), whole(S));
        });
      },
      ErrorKind::kValueError, "f: T.copy: the source A[0] has 1 indices for a buffer of rank 2");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer A, Buffer, Expr) {
          Buffer S = b.alloc("S", {4}, f32, Scope::kShared);
          b.copy(region(A, {{0, 1}, {0, Expr()}}), whole(S));
        });
      },
      ErrorKind::kValueError, "f: T.copy: the source A[0:1, 0] mixes indices with and without extents");
}

TEST(VerifyErrors, Bounds) {
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer, Buffer, Expr) {
          Buffer S = b.alloc("S", {128}, f32, Scope::kShared);
          b.fill(region(S, {{64, 128}}), 0, kAt);
        });
      },
      ErrorKind::kValueError,
      "k.py:12:8: T.fill: the destination S[64:192] lies outside S [128] in dimension 0");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer A, Buffer, Expr) {
          Buffer S = b.alloc("S", {4, 4}, f32, Scope::kShared);
          b.copy(corner(A, {-4, 0}), whole(S));
        });
      },
      ErrorKind::kValueError, "f: T.copy: the source A[-4:0, 0:4] lies outside A [M, K] in dimension 0");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer, Buffer C, Expr) {
          Buffer S = b.alloc("S", {4, 4}, f32, Scope::kShared);
          b.copy(whole(S), corner(C, {0, 64}));  // starts past C's static dimension
        });
      },
      ErrorKind::kValueError,
      "f: T.copy: the destination C[0:4, 64:68] lies outside C [M, 64] in dimension 1");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer, Buffer, Expr) {
          Buffer S = b.alloc("S", {4}, f32, Scope::kShared);
          b.fill(region(S, {{0, 0}}), 0);
        });
      },
      ErrorKind::kValueError, "f: T.fill: the destination S[0:0] is empty in dimension 0");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer, Buffer, Expr) {
          Buffer S = b.alloc("S", {128}, f32, Scope::kLocal);
          b.store(S, {128}, 1.0, kAt);
        });
      },
      ErrorKind::kValueError, "k.py:12:8: store: index 128 lies outside S [128] in dimension 0");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer A, Buffer, Expr) {
          Buffer S = b.alloc("S", {8}, f32, Scope::kLocal);
          b.store(A, {0, 0}, load(S, {8}), kAt);
        });
      },
      ErrorKind::kValueError, "k.py:12:8: store: index 8 lies outside S [8] in dimension 0");
  // Partial tiles of a global tensor are legal (the lowering masks them).
  EXPECT_NO_THROW(build([](TileBuilder& b, Buffer, Buffer C, Expr) {
    Buffer S = b.alloc("S", {128, 128}, f32, Scope::kShared);
    b.copy(whole(S), corner(C, {0, 0}));
  }));
}

TEST(VerifyErrors, Gemm) {
  auto gemm = [](std::vector<Expr> a, std::vector<Expr> bs, std::vector<Expr> c, Scope sa,
                 Scope sc, DataType tb, bool ta, bool tbb) {
    return [=] {
      build([=](TileBuilder& b, Buffer, Buffer, Expr) {
        Buffer A = b.alloc("A_s", a, f16, sa);
        Buffer B = b.alloc("B_s", bs, tb, Scope::kShared);
        Buffer C = b.alloc("C_f", c, f32, sc);
        b.gemm(whole(A), whole(B), whole(C), ta, tbb, false, 0, kAt);
      });
    };
  };
  EXPECT_NO_THROW(gemm({128, 32}, {32, 64}, {128, 64}, Scope::kShared, Scope::kFragment, f16,
                       false, false)());
  EXPECT_NO_THROW(gemm({32, 128}, {64, 32}, {128, 64}, Scope::kFragment, Scope::kFragment, f16,
                       true, true)());
  expect_error(gemm({128, 32}, {64, 64}, {128, 64}, Scope::kShared, Scope::kFragment, f16, false,
                    false),
               ErrorKind::kValueError,
               "k.py:12:8: T.gemm: the K extents of A_s[0:128, 0:32] and B_s[0:64, 0:64] differ "
               "(32 vs 64)");
  expect_error(gemm({128, 32}, {32, 64}, {64, 64}, Scope::kShared, Scope::kFragment, f16, false,
                    false),
               ErrorKind::kValueError,
               "k.py:12:8: T.gemm: accumulator C_f[0:64, 0:64] is [64, 64] but A x B is [128, 64]");
  expect_error(gemm({128, 32}, {32, 64}, {128, 64}, Scope::kShared, Scope::kShared, f16, false,
                    false),
               ErrorKind::kValueError,
               "k.py:12:8: T.gemm: accumulator C C_f is shared; expected a fragment buffer");
  expect_error(gemm({128, 32}, {32, 64}, {128, 64}, Scope::kLocal, Scope::kFragment, f16, false,
                    false),
               ErrorKind::kValueError,
               "k.py:12:8: T.gemm: operand A A_s is local; expected a shared or fragment buffer");
  expect_error(gemm({128, 32}, {32, 64}, {128, 64}, Scope::kShared, Scope::kFragment,
                    DataType::bfloat16(), false, false),
               ErrorKind::kTypeError,
               "k.py:12:8: T.gemm: operands A_s (float16) and B_s (bfloat16) differ in dtype");
  expect_error(gemm({2, 128, 32}, {32, 64}, {128, 64}, Scope::kShared, Scope::kFragment, f16,
                    false, false),
               ErrorKind::kValueError,
               "k.py:12:8: T.gemm: operand A A_s[0:2, 0:128, 0:32] is [2, 128, 32]; expected a "
               "2-D tile");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer, Buffer, Expr) {
          Buffer S = b.alloc("S", {4, 4}, f16, Scope::kShared);
          Buffer F = b.alloc("F", {4, 4}, f32, Scope::kFragment);
          b.gemm(corner(S, {0, 0}), whole(S), whole(F));
        });
      },
      ErrorKind::kValueError,
      "f: T.gemm: the operand A S[0, 0] is a start corner; give its extents (a slice or the "
      "whole buffer)");
}

TEST(VerifyErrors, Reduce) {
  auto reduce = [](std::vector<Expr> dst, int dim) {
    return [=] {
      build([=](TileBuilder& b, Buffer, Buffer, Expr) {
        Buffer F = b.alloc("acc", {4, 8}, f32, Scope::kFragment);
        Buffer R = b.alloc("row", dst, f32, Scope::kFragment);
        b.reduce(ReduceKind::kMax, whole(F), whole(R), dim, true, kAt);
      });
    };
  };
  EXPECT_NO_THROW(reduce({4}, 1)());
  EXPECT_NO_THROW(reduce({8}, 0)());
  expect_error(reduce({8}, 1), ErrorKind::kValueError,
               "k.py:12:8: T.reduce_max: destination row[0:8] is [8] but acc[0:4, 0:8] reduced "
               "along dim 1 is [4]");
  expect_error(reduce({4}, 2), ErrorKind::kValueError,
               "k.py:12:8: T.reduce_max: dim 2 is out of range for acc[0:4, 0:8] (rank 2)");
}

TEST(VerifyErrors, AtomicAdd) {
  EXPECT_NO_THROW(build([](TileBuilder& b, Buffer A, Buffer, Expr bx) {
    b.atomic_add(corner(A, {bx, 0}), 1.0);
  }));
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer A, Buffer, Expr) { b.atomic_add(region(A, {{0, 2}, {0, 1}}), 1.0, kAt); });
      },
      ErrorKind::kValueError,
      "k.py:12:8: T.atomic_add: a scalar value added to A[0:2, 0:1], which is [2, 1]; expected "
      "one element");
  expect_error(
      [] {
        build([](TileBuilder& b, Buffer A, Buffer, Expr) {
          Buffer F = b.alloc("F", {4, 8}, f32, Scope::kFragment);
          b.atomic_add(region(A, {{0, 4}, {0, 4}}), whole(F));
        });
      },
      ErrorKind::kValueError,
      "f: T.atomic_add: source F[0:4, 0:8] and destination A[0:4, 0:4] differ in shape ([4, 8] "
      "vs [4, 4])");
}

TEST(VerifyErrors, BuffersOutOfScope) {
  TileBuilder b("f");
  b.tensor_param("A", {4}, f32);
  b.begin_kernel({1}, {1});
  Buffer S = b.alloc("S", {4}, f32, Scope::kShared);
  b.end_kernel();
  b.begin_kernel({1}, {1});
  b.fill(whole(S), 0, kAt);
  b.end_kernel();
  PrimFunc f = b.finish();
  expect_error([&] { verify(f); }, ErrorKind::kValueError,
               "k.py:12:8: T.fill: shared buffer S is not allocated in this kernel");
  TileBuilder g("g");
  g.begin_kernel({1}, {1});
  Buffer X = Buffer::make("X", {4}, f32, Scope::kGlobal);
  g.fill(whole(X), 0);
  g.end_kernel();
  expect_error([&] { verify(g.finish()); }, ErrorKind::kValueError,
               "g: T.fill: global buffer X is neither a parameter nor made by alloc_global");
}

}  // namespace
}  // namespace tilejit::transform
