// The printer of statements, regions and functions.
#include "tilejit/ir/printer.h"

#include <gtest/gtest.h>

#include <string>

#include "tilejit/ir/prim_func.h"

namespace tilejit::ir {
namespace {

const DataType f32 = DataType::float32();

TEST(Printer, Regions) {
  Expr n = symbolic("n");
  Buffer A = Buffer::make("A", {n, 64}, f32, Scope::kGlobal, {}, 0);
  Expr k = make_var("k");
  EXPECT_EQ(to_string(whole(A)), "A");
  EXPECT_EQ(to_string(region(A, {{0, 128}, {k * 32, 32}})), "A[0:128, k * 32:k * 32 + 32]");
  EXPECT_EQ(to_string(corner(A, {k * 32, 0})), "A[k * 32, 0]");
  EXPECT_EQ(shape_string(A.shape()), "[n, 64]");
}

TEST(Printer, Statements) {
  Buffer A = Buffer::make("A", {symbolic("n")}, f32, Scope::kGlobal, {}, 0);
  Buffer S = Buffer::make("A_s", {128}, f32, Scope::kShared);
  Buffer F = Buffer::make("acc", {128}, f32, Scope::kFragment);
  Expr bx = make_var("bx"), tx = make_var("tx"), i = make_var("i"), t = make_var("t", f32);
  std::vector<Stmt> body;
  body.push_back(make_stmt<AllocStmt>(S, Span{}));
  body.push_back(make_stmt<AllocStmt>(F, Span{}));
  body.push_back(make_stmt<FillOp>(whole(F), make_float(0.0), Span{}));
  body.push_back(make_stmt<CopyOp>(corner(A, {bx * 128}), whole(S), Span{}));
  Stmt inner = seq({make_stmt<LetStmt>(t, load(S, {i}) * 2.0, Span{}),
                    make_stmt<StoreStmt>(F, std::vector<Expr>{i}, load(F, {i}) + t, Span{})});
  body.push_back(make_stmt<ForStmt>(i, Expr(make_int(0, DataType::int32())),
                                    Expr(make_int(128, DataType::int32())), ForKind::kParallel, 0,
                                    inner, Span{}));
  body.push_back(make_stmt<IfStmt>(eq(bx, 0), make_stmt<BreakStmt>(Span{}),
                                   make_stmt<ContinueStmt>(Span{}), Span{}));
  body.push_back(make_stmt<ReduceOp>(ReduceKind::kMax, whole(F), whole(S), 0, false, Span{}));
  body.push_back(make_stmt<GemmOp>(whole(S), whole(S), whole(F), false, true, true, 1, Span{}));
  body.push_back(make_stmt<AtomicAddOp>(corner(A, {bx}), Region{}, load(F, {0}), Span{}));
  body.push_back(make_stmt<PrintOp>(Expr(), whole(F), "acc", Span{}));
  Stmt k = make_stmt<KernelStmt>(std::vector<Expr>{ceildiv(symbolic("n"), 128)},
                                 std::vector<Expr>{bx}, std::vector<int>{128},
                                 std::vector<Expr>{tx}, seq(std::move(body)), Span{});
  EXPECT_EQ(to_string(k),
            "kernel(bx in [ceildiv(n, 128)], threads tx in [128]):\n"
            "  alloc A_s: shared float32[128]\n"
            "  alloc acc: fragment float32[128]\n"
            "  fill(acc, 0.0)\n"
            "  copy(A[bx * 128], A_s)\n"
            "  for i in parallel(0, 128):\n"
            "    let t = A_s[i] * 2.0\n"
            "    acc[i] = acc[i] + t\n"
            "  if bx == 0:\n"
            "    break\n"
            "  else:\n"
            "    continue\n"
            "  reduce_max(acc, A_s, dim=0, clear=false)\n"
            "  gemm(A_s, A_s, acc, trans_b=true, clear_accum=true, policy=1)\n"
            "  atomic_add(A[bx], acc[0])\n"
            "  print(acc, \"acc\")\n");
}

TEST(Printer, PipelinedLoopAndClashingNames) {
  Expr k1 = make_var("k"), k2 = make_var("k");
  Buffer S = Buffer::make("S", {4}, f32, Scope::kLocal);
  Buffer S2 = Buffer::make("S", {4}, f32, Scope::kLocal);
  Stmt inner = make_stmt<CopyOp>(whole(S), whole(S2), Span{});
  Stmt loop2 = make_stmt<ForStmt>(k2, Expr(2), symbolic("n"), ForKind::kSerial, 0, inner, Span{});
  Stmt loop = make_stmt<ForStmt>(k1, Expr(0), ceildiv(symbolic("K"), 32), ForKind::kPipelined, 3,
                                 loop2, Span{});
  EXPECT_EQ(to_string(loop),
            "for k in pipelined(0, ceildiv(K, 32), stages=3):\n"
            "  for k_1 in serial(2, 2 + n):\n"
            "    copy(S, S_1)\n");
}

TEST(Printer, SourceFunction) {
  PrimFunc f = prim_func("add")
                   .tensor("A", {symbolic("n")}, f32)
                   .scalar("alpha", f32)
                   .body("cpu", "a\nb\n")
                   .body("cuda", "x")
                   .build();
  EXPECT_EQ(print(f),
            "func add(A: float32[n], alpha: float32)\n"
            "source cpu: 2 lines\n"
            "source cuda: 1 lines\n");
}

}  // namespace
}  // namespace tilejit::ir
