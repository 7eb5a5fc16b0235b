// TileBuilder: each method, and each of its errors (kind, exact message).
#include "tilejit/ir/tile_builder.h"

#include <gtest/gtest.h>

#include <string>

#include "common/test_util.h"
#include "tilejit/ir/printer.h"

namespace tilejit::ir {
namespace {

using tilejit::testing::expect_error;

const DataType f32 = DataType::float32();
const DataType f16 = DataType::float16();
const Span kAt{"k.py", 12, 8};

// A builder with A: f32[n], C: f32[n] and an open kernel over ceildiv(n, 128).
struct Open {
  TileBuilder b{"add"};
  Expr n = symbolic("n");
  Buffer A = b.tensor_param("A", {n}, f32);
  Buffer C = b.tensor_param("C", {n}, f32);
  Expr bx = b.begin_kernel({ceildiv(n, 128)}, {128})[0];
};

TEST(TileBuilder, ElementwiseKernel) {
  Open o;
  Buffer S = o.b.alloc("A_s", {128}, f32, Scope::kShared);
  o.b.copy(corner(o.A, {o.bx * 128}), whole(S));
  Expr i = o.b.begin_for("i", 0, 128, ForKind::kParallel);
  o.b.store(S, {i}, load(S, {i}) * 2.0);
  o.b.end_for();
  o.b.copy(whole(S), corner(o.C, {o.bx * 128}));
  o.b.end_kernel();
  PrimFunc f = o.b.finish();
  ASSERT_TRUE(f.is_tile());
  EXPECT_TRUE(f.sources().empty());
  EXPECT_EQ(f.launch.threads, 128);
  ASSERT_EQ(f.launch.grid.size(), 1u);
  EXPECT_EQ(to_string(f.launch.grid[0]), "ceildiv(n, 128)");
  const TileBody* body = f.tile();
  ASSERT_EQ(body->params.size(), 2u);
  EXPECT_EQ(body->params[1].param(), 1);
  EXPECT_EQ(body->kernels().size(), 1u);
  EXPECT_EQ(print(f),
            "func add(A: float32[n], C: float32[n])\n"
            "kernel(bx in [ceildiv(n, 128)], threads tx in [128]):\n"
            "  alloc A_s: shared float32[128]\n"
            "  copy(A[bx * 128], A_s)\n"
            "  for i in parallel(0, 128):\n"
            "    A_s[i] = A_s[i] * 2.0\n"
            "  copy(A_s, C[bx * 128])\n");
}

TEST(TileBuilder, EveryConstruct) {
  TileBuilder b("every");
  Expr M = symbolic("M"), K = symbolic("K");
  Buffer A = b.tensor_param("A", {M, K}, f16);
  Expr alpha = b.scalar_param("alpha", f32);
  EXPECT_EQ(alpha.var_id(), 0u);  // a symbol of the signature
  Buffer ws = b.alloc_global("ws", {M}, f32, WorkspaceInit::kZeroOnce);
  auto bv = b.begin_kernel({M, 2}, {32, 4});
  ASSERT_EQ(bv.size(), 2u);
  Expr ty = b.thread_binding(1);
  Buffer F = b.alloc("acc", {4, 8}, f32, Scope::kFragment);
  Buffer L = b.alloc("v", {1}, f32, Scope::kLocal);
  b.fill(whole(F), 0);
  Expr k = b.begin_for("k", 0, ceildiv(K, 8), ForKind::kPipelined, 2);
  EXPECT_EQ(k.dtype(), DataType::int64());  // a symbolic extent is int64
  b.copy(corner(A, {bv[0] * 4, k * 8}), whole(F));
  b.end_for();
  b.reduce(ReduceKind::kSum, whole(F), whole(L), 1, false);
  Expr t = b.let("t", load(L, {0}) * alpha);
  b.begin_if(t > 0.0);
  b.atomic_add(corner(ws, {bv[0]}), t);
  b.begin_else();
  b.atomic_add(region(ws, {{0, 4}}), region(F, {{0, 4}, {0, 1}}));
  b.end_if();
  b.begin_while(ty < 2);
  b.break_loop();
  b.continue_loop();
  b.end_while();
  b.evaluate(ty);
  b.print(t, "t");
  b.print(whole(F));
  b.gemm(whole(F), whole(F), whole(F), true, false, true, 2);
  b.end_kernel();
  PrimFunc f = b.finish();
  EXPECT_EQ(f.launch.threads, 128);
  ASSERT_EQ(f.tile()->globals.size(), 1u);
  EXPECT_EQ(f.tile()->globals[0]->init, WorkspaceInit::kZeroOnce);
  EXPECT_EQ(f.tile()->scalars[1].var_name(), "alpha");
  EXPECT_EQ(print(f),
            "func every(A: float16[M, K], alpha: float32)\n"
            "global ws: float32[M] init=zero_once\n"
            "kernel(bx, by in [M, 2], threads tx, ty in [32, 4]):\n"
            "  alloc acc: fragment float32[4, 8]\n"
            "  alloc v: local float32[1]\n"
            "  fill(acc, 0.0)\n"
            "  for k in pipelined(0, ceildiv(K, 8), stages=2):\n"
            "    copy(A[bx * 4, k * 8], acc)\n"
            "  reduce_sum(acc, v, dim=1, clear=false)\n"
            "  let t = v[0] * alpha\n"
            "  if t > 0.0:\n"
            "    atomic_add(ws[bx], t)\n"
            "  else:\n"
            "    atomic_add(ws[0:4], acc[0:4, 0:1])\n"
            "  while ty < 2:\n"
            "    break\n"
            "    continue\n"
            "  evaluate(ty)\n"
            "  print(t, \"t\")\n"
            "  print(acc)\n"
            "  gemm(acc, acc, acc, trans_a=true, clear_accum=true, policy=2)\n");
}

TEST(TileBuilder, SeveralKernels) {
  TileBuilder b("two");
  Buffer A = b.tensor_param("A", {4}, f32);
  b.begin_kernel({2}, {1});
  b.fill(whole(A), 1);
  b.end_kernel();
  b.begin_kernel({3}, {64});
  b.fill(whole(A), 2);
  b.end_kernel();
  PrimFunc f = b.finish();
  ASSERT_EQ(f.tile()->kernels().size(), 2u);
  EXPECT_EQ(f.tile()->kernels()[1]->threads, std::vector<int>{64});
  EXPECT_EQ(f.launch.threads, 1);  // the first kernel's
}

TEST(TileBuilder, StoreAndFillConvertTheValue) {
  Open o;
  Buffer S = o.b.alloc("h", {4}, f16, Scope::kLocal);
  o.b.store(S, {0}, load(o.A, {0}));
  o.b.fill(whole(S), 1.5);
  o.b.end_kernel();
  PrimFunc f = o.b.finish();
  EXPECT_NE(print(f).find("h[0] = float16(A[0])"), std::string::npos) << print(f);
  EXPECT_NE(print(f).find("fill(h, float16(1.5))"), std::string::npos) << print(f);
}

// T.use_swizzle: the kernel's KernelStmt::raster, from anywhere inside it;
// enable=false records nothing; the printer shows it on the kernel line.
TEST(TileBuilder, UseSwizzleIsTheKernels) {
  for (RasterOrder order : {RasterOrder::kRow, RasterOrder::kColumn}) {
    TileBuilder b("gemm");
    Expr n = symbolic("n");
    Buffer C = b.tensor_param("C", {n, n}, f32);
    auto blk = b.begin_kernel({ceildiv(n, 16), ceildiv(n, 16)}, {128});
    b.use_swizzle(7, RasterOrder::kColumn, false);  // records nothing
    Expr i = b.begin_for("i", 0, 2, ForKind::kSerial);
    b.use_swizzle(3, order);
    b.store(C, {blk[1], blk[0] + i}, make_float(1.0));
    b.end_for();
    b.end_kernel();
    PrimFunc f = b.finish();
    const KernelStmt* k = f.tile()->kernels()[0];
    EXPECT_EQ(k->raster, (Rasterization{3, order}));
    const std::string o = order == RasterOrder::kRow ? "row" : "col";
    EXPECT_EQ(print(f),
              "func gemm(C: float32[n, n])\n"
              "kernel(bx, by in [ceildiv(n, 16), ceildiv(n, 16)], threads tx in [128], "
              "swizzle(panel_size=3, order=\"" + o + "\")):\n"
              "  for i in serial(0, 2):\n"
              "    C[by, bx + i] = 1.0\n")
        << print(f);
  }
  // Without it a kernel keeps the launch's order, and says nothing of it.
  Open o;
  o.b.end_kernel();
  PrimFunc f = o.b.finish();
  EXPECT_FALSE(f.tile()->kernels()[0]->raster.enabled());
  EXPECT_EQ(print(f), "func add(A: float32[n], C: float32[n])\n"
                      "kernel(bx in [ceildiv(n, 128)], threads tx in [128]):\n"
                      "  pass\n");
}

TEST(TileBuilderErrors, UseSwizzle) {
  TileBuilder b("f");
  expect_error([&] { b.use_swizzle(4, RasterOrder::kRow, true, kAt); }, ErrorKind::kValueError,
               "k.py:12:8: T.use_swizzle: outside a T.Kernel");
  b.begin_kernel({4, 4}, {128});
  expect_error([&] { b.use_swizzle(0); }, ErrorKind::kValueError,
               "f: T.use_swizzle: panel_size must be positive, got 0");
  expect_error([&] { b.use_swizzle(-2, RasterOrder::kRow, false); }, ErrorKind::kValueError,
               "f: T.use_swizzle: panel_size must be positive, got -2");
  b.use_swizzle(4, RasterOrder::kRow, true, Span{"k.py", 3, 4});
  expect_error([&] { b.use_swizzle(8, RasterOrder::kColumn, true, kAt); },
               ErrorKind::kValueError,
               "k.py:12:8: T.use_swizzle: the kernel already has a block order (T.use_swizzle "
               "at k.py:3:4); one per kernel");
}

TEST(TileBuilder, DiagnosticPrefix) {
  EXPECT_EQ(diagnostic_prefix(kAt, "f", "T.copy"), "k.py:12:8: T.copy: ");
  EXPECT_EQ(diagnostic_prefix({}, "f", "T.copy"), "f: T.copy: ");
}

TEST(TileBuilderErrors, Signature) {
  TileBuilder b("f");
  b.tensor_param("A", {4}, f32);
  expect_error([&] { b.tensor_param("A", {4}, f32, kAt); }, ErrorKind::kValueError,
               "k.py:12:8: T.Tensor: parameter 'A' duplicates an earlier name");
  expect_error([&] { b.scalar_param("a b", f32); }, ErrorKind::kValueError,
               "f: T.scalar: parameter name 'a b' is not an identifier");
  expect_error([&] { b.tensor_param("B", {make_float(1.0)}, f32); }, ErrorKind::kTypeError,
               "f: T.Tensor: parameter 'B' dimension 0 (1.0) has dtype float32; expected an "
               "integer");
  expect_error([&] { b.tensor_param("B", {make_var("i") + 1}, f32); }, ErrorKind::kValueError,
               "f: T.Tensor: parameter 'B' dimension 0 uses i, which is not a symbol of the "
               "signature");
  b.begin_kernel({1}, {1});
  expect_error([&] { b.tensor_param("B", {4}, f32); }, ErrorKind::kValueError,
               "f: T.Tensor: parameter 'B' is declared after the body began");
}

TEST(TileBuilderErrors, Kernels) {
  TileBuilder b("f");
  expect_error([&] { b.begin_kernel({}, {128}, kAt); }, ErrorKind::kValueError,
               "k.py:12:8: T.Kernel: 0 grid extents; expected 1 to 3");
  expect_error([&] { b.begin_kernel({1, 1, 1, 1}, {128}); }, ErrorKind::kValueError,
               "f: T.Kernel: 4 grid extents; expected 1 to 3");
  expect_error([&] { b.begin_kernel({4, 0}, {128}); }, ErrorKind::kValueError,
               "f: T.Kernel: grid extent 1 is 0; extents must be positive");
  expect_error([&] { b.begin_kernel({make_float(2.0)}, {128}); }, ErrorKind::kTypeError,
               "f: T.Kernel: grid extent 0 (2.0) has dtype float32; expected an integer");
  expect_error([&] { b.begin_kernel({4}, {}); }, ErrorKind::kValueError,
               "f: T.Kernel: 0 thread extents; expected 1 to 3");
  expect_error([&] { b.begin_kernel({4}, {128, 0}); }, ErrorKind::kValueError,
               "f: T.Kernel: thread extent 1 is 0; extents must be positive");
  expect_error([&] { b.end_kernel(); }, ErrorKind::kValueError,
               "f: T.Kernel: no open T.Kernel to close (the innermost open construct is none)");
  expect_error([&] { b.thread_binding(0, kAt); }, ErrorKind::kValueError,
               "k.py:12:8: T.get_thread_binding: outside a T.Kernel");
  b.begin_kernel({4}, {128}, Span{"k.py", 3, 4});
  expect_error([&] { b.begin_kernel({4}, {128}); }, ErrorKind::kValueError,
               "f: T.Kernel: a T.Kernel inside a T.Kernel opened at k.py:3:4; kernels do not "
               "nest");
  expect_error([&] { b.thread_binding(1); }, ErrorKind::kValueError,
               "f: T.get_thread_binding: dimension 1 of a kernel with 1 thread extent");
  b.begin_for("i", 0, 4, ForKind::kSerial, 0, Span{"k.py", 5, 8});
  expect_error([&] { b.end_kernel(); }, ErrorKind::kValueError,
               "f: T.Kernel: no open T.Kernel to close (the innermost open construct is a "
               "T.serial loop opened at k.py:5:8)");
  expect_error([&] { b.finish(kAt); }, ErrorKind::kValueError,
               "k.py:12:8: finish: a T.serial loop opened at k.py:5:8 is not closed");
}

TEST(TileBuilderErrors, Allocations) {
  TileBuilder b("f");
  expect_error([&] { b.alloc("S", {4}, f32, Scope::kShared, kAt); }, ErrorKind::kValueError,
               "k.py:12:8: T.alloc_shared: outside a T.Kernel");
  b.begin_kernel({1}, {1});
  expect_error([&] { b.alloc("S", {symbolic("n")}, f32, Scope::kFragment); },
               ErrorKind::kValueError, "f: T.alloc_fragment: 'S' dimension 0 (n) is not a constant");
  expect_error([&] { b.alloc("S", {0}, f32, Scope::kLocal); }, ErrorKind::kValueError,
               "f: T.alloc_local: 'S' dimension 0 is 0; dimensions must be positive");
  expect_error([&] { b.alloc("S", {}, f32, Scope::kLocal); }, ErrorKind::kValueError,
               "f: T.alloc_local: 'S' has no dimensions");
  expect_error([&] { b.alloc("1S", {4}, f32, Scope::kShared); }, ErrorKind::kValueError,
               "f: T.alloc_shared: buffer name '1S' is not an identifier");
  expect_error([&] { b.alloc("G", {4}, f32, Scope::kGlobal); }, ErrorKind::kValueError,
               "f: T.alloc_global: 'G': global buffers come from alloc_global");
  Expr i = b.begin_for("i", 0, 4);
  expect_error([&] { b.alloc_global("ws", {i * 2}, f32); }, ErrorKind::kValueError,
               "f: T.alloc_global: 'ws' dimension 0 uses i; a workspace's shape is over the "
               "signature's symbols");
  expect_error([&] { b.alloc_global("ws", {-1}, f32); }, ErrorKind::kValueError,
               "f: T.alloc_global: 'ws' dimension 0 is -1; dimensions must not be negative");
}

TEST(TileBuilderErrors, ControlFlow) {
  TileBuilder b("f");
  expect_error([&] { b.begin_for("i", 0, 4, ForKind::kParallel, 0, kAt); },
               ErrorKind::kValueError, "k.py:12:8: T.Parallel: outside a T.Kernel");
  b.begin_kernel({1}, {1});
  expect_error([&] { b.begin_for("i", 0, make_float(4.0)); }, ErrorKind::kTypeError,
               "f: T.serial: the extent (4.0) has dtype float32; expected an integer");
  expect_error([&] { b.begin_for("i", 0, 4, ForKind::kPipelined, -1); }, ErrorKind::kValueError,
               "f: T.Pipelined: num_stages is -1; expected 0 or more");
  expect_error([&] { b.begin_for("i", 0, 4, ForKind::kUnroll, 2); }, ErrorKind::kValueError,
               "f: T.unroll: num_stages is given for a loop that is not T.Pipelined");
  expect_error([&] { b.end_for(); }, ErrorKind::kValueError,
               "f: end_for: no open loop to close (the innermost open construct is a T.Kernel)");
  expect_error([&] { b.begin_if(Expr(1)); }, ErrorKind::kTypeError,
               "f: if: the condition (1) has dtype int64; expected bool");
  expect_error([&] { b.begin_while(Expr()); }, ErrorKind::kValueError,
               "f: while: the condition is undefined");
  expect_error([&] { b.begin_else(); }, ErrorKind::kValueError,
               "f: else: no open if to close (the innermost open construct is a T.Kernel)");
  expect_error([&] { b.end_if(); }, ErrorKind::kValueError,
               "f: end_if: no open if to close (the innermost open construct is a T.Kernel)");
  expect_error([&] { b.end_while(); }, ErrorKind::kValueError,
               "f: end_while: no open while loop to close (the innermost open construct is a "
               "T.Kernel)");
  expect_error([&] { b.break_loop(kAt); }, ErrorKind::kValueError, "k.py:12:8: break: outside a loop");
  expect_error([&] { b.continue_loop(); }, ErrorKind::kValueError, "f: continue: outside a loop");
  b.begin_if(make_bool(true));
  b.begin_else();
  expect_error([&] { b.begin_else(); }, ErrorKind::kValueError,
               "f: else: no open if to close (the innermost open construct is an else)");
}

TEST(TileBuilderErrors, Statements) {
  Open o;
  expect_error([&] { o.b.store(o.A, {0, 1}, 1.0, kAt); }, ErrorKind::kValueError,
               "k.py:12:8: store: A: 2 indices for a buffer of rank 1");
  expect_error([&] { o.b.store(o.A, {make_float(0.5)}, 1.0); }, ErrorKind::kTypeError,
               "add: store: A index 0 (0.5) has dtype float32; expected an integer");
  expect_error([&] { o.b.store(o.A, {0}, Expr()); }, ErrorKind::kValueError,
               "add: store: A: the value is undefined");
  expect_error([&] { o.b.store(Buffer(), {0}, 1); }, ErrorKind::kValueError,
               "add: store: the buffer is undefined");
  expect_error([&] { o.b.let("t", Expr()); }, ErrorKind::kValueError,
               "add: let: 't': the value is undefined");
  expect_error([&] { o.b.let("t t", 1); }, ErrorKind::kValueError,
               "add: let: variable name 't t' is not an identifier");
  expect_error([&] { o.b.evaluate(Expr()); }, ErrorKind::kValueError,
               "add: evaluate: the value is undefined");
}

TEST(TileBuilderErrors, TileOps) {
  TileBuilder b("f");
  Buffer A = b.tensor_param("A", {4}, f32);
  expect_error([&] { b.copy(whole(A), whole(A), kAt); }, ErrorKind::kValueError,
               "k.py:12:8: T.copy: outside a T.Kernel");
  b.begin_kernel({1}, {1});
  expect_error([&] { b.copy(Region{}, whole(A)); }, ErrorKind::kValueError,
               "f: T.copy: the source is undefined");
  expect_error([&] { b.copy(whole(A), corner(A, {make_float(1.0)})); }, ErrorKind::kTypeError,
               "f: T.copy: the destination A index 0 (1.0) has dtype float32; expected an integer");
  expect_error([&] { b.gemm(whole(A), Region{}, whole(A)); }, ErrorKind::kValueError,
               "f: T.gemm: the operand B is undefined");
  expect_error([&] { b.fill(whole(A), Expr()); }, ErrorKind::kValueError,
               "f: T.fill: the value is undefined");
  expect_error([&] { b.reduce(ReduceKind::kAbsMax, whole(A), Region{}, 0); },
               ErrorKind::kValueError, "f: T.reduce_absmax: the destination is undefined");
  expect_error([&] { b.atomic_add(whole(A), Expr()); }, ErrorKind::kValueError,
               "f: T.atomic_add: the value is undefined");
  expect_error([&] { b.atomic_add(whole(A), Region{}); }, ErrorKind::kValueError,
               "f: T.atomic_add: the source is undefined");
  expect_error([&] { b.print(Expr()); }, ErrorKind::kValueError, "f: T.print: the value is undefined");
  expect_error([&] { b.print(Region{}); }, ErrorKind::kValueError,
               "f: T.print: the buffer is undefined");
}

TEST(TileBuilderErrors, Finish) {
  TileBuilder b("f");
  b.tensor_param("A", {4}, f32);
  expect_error([&] { b.finish(kAt); }, ErrorKind::kValueError,
               "k.py:12:8: finish: the function has no T.Kernel");
  b.begin_kernel({1}, {1});
  b.end_kernel();
  b.finish();
  expect_error([&] { b.begin_kernel({1}, {1}); }, ErrorKind::kValueError,
               "f: T.Kernel: the function is already finished");
  // The signature is validated as PrimFuncBuilder validates it.
  TileBuilder r("g");
  r.tensor_param("threads", {4}, f32);
  r.begin_kernel({1}, {1});
  r.end_kernel();
  expect_error([&] { r.finish(); }, ErrorKind::kValueError,
               "g: parameter #0 name 'threads' is reserved (a name the generated wrapper "
               "declares)");
}

}  // namespace
}  // namespace tilejit::ir
