// The CPU lowering of tile IR (src/backend/cpu/tile_codegen.cpp,
// lower_tile_ops.cpp): where tiles live, how loops are written, the
// element-by-element paths, atomics, T.print, and the errors it raises.
// The examples (tests/cpp/examples/test_tile_examples.cpp) check whole
// kernels against references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu_test_util.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/tile_builder.h"

namespace tilejit::cpu::testing {
namespace {

using ir::Buffer;
using ir::corner;
using ir::Expr;
using ir::ForKind;
using ir::load;
using ir::Scope;
using ir::TileBuilder;
using ir::whole;

std::string source_of(const ir::PrimFunc& f, std::vector<std::string> symbols = {}) {
  return cpu_backend().generate_source({&f, symbols});
}

JitOptions options(IndexSpec out_idx) {
  JitOptions o;
  o.out_idx = std::move(out_idx);
  o.target = "cpu";
  return o;
}

// Note [Line directives]: on the CPU too, a statement's lines carry the
// author's file:line, the unit's numbering resumes after each body, and
// g++'s message for an error in a statement's lines names the author's line.
TEST(CpuTile, LineDirectivesNameTheAuthorsLines) {
  TileBuilder b("lines");
  const Buffer X = b.tensor_param("X", {Expr(64)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {1}, ir::Span{"k.py", 3, 5});
  const Buffer L = b.alloc("L", {64}, DataType::float32(), Scope::kShared, ir::Span{"k.py", 4, 9});
  b.copy(whole(X), whole(L), ir::Span{"k.py", 5, 9});
  b.copy(whole(L), whole(X), ir::Span{"k.py", 6, 9});
  b.end_kernel();
  const ir::PrimFunc f = b.finish();
  const std::string src = source_of(f);
  const size_t at = src.find("#line 6 \"k.py\"\n");
  ASSERT_NE(at, std::string::npos) << src;
  EXPECT_NE(src.find("#line 5 \"k.py\"\n"), std::string::npos) << src;
  int physical = 0, restores = 0;
  std::istringstream lines(src);
  std::string text;
  while (std::getline(lines, text)) {
    ++physical;
    if (text.rfind("#line ", 0) == 0 && text.find("\"lines.cpp\"") != std::string::npos) {
      EXPECT_EQ(text, "#line " + std::to_string(physical + 1) + " \"lines.cpp\"") << src;
      ++restores;
    }
  }
  EXPECT_EQ(restores, 1) << src;
  std::string broken = src;
  broken.insert(at + std::string("#line 6 \"k.py\"\n").size(), "int tilejit_broken = ;\n");
  const std::string msg = error_message(
      [&] { cpu_backend().compile(broken, f.name, {}, Device::cpu()); }, ErrorKind::kCompileError);
  EXPECT_NE(msg.find("k.py:6:"), std::string::npos) << msg;
  // An error in the unit's own lines after a body is shown in its source.
  std::string after = src;
  after.insert(after.find('\n', after.find("\"lines.cpp\"")) + 1, "int tilejit_broken = ;\n");
  const std::string msg2 = error_message(
      [&] { cpu_backend().compile(after, f.name, {}, Device::cpu()); }, ErrorKind::kCompileError);
  EXPECT_NE(msg2.find("\nsource around line "), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("| int tilejit_broken = ;"), std::string::npos) << msg2;
}

TEST(CpuTile, SmallTilesOnTheStackLargeOnesOnTheArena) {
  const std::string gemm = source_of(examples::tile::gemm({}), {"M", "K", "N"});
  EXPECT_NE(gemm.find("  tilejit::cpu::Arena tilejit_arena;\n  try {\n    tilejit_arena.allocate(131072);\n"),
            std::string::npos)
      << gemm;
  EXPECT_NE(gemm.find("float* const A_s = tilejit_arena.at<float>(0);  // shared, 32768 bytes\n"),
            std::string::npos);
  EXPECT_NE(gemm.find("float* const C_l = tilejit_arena.at<float>(65536);  // fragment, 65536 bytes\n"),
            std::string::npos);
  const std::string add = source_of(examples::tile::elementwise_add(DataType::float32()), {"M", "N"});
  EXPECT_NE(add.find("alignas(64) float A_s[2048];  // shared\n"), std::string::npos) << add;
  EXPECT_EQ(add.find("tilejit_arena"), std::string::npos) << add;
  EXPECT_NE(add.find("#include \"tilejit/cpu/prelude.h\"\n"), std::string::npos) << add;
  EXPECT_NE(add.find("#include \"tilejit/cpu/tile_ops.h\"\n"), std::string::npos) << add;
}

TEST(CpuTile, TheInnermostParallelLoopCarriesIvdep) {
  const std::string src = source_of(examples::tile::softmax(77), {"M"});
  EXPECT_NE(src.find("        #pragma GCC ivdep\n        for (int64_t j = 0; j < 77; ++j) {"),
            std::string::npos)
      << src;
  EXPECT_EQ(src.find("#pragma GCC ivdep\n      for (int64_t i = 0;"), std::string::npos) << src;
  const std::string gemm = source_of(examples::tile::gemm({}), {"M", "K", "N"});
  EXPECT_NE(gemm.find("// T.Pipelined(num_stages=3): a plain loop on the CPU\n"), std::string::npos);
  EXPECT_NE(gemm.find("tilejit::cpu::gemm<128, 128, 64, false, false, 64, 128, 128>(A_s, B_s, C_l, "
                      "false);"),
            std::string::npos)
      << gemm;
}

// A column of a matrix is not contiguous: copied element by element, with
// the same bounds (rows past M read as 0, and are not written).
TEST(CpuTile, ColumnCopiesGoElementByElement) {
  TileBuilder b("column");
  const Expr M = ir::symbolic("M");
  const Buffer X = b.tensor_param("X", {M, Expr(8)}, DataType::float32());
  const Buffer Y = b.tensor_param("Y", {M}, DataType::float32());
  const Expr bx = b.begin_kernel({ir::ceildiv(M, 16)}, {1})[0];
  const Buffer s = b.alloc("s", {16}, DataType::float32(), Scope::kShared);
  b.copy(ir::region(X, {{bx * 16, Expr(16)}, {Expr(3), Expr(1)}}), whole(s));
  b.copy(whole(s), corner(Y, {bx * 16}));
  b.end_kernel();
  const Kernel k = jit(b.finish(), options({1}));
  for (int64_t m : {5, 16, 37}) {
    Tensor x = tilejit::testing::iota({m, 8});
    Tensor y = k(x);
    for (int64_t i = 0; i < m; ++i) ASSERT_EQ(y.data_as<float>()[i], float(i * 8 + 3)) << m;
  }
}

// A tile loaded from before the start of a tensor reads zeros there.
TEST(CpuTile, ACornerBeforeTheStartReadsZeros) {
  TileBuilder b("shift");
  const Expr N = ir::symbolic("N");
  const Buffer X = b.tensor_param("X", {N}, DataType::float32());
  const Buffer Y = b.tensor_param("Y", {N}, DataType::float32());
  const Expr bx = b.begin_kernel({ir::ceildiv(N, 64)}, {1})[0];
  const Buffer s = b.alloc("s", {64}, DataType::float32(), Scope::kShared);
  b.copy(corner(X, {bx * 64 - 2}), whole(s));
  b.copy(whole(s), corner(Y, {bx * 64}));
  b.end_kernel();
  const Kernel k = jit(b.finish(), options({1}));
  Tensor x = tilejit::testing::iota({100}, 1.f);
  Tensor y = k(x);
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(y.data_as<float>()[i], i < 2 ? 0.f : float(i - 1)) << i;
}

// Every block adds its tile into the same 16 elements, and 1 into a counter.
// Note [CPU lowering of tile IR]: a statement of each thread's own runs in a
// loop over the block's threads, its local in one slot per thread, its let
// in an array; a uniform statement runs once; a collective op under a
// thread range runs once, and that range's own statements loop over it.
TEST(CpuTile, ThreadDependentStatementsLoopOverTheThreads) {
  TileBuilder b("threads");
  const Buffer A = b.tensor_param("A", {Expr(256)}, DataType::float32());
  const Buffer B = b.tensor_param("B", {Expr(256)}, DataType::float32());
  const Expr bx = b.begin_kernel({Expr(2)}, {128})[0];
  const Expr tx = b.thread_binding(0);
  const Buffer acc = b.alloc("acc", {Expr(1)}, DataType::float32(), Scope::kLocal);
  const Buffer S = b.alloc("S", {Expr(128)}, DataType::float32(), Scope::kShared);
  b.store(acc, {Expr(0)}, load(A, {bx * 128 + tx}));
  const Expr v = b.let("v", load(acc, {Expr(0)}) * Expr(2.0));
  b.store(S, {tx}, v);
  b.store(B, {bx}, Expr(7.0));
  b.begin_if(tx >= Expr(64));
  b.fill(whole(S), Expr(1.0));
  b.store(B, {bx * 128 + tx}, load(S, {tx}));
  b.end_if();
  b.end_kernel();
  const std::string src = source_of(b.finish());
  EXPECT_NE(src.find("alignas(64) float acc[128];  // local, one per thread\n"), std::string::npos)
      << src;
  EXPECT_NE(src.find("for (int64_t tilejit_t = 0; tilejit_t < 128; ++tilejit_t) {\n"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("float v_t[128];\n"), std::string::npos) << src;
  EXPECT_NE(src.find("v_t[tilejit_t] = "), std::string::npos) << src;
  EXPECT_NE(src.find("(acc + tilejit_t * 1)[0] = "), std::string::npos) << src;
  // The uniform store, once, outside any thread loop.
  EXPECT_NE(src.find("\n      B(bx) = tilejit::cpu::convert<float>(7.0f);"), std::string::npos)
      << src;
  // The range: the fill once, the store over threads 64..127.
  EXPECT_NE(src.find("{  // if (tx >= 64): threads [64, 128)"), std::string::npos) << src;
  EXPECT_NE(src.find("for (int64_t tilejit_t = 64; tilejit_t < 128; ++tilejit_t) {\n"),
            std::string::npos)
      << src;
  EXPECT_EQ(src.find("if ((tx >= 64))"), std::string::npos) << src;
}

TEST(CpuTile, AtomicAddsFromEveryBlockLand) {
  TileBuilder b("atomics");
  const Expr N = ir::symbolic("N");
  const Buffer X = b.tensor_param("X", {N}, DataType::float32());
  const Buffer Sum = b.tensor_param("Sum", {Expr(16)}, DataType::float32());
  const Buffer Count = b.tensor_param("Count", {Expr(1)}, DataType::int32());
  const Expr bx = b.begin_kernel({ir::ceildiv(N, 16)}, {1})[0];
  const Buffer s = b.alloc("s", {16}, DataType::float32(), Scope::kFragment);
  b.copy(corner(X, {bx * 16}), whole(s));
  b.atomic_add(corner(Sum, {Expr(0)}), whole(s));
  b.atomic_add(corner(Count, {Expr(0)}), ir::make_int(1, DataType::int32()));
  b.end_kernel();
  ScopedThreads threads(2);
  const Kernel k = jit(b.finish(), options({}));
  const int64_t n = 16 * 300 + 5;
  Tensor x = tilejit::testing::iota({n}, 0.f, 0.f);
  for (int64_t i = 0; i < n; ++i) x.data_as<float>()[i] = float(i % 16 + 1);
  Tensor sum = tilejit::testing::iota({16}, 0.f, 0.f);
  Tensor count = empty({1}, DataType::int32());
  count.data_as<int32_t>()[0] = 0;
  k(x, sum, count);
  for (int64_t j = 0; j < 16; ++j) {
    // 300 whole blocks, and the last one's first 5 elements.
    EXPECT_EQ(sum.data_as<float>()[j], float((j + 1) * (300 + (j < 5 ? 1 : 0)))) << j;
  }
  EXPECT_EQ(count.data_as<int32_t>()[0], 301);
}

TEST(CpuTile, PrintWritesOneLinePerValue) {
  TileBuilder b("printer");
  const Buffer X = b.tensor_param("X", {Expr(2), Expr(2)}, DataType::float32());
  const Expr bx = b.begin_kernel({Expr(1), Expr(1)}, {1})[0];
  const Buffer s = b.alloc("s", {2}, DataType::float32(), Scope::kShared);
  b.copy(corner(X, {Expr(1), Expr(0)}), whole(s));
  b.print(bx + 7, "bx");
  b.print(ir::region(s, {{Expr(1), Expr(1)}}), "s");
  b.end_kernel();
  const Kernel k = jit(b.finish(), options({}));
  Tensor x = tilejit::testing::iota({2, 2}, 0.5f);
  ::testing::internal::CaptureStdout();
  k(x);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(),
            "msg='bx' BlockIdx=(0, 0, 0): value=7\n"
            "msg='s' BlockIdx=(0, 0, 0): buffer=s, index=(1), value=3.5\n");
}

// A gemm whose M or N is 1 (one decode row against a tile of keys, a GEMV
// written as a gemm) is a 1 x K or K x 1 matrix, not a 1-D tile.
TEST(CpuTile, GemmWithOneRowOrOneColumn) {
  TileBuilder b("gemv");
  const Buffer X = b.tensor_param("X", {Expr(1), Expr(8)}, DataType::float32());
  const Buffer W = b.tensor_param("W", {Expr(8), Expr(3)}, DataType::float32());
  const Buffer Y = b.tensor_param("Y", {Expr(1), Expr(3)}, DataType::float32());
  const Buffer Z = b.tensor_param("Z", {Expr(3), Expr(1)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {1});
  const Buffer x = b.alloc("x", {1, 8}, DataType::float32(), Scope::kShared);
  const Buffer w = b.alloc("w", {8, 3}, DataType::float32(), Scope::kShared);
  const Buffer y = b.alloc("y", {1, 3}, DataType::float32(), Scope::kFragment);
  const Buffer z = b.alloc("z", {3, 1}, DataType::float32(), Scope::kFragment);
  b.copy(whole(X), whole(x));
  b.copy(whole(W), whole(w));
  b.gemm(whole(x), whole(w), whole(y), false, false, /*clear_accum=*/true);  // [1, 3]
  b.gemm(whole(w), whole(x), whole(z), true, true, /*clear_accum=*/true);    // [3, 1]
  b.copy(whole(y), whole(Y));
  b.copy(whole(z), whole(Z));
  b.end_kernel();
  const Kernel k = jit(b.finish(), options({2, 3}));
  Tensor x_in = tilejit::testing::iota({1, 8}, 1.f), w_in = tilejit::testing::iota({8, 3}, 0.f);
  Outputs out = k(x_in, w_in);
  for (int64_t n = 0; n < 3; ++n) {
    float want = 0;
    for (int64_t i = 0; i < 8; ++i) want += float(i + 1) * float(i * 3 + n);
    EXPECT_EQ(out[0].data_as<float>()[n], want) << n;
    EXPECT_EQ(out[1].data_as<float>()[n], want) << n;
  }
}

// Note [NaN in max and min]: a NaN first, in the middle or last of the
// elements one output reduces makes that output NaN (as torch.amax), for
// T.reduce_max / _min / _absmax over either dimension; the other outputs
// are their rows' or columns' values. X is 40 x 40: a row is vector lanes
// and a scalar tail.
constexpr int64_t kNanSide = 40, kNanAt = 3;  // the NaN's row (dim 1) or column (dim 0)

ir::PrimFunc nan_reduce(ir::ReduceKind kind, int dim) {
  TileBuilder b("nan_reduce");
  const Buffer X = b.tensor_param("X", {Expr(kNanSide), Expr(kNanSide)}, DataType::float32());
  const Buffer Y = b.tensor_param("Y", {Expr(kNanSide)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {128});
  const Buffer s = b.alloc("s", {kNanSide, kNanSide}, DataType::float32(), Scope::kFragment);
  const Buffer d = b.alloc("d", {kNanSide}, DataType::float32(), Scope::kFragment);
  b.copy(whole(X), whole(s));
  b.reduce(kind, whole(s), whole(d), dim);
  b.copy(whole(d), whole(Y));
  b.end_kernel();
  return b.finish();
}

// Mixed signs, so that max, min and absmax differ.
Tensor signed_square() {
  Tensor x = tilejit::testing::iota({kNanSide, kNanSide});
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = float((i * 37) % 101) - 50.f;
  return x;
}

TEST(CpuTile, MaxMinAndAbsMaxReductionsKeepNaN) {
  const ir::ReduceKind kinds[] = {ir::ReduceKind::kMax, ir::ReduceKind::kMin,
                                  ir::ReduceKind::kAbsMax};
  for (ir::ReduceKind kind : kinds) {
    for (int dim : {0, 1}) {
      const Kernel k = jit(nan_reduce(kind, dim), options({1}));
      for (int64_t at : {int64_t(0), kNanSide / 2, kNanSide - 1}) {
        SCOPED_TRACE(::testing::Message() << ir::reduce_kind_name(kind) << " dim " << dim
                                          << " NaN at " << at);
        Tensor x = signed_square();
        float* xs = x.data_as<float>();
        auto elem = [&](int64_t out, int64_t k) -> float& {
          return dim == 1 ? xs[out * kNanSide + k] : xs[k * kNanSide + out];
        };
        elem(kNanAt, at) = std::nanf("");
        Tensor y = k(x);
        for (int64_t out = 0; out < kNanSide; ++out) {
          const float got = y.data_as<float>()[out];
          if (out == kNanAt) {
            EXPECT_TRUE(std::isnan(got)) << got;
            continue;
          }
          float want = kind == ir::ReduceKind::kMin ? INFINITY : 0.f;
          if (kind == ir::ReduceKind::kMax) want = -INFINITY;
          for (int64_t k2 = 0; k2 < kNanSide; ++k2) {
            const float v = elem(out, k2);
            if (kind == ir::ReduceKind::kMax) want = std::max(want, v);
            else if (kind == ir::ReduceKind::kMin) want = std::min(want, v);
            else want = std::max(want, std::abs(v));
          }
          EXPECT_EQ(got, want) << out;
        }
      }
    }
  }
}

// T.max / T.min as a running reduction in a serial loop (m = T.max(m,
// X[3, i])) keep a NaN wherever it comes, as torch.maximum does.
TEST(CpuTile, ScalarMaxAndMinKeepNaN) {
  for (bool is_max : {true, false}) {
    TileBuilder b("nan_running");
    const Buffer X = b.tensor_param("X", {Expr(kNanSide), Expr(kNanSide)}, DataType::float32());
    const Buffer Y = b.tensor_param("Y", {Expr(1)}, DataType::float32());
    b.begin_kernel({Expr(1)}, {1});
    const Buffer m = b.alloc("m", {1}, DataType::float32(), Scope::kLocal);
    b.store(m, {Expr(0)}, load(X, {Expr(kNanAt), Expr(0)}));
    const Expr i = b.begin_for("i", Expr(1), Expr(kNanSide - 1));
    const Expr acc = load(m, {Expr(0)}), xi = load(X, {Expr(kNanAt), i});
    b.store(m, {Expr(0)}, is_max ? ir::max(acc, xi) : ir::min(acc, xi));
    b.end_for();
    b.store(Y, {Expr(0)}, load(m, {Expr(0)}));
    b.end_kernel();
    const Kernel k = jit(b.finish(), options({1}));
    for (int64_t at : {int64_t(0), kNanSide / 2, kNanSide - 1}) {
      Tensor x = signed_square();
      x.data_as<float>()[kNanAt * kNanSide + at] = std::nanf("");
      const Tensor y = k(x);
      const float got = y.data_as<float>()[0];
      EXPECT_TRUE(std::isnan(got)) << (is_max ? "max" : "min") << " NaN at " << at << ": " << got;
    }
    Tensor x = signed_square();
    const float* row = x.data_as<float>() + kNanAt * kNanSide;
    const float want = is_max ? *std::max_element(row, row + kNanSide)
                              : *std::min_element(row, row + kNanSide);
    const Tensor y = k(x);
    EXPECT_EQ(y.data_as<float>()[0], want);
  }
}

// --- errors ------------------------------------------------------------------

// (transform::verify, which the lowering runs first, says it.)
TEST(CpuTile, GemmOnATensorIsAnError) {
  TileBuilder b("gemm_global");
  const Buffer A = b.tensor_param("A", {Expr(16), Expr(16)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {128});
  const Buffer B_s = b.alloc("B_s", {16, 16}, DataType::float32(), Scope::kShared);
  const Buffer C = b.alloc("C", {16, 16}, DataType::float32(), Scope::kFragment);
  b.gemm(whole(A), whole(B_s), whole(C));
  b.end_kernel();
  const ir::PrimFunc f = b.finish();
  EXPECT_EQ(error_message([&] { source_of(f); }, ErrorKind::kValueError),
            "gemm_global: T.gemm: operand A A is global; expected a shared or fragment buffer");
}

// Several T.Kernels run in order, each with its own grid: the second reads
// what every block of the first wrote into a T.alloc_global workspace (each
// of its blocks sums a reversed block of it), so it must start after the
// first ends. One lease serves both.
TEST(CpuTile, KernelsRunInOrderAndShareTheirWorkspaces) {
  TileBuilder b("two");
  const Expr N = ir::symbolic("N");
  const Buffer X = b.tensor_param("X", {N}, DataType::float32());
  const Buffer Y = b.tensor_param("Y", {ir::ceildiv(N, 8)}, DataType::float32());
  const Buffer W = b.alloc_global("W", {ir::ceildiv(N, 8) * 8}, DataType::float32());
  const Expr bx = b.begin_kernel({ir::ceildiv(N, 8)}, {1})[0];
  const Buffer s = b.alloc("s", {8}, DataType::float32(), Scope::kShared);
  b.copy(corner(X, {bx * 8}), whole(s));  // zeros past N
  b.copy(whole(s), corner(W, {bx * 8}));
  b.end_kernel();
  const Expr by = b.begin_kernel({ir::ceildiv(N, 8), Expr(1)}, {4})[0];
  const Buffer t = b.alloc("t", {8}, DataType::float32(), Scope::kFragment);
  const Buffer r = b.alloc("r", {1}, DataType::float32(), Scope::kFragment);
  b.copy(corner(W, {(ir::ceildiv(N, 8) - 1 - by) * 8}), whole(t));
  b.reduce(ir::ReduceKind::kSum, whole(t), whole(r), 0);
  b.store(Y, {by}, load(r, {Expr(0)}));
  b.end_kernel();
  const Kernel k = jit(b.finish(), options({1}));
  const std::string& src = k.source();
  EXPECT_NE(src.find("extern \"C\" int64_t tilejit_entry(const void* tilejit_block,"),
            std::string::npos) << src;
  EXPECT_NE(src.find("extern \"C\" int64_t tilejit_entry_1(const void* tilejit_block,"),
            std::string::npos) << src;
  ASSERT_EQ(k.abi().launches.size(), 2u);
  EXPECT_EQ(k.abi().launches[1].entry, "tilejit_entry_1");
  EXPECT_EQ(k.abi().launches[1].threads[0], 4);
  for (int64_t n : {1, 8, 61, 200}) {
    Tensor x = tilejit::testing::iota({n}, 1.f);
    const int64_t blocks = (n + 7) / 8;
    EXPECT_EQ(k.workspace_bytes_of(x), size_t((blocks * 8 * 4 + 255) / 256 * 256)) << n;
    Tensor y = k(x);
    for (int64_t j = 0; j < blocks; ++j) {
      const int64_t block = blocks - 1 - j;
      float want = 0;
      for (int64_t i = block * 8; i < std::min(n, block * 8 + 8); ++i) want += float(i + 1);
      ASSERT_EQ(y.data_as<float>()[j], want) << n << " " << j;
    }
  }
}

// A grid extent that is not positive names its launch when there are
// several.
TEST(CpuTile, AnEmptyGridOfTheSecondKernelNamesItsLaunch) {
  TileBuilder b("two");
  const Expr N = ir::symbolic("N");
  const Buffer X = b.tensor_param("X", {N}, DataType::float32());
  b.begin_kernel({Expr(1)}, {1});
  b.store(X, {Expr(0)}, ir::make_float(1.0, DataType::float32()));
  b.end_kernel();
  b.begin_kernel({N - 1}, {1});
  b.store(X, {Expr(0)}, ir::make_float(2.0, DataType::float32()));
  b.end_kernel();
  const Kernel k = jit(b.finish(), options({}));
  Tensor x = tilejit::testing::iota({1});
  EXPECT_EQ(error_message([&] { k(x); }, ErrorKind::kValueError),
            "two: launch #1's grid extent 0 = N - 1 evaluates to 0 (N = 1 from X.shape[0]); "
            "every grid extent must be positive");
}

// Note [N-D reductions]: each row's results go to consecutive elements.
TEST(CpuTile, ReduceIntoStridedResultsIsAnError) {
  TileBuilder b("reduce3");
  const Buffer A = b.tensor_param("A", {Expr(2)}, DataType::float32());
  b.begin_kernel({Expr(1)}, {1});
  const Buffer s = b.alloc("s", {2, 2, 2}, DataType::float32(), Scope::kFragment);
  const Buffer d = b.alloc("d", {2, 2, 3}, DataType::float32(), Scope::kFragment);
  b.reduce(ir::ReduceKind::kMax, whole(s),
           ir::region(d, {{Expr(0), Expr(2)}, {Expr(0), Expr(2)}, {Expr(0), Expr(1)}}), 2);
  b.copy(ir::region(d, {{Expr(0), Expr(1)}, {Expr(0), Expr(2)}, {Expr(0), Expr(1)}}), whole(A));
  b.end_kernel();
  const ir::PrimFunc f = b.finish();
  EXPECT_EQ(error_message([&] { source_of(f); }, ErrorKind::kValueError),
            "reduce3: T.reduce_max: destination d[0:2, 0:2, 0:1] does not hold the results of "
            "each row (2 of them) as consecutive elements of a tile (the source s[0:2, 0:2, "
            "0:2] reduced over dim 2)");
}

}  // namespace
}  // namespace tilejit::cpu::testing
