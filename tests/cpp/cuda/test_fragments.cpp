// infer_layouts (backend/cuda/infer_layouts.h, Note [Register accumulators]):
// which fragments of a kernel live in registers, and in which layout, on
// flash attention and on small programs that each break one rule. No GPU
// is needed.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "backend/cuda/fragment_uses.h"
#include "backend/cuda/fragments.h"
#include "backend/cuda/infer_layouts.h"
#include "tile/flash_attention.h"
#include "tile/flash_decoding.h"
#include "tile/tile_kernels.h"
#include "tilejit/ir/tile_builder.h"
#include "tilejit/ir/visitor.h"
#include "tilejit/transform/layout_select.h"
#include "tilejit/transform/predicate.h"
#include "tilejit/transform/verify.h"
#include "tilejit/transform/workspace_plan.h"

namespace tilejit::cuda::testing {
namespace {

namespace ex = ::examples::tile;
using ir::Buffer;
using ir::Expr;
using ir::ForKind;
using ir::Scope;
using ir::whole;

// `f` as the CUDA lowering prepares it.
ir::PrimFunc prepared(const ir::PrimFunc& f) {
  return transform::select_layouts(
      transform::predicate(transform::verify(transform::plan_workspaces(transform::verify(f)))),
      transform::LayoutTarget::kCuda);
}

// The first kernel of `f` laid out for `threads` threads (mma.sync).
LaidOutKernel laid_out(const ir::PrimFunc& f, int threads) {
  return infer_layouts(prepared(f), 0, threads, {}, false);
}

// Buffer name -> its register layout's device type, for the first kernel
// of `f`.
std::map<std::string, std::string> registers_of(const ir::PrimFunc& f, int threads) {
  std::map<std::string, std::string> out;
  for (const ir::Buffer& b : kernel_tiles(*laid_out(f, threads).kernel)) {
    if (const FragmentLayout* l = register_layout(b)) out[b.name()] = layout_type(*l);
  }
  return out;
}

TEST(Fragments, FlashAttentionKeepsEveryFragmentInRegisters) {
  ex::FlashAttentionConfig cfg;
  cfg.dtype = DataType::bfloat16();
  cfg.dim = 128;
  cfg.block_m = 128;
  cfg.block_n = 128;
  cfg.threads = 256;
  const std::string tile = "tilejit::cuda::MmaAcc<128, 128, 8, 1>";
  const std::string rows = "tilejit::cuda::MmaRows<128, 8>";
  const std::map<std::string, std::string> want = {
      {"acc_s", tile},          {"acc_s_cast", tile},     {"acc_o", tile},
      {"scores_max", rows},     {"scores_max_prev", rows}, {"scores_scale", rows},
      {"scores_sum", rows},     {"logsum", rows}};
  EXPECT_EQ(registers_of(ex::flash_attention(cfg), 256), want);
}

// The maxima are a row vector in registers whatever the warp grid: 4 warps
// on a 64 x 64 tile under the Square policy split columns too (2 x 2), and
// then each of the 2 warps of a warp row holds the row's maxima (WR = 2);
// FullCol puts the 4 warps on columns of 16 (and 8 of 8 columns on a
// 64 x 64 tile). The probabilities, copied from the accumulator and the
// second gemm's A, are in registers where the warps own whole rows
// (FullRow); with WN > 1 a warp holds a slice of each row but the gemm
// needs whole rows of A, which no register-to-register copy gives, so they
// stay in shared memory (tests/python/test_tile_fullcol.py: through a
// shared tile and acc_load_shared, they are in registers).
TEST(Fragments, OperandsAndRowsOfAnyWarpGrid) {
  auto program = [](int policy) {
    ir::TileBuilder b("pv");
    const DataType bf = DataType::bfloat16(), f32 = DataType::float32();
    const Buffer S = b.tensor_param("S", {Expr(64), Expr(64)}, bf);
    const Buffer V = b.tensor_param("V", {Expr(64), Expr(64)}, bf);
    const Buffer O = b.tensor_param("O", {Expr(64), Expr(64)}, f32);
    const Buffer M = b.tensor_param("M", {Expr(64)}, f32);
    b.begin_kernel({Expr(1)}, {128});
    const Buffer S_s = b.alloc("S_s", {64, 64}, bf, Scope::kShared);
    const Buffer V_s = b.alloc("V_s", {64, 64}, bf, Scope::kShared);
    const Buffer acc = b.alloc("acc", {64, 64}, f32, Scope::kFragment);
    const Buffer p = b.alloc("p", {64, 64}, bf, Scope::kFragment);
    const Buffer out = b.alloc("out", {64, 64}, f32, Scope::kFragment);
    const Buffer m = b.alloc("m", {64}, f32, Scope::kFragment);
    b.copy(whole(S), whole(S_s));
    b.copy(whole(V), whole(V_s));
    b.gemm(whole(S_s), whole(V_s), whole(acc), false, false, true, policy);
    b.reduce(ir::ReduceKind::kMax, whole(acc), whole(m), 1);
    b.copy(whole(acc), whole(p));
    b.gemm(whole(p), whole(V_s), whole(out), false, false, true, policy);
    b.copy(whole(out), whole(O));
    b.copy(whole(m), whole(M));
    b.end_kernel();
    return b.finish();
  };
  const std::map<std::string, std::string> full_row = {
      {"acc", "tilejit::cuda::MmaAcc<64, 64, 4, 1>"},
      {"p", "tilejit::cuda::MmaAcc<64, 64, 4, 1>"},
      {"out", "tilejit::cuda::MmaAcc<64, 64, 4, 1>"},
      {"m", "tilejit::cuda::MmaRows<64, 4>"}};
  EXPECT_EQ(registers_of(program(/*FullRow*/ 1), 128), full_row);
  const std::map<std::string, std::string> square = {
      {"acc", "tilejit::cuda::MmaAcc<64, 64, 2, 2>"},
      {"out", "tilejit::cuda::MmaAcc<64, 64, 2, 2>"},
      {"m", "tilejit::cuda::MmaRows<64, 2, 2>"}};
  EXPECT_EQ(registers_of(program(/*Square*/ 0), 128), square);
  const std::map<std::string, std::string> full_col = {
      {"acc", "tilejit::cuda::MmaAcc<64, 64, 1, 4>"},
      {"out", "tilejit::cuda::MmaAcc<64, 64, 1, 4>"},
      {"m", "tilejit::cuda::MmaRows<64, 1, 4>"}};
  EXPECT_EQ(registers_of(program(/*FullCol*/ 2), 128), full_col);
  EXPECT_EQ(registers_of(program(/*FullCol*/ 2), 256).at("m"), "tilejit::cuda::MmaRows<64, 1, 8>");
}

// A T.Parallel loop over a row vector runs each thread's own rows, four
// threads to a row: a store there to memory is made by one of them (the
// row's leader()), so it keeps the row vectors in registers, unless the
// nest also reads what it stores (the threads of a row could then read
// each other's store), which keeps it a block-wide loop over rows in
// shared memory.
TEST(Fragments, RowLoopsStoreOnceToMemory) {
  enum class Store { kRegisters, kMemory, kReadAndWrite };
  auto program = [](Store store) {
    ir::TileBuilder b("rows");
    const DataType bf = DataType::bfloat16(), f32 = DataType::float32();
    const Buffer A = b.tensor_param("A", {Expr(64), Expr(64)}, bf);
    const Buffer L = b.tensor_param("L", {Expr(64)}, f32);
    b.begin_kernel({Expr(1)}, {128});
    const Buffer A_s = b.alloc("A_s", {64, 64}, bf, Scope::kShared);
    const Buffer acc = b.alloc("acc", {64, 64}, f32, Scope::kFragment);
    const Buffer m = b.alloc("m", {64}, f32, Scope::kFragment);
    const Buffer e = b.alloc("e", {64}, f32, Scope::kFragment);
    b.copy(whole(A), whole(A_s));
    b.gemm(whole(A_s), whole(A_s), whole(acc), false, true, true, 1);
    b.reduce(ir::ReduceKind::kSum, whole(acc), whole(m), 1);
    const Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
    switch (store) {
      case Store::kRegisters: b.store(e, {i}, ir::load(m, {i}) * 2.0); break;
      case Store::kMemory: b.store(L, {i}, ir::load(m, {i}) * 2.0); break;
      case Store::kReadAndWrite: b.store(L, {i}, ir::load(L, {i}) + ir::load(m, {i})); break;
    }
    b.end_for();
    b.copy(whole(e), whole(L));
    b.end_kernel();
    return b.finish();
  };
  const std::string tile = "tilejit::cuda::MmaAcc<64, 64, 4, 1>";
  const std::string rows = "tilejit::cuda::MmaRows<64, 4>";
  EXPECT_EQ(registers_of(program(Store::kRegisters), 128),
            (std::map<std::string, std::string>{{"acc", tile}, {"m", rows}, {"e", rows}}));
  EXPECT_EQ(registers_of(program(Store::kMemory), 128),
            (std::map<std::string, std::string>{{"acc", tile}, {"m", rows}}));
  EXPECT_EQ(registers_of(program(Store::kReadAndWrite), 128),
            (std::map<std::string, std::string>{{"acc", tile}}));
}

// Note [Register budget]: TileLang's MLA decoding (block_H 64, 8 warps,
// FullCol, a 512-column output) would hold 248 registers of fragments a
// thread with its row vectors and probabilities held alike by the 8 warps
// of its 8-column warp tiles; those stay in shared memory and the scores
// take 16-column warp tiles (2 x 4), so each warp reads A 4 times over, not
// 8. The same program with a 64-column output keeps everything in
// registers.
TEST(Fragments, FragmentsHeldAlikeYieldToTheRegisterBudget) {
  auto program = [](int64_t dim) {
    ir::TileBuilder b("mla");
    const DataType f16 = DataType::float16(), f32 = DataType::float32();
    const Buffer Q = b.tensor_param("Q", {Expr(64), Expr(dim)}, f16);
    const Buffer KV = b.tensor_param("KV", {Expr(64), Expr(dim)}, f16);
    const Buffer O = b.tensor_param("O", {Expr(64), Expr(dim)}, f32);
    const Buffer M = b.tensor_param("M", {Expr(64)}, f32);
    b.begin_kernel({Expr(1)}, {256});
    const Buffer Q_s = b.alloc("Q_s", {64, dim}, f16, Scope::kShared);
    const Buffer KV_s = b.alloc("KV_s", {64, dim}, f16, Scope::kShared);
    const Buffer S_s = b.alloc("S_s", {64, 64}, f16, Scope::kShared);
    const Buffer acc_s = b.alloc("acc_s", {64, 64}, f32, Scope::kFragment);
    const Buffer p = b.alloc("p", {64, 64}, f16, Scope::kFragment);
    const Buffer acc_o = b.alloc("acc_o", {64, dim}, f32, Scope::kFragment);
    const Buffer m = b.alloc("m", {64}, f32, Scope::kFragment);
    b.copy(whole(Q), whole(Q_s));
    b.copy(whole(KV), whole(KV_s));
    b.fill(whole(acc_o), Expr(0.0));
    b.gemm(whole(Q_s), whole(KV_s), whole(acc_s), false, true, true, /*FullCol*/ 2);
    b.reduce(ir::ReduceKind::kMax, whole(acc_s), whole(m), 1);
    const Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, dim, ForKind::kParallel);
    b.store(acc_o, {i, j}, ir::load(acc_o, {i, j}) * ir::load(m, {i}));
    b.end_for();
    b.end_for();
    b.copy(whole(acc_s), whole(S_s));
    b.copy(whole(S_s), whole(p));
    b.gemm(whole(p), whole(KV_s), whole(acc_o), false, false, false, /*FullCol*/ 2);
    b.copy(whole(acc_o), whole(O));
    b.copy(whole(m), whole(M));
    b.end_kernel();
    return b.finish();
  };
  EXPECT_EQ(registers_of(program(512), 256),
            (std::map<std::string, std::string>{{"acc_s", "tilejit::cuda::MmaAcc<64, 64, 2, 4>"},
                                                {"acc_o", "tilejit::cuda::MmaAcc<64, 512, 1, 8>"}}));
  EXPECT_EQ(registers_of(program(64), 256),
            (std::map<std::string, std::string>{
                {"acc_s", "tilejit::cuda::MmaAcc<64, 64, 1, 8>"},
                {"acc_o", "tilejit::cuda::MmaAcc<64, 64, 1, 8>"},
                {"p", "tilejit::cuda::MmaAcc<64, 64, 1, 1, 64, 8>"},
                {"m", "tilejit::cuda::MmaRows<64, 1, 8>"}}));
}

// Note [Short accumulators]: a decoding kernel's accumulators of one row
// (multi-head attention: one query head per kv head) are the first row of
// 16-row mma tiles, and their A operands in shared memory get 16 rows.
TEST(Fragments, ShortAccumulatorsAreTheFirstRowsOfAnMmaTile) {
  ex::FlashDecodingConfig cfg;
  cfg.heads = 2;
  cfg.kv_heads = 2;
  cfg.dim = 128;
  cfg.block_n = 64;
  cfg.dtype = DataType::bfloat16();
  const ir::PrimFunc f = ex::flash_decoding(cfg);
  const std::map<std::string, std::string> want = {
      {"acc_s", "tilejit::cuda::MmaAcc<16, 64, 1, 4, 1>"},
      {"acc_o", "tilejit::cuda::MmaAcc<16, 128, 1, 4, 1>"}};
  EXPECT_EQ(registers_of(f, 128), want);
  std::map<std::string, int64_t> rows;
  for (const ir::Buffer& b : kernel_tiles(*laid_out(f, 128).kernel)) {
    if (const ir::SharedLayout* l = b->layout.shared(); l != nullptr && l->rows > dim(b, 0)) {
      rows[b.name()] = l->rows;
    }
  }
  EXPECT_EQ(rows, (std::map<std::string, int64_t>{{"Q_shared", 16}, {"acc_s_cast", 16}}));
}

// Note [Partitioned fragments]: softmax's tiles and row vectors, which no
// gemm touches, live in registers spread over the block's threads; the
// 16-bit input tile is reduced where it is.
ir::PrimFunc softmax_rows(int64_t m, int64_t n, int threads) {
  ir::TileBuilder b("softmax");
  const DataType h = DataType::float16(), f32 = DataType::float32();
  const Buffer X = b.tensor_param("X", {Expr(m * 4), Expr(n)}, h);
  const Buffer Y = b.tensor_param("Y", {Expr(m * 4), Expr(n)}, h);
  const Expr bx = b.begin_kernel({Expr(4)}, {threads})[0];
  const Buffer x = b.alloc("x", {m, n}, h, Scope::kFragment);
  const Buffer xf = b.alloc("xf", {m, n}, f32, Scope::kFragment);
  const Buffer mx = b.alloc("mx", {m}, f32, Scope::kFragment);
  const Buffer sm = b.alloc("sm", {m}, f32, Scope::kFragment);
  b.copy(ir::corner(X, {bx * m, Expr(0)}), whole(x));
  b.reduce(ir::ReduceKind::kMax, whole(x), whole(mx), 1);
  {
    const Expr i = b.begin_for("i", 0, m, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, n, ForKind::kParallel);
    b.store(xf, {i, j}, ir::call_intrinsic(ir::Intrinsic::kExp, {ir::cast(f32, ir::load(x, {i, j})) - ir::load(mx, {i})}));
    b.end_for();
    b.end_for();
  }
  b.reduce(ir::ReduceKind::kSum, whole(xf), whole(sm), 1);
  {
    const Expr i = b.begin_for("i", 0, m, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, n, ForKind::kParallel);
    b.store(x, {i, j}, ir::cast(h, ir::div(ir::load(xf, {i, j}), ir::load(sm, {i}))));
    b.end_for();
    b.end_for();
  }
  b.copy(whole(x), ir::corner(Y, {bx * m, Expr(0)}));
  b.end_kernel();
  return b.finish();
}

TEST(Fragments, TilesNoGemmTouchesArePartitionedOverTheThreads) {
  // One row of 8192: a row per 128 threads, runs of 8 (16 bytes of fp16).
  const std::string wide = "tilejit::cuda::PartTile<1, 8192, 1, 128, 8>";
  const std::string wide_rows = "tilejit::cuda::PartRows<1, 1, 128>";
  EXPECT_EQ(registers_of(softmax_rows(1, 8192, 128), 128),
            (std::map<std::string, std::string>{
                {"x", wide}, {"xf", wide}, {"mx", wide_rows}, {"sm", wide_rows}}));
  // 64 x 64: 8 threads per row (8 runs of 8), 16 thread rows of 4 rows.
  const std::string square = "tilejit::cuda::PartTile<64, 64, 16, 8, 8>";
  const std::string square_rows = "tilejit::cuda::PartRows<64, 16, 8>";
  EXPECT_EQ(registers_of(softmax_rows(64, 64, 128), 128),
            (std::map<std::string, std::string>{
                {"x", square}, {"xf", square}, {"mx", square_rows}, {"sm", square_rows}}));
  // 2 x 64 over 128 threads: no run length leaves whole thread rows for
  // 2 rows (64 threads per row at runs of 1 is 2 thread rows, one element
  // each): that is the layout.
  EXPECT_EQ(registers_of(softmax_rows(2, 64, 128), 128).at("x"),
            "tilejit::cuda::PartTile<2, 64, 2, 64, 1>");
  // More than kMaxAccRegisters elements a thread: shared memory.
  EXPECT_TRUE(registers_of(softmax_rows(4, 8192, 128), 128).empty());
}

// The examples' norms keep every fragment in registers: RMSNorm's tiles of
// 8 rows of 256 (32 threads a row) and softmax's 4 rows of 256.
TEST(Fragments, TheExampleNormsKeepEveryFragmentInRegisters) {
  for (const auto& [f, want] :
       {std::pair{ex::rms_norm(256), std::string("tilejit::cuda::PartTile<8, 256, 4, 32, 8>")},
        std::pair{ex::softmax(256), std::string("tilejit::cuda::PartTile<4, 256, 4, 32, 8>")}}) {
    const LaidOutKernel l = laid_out(f, 128);
    EXPECT_TRUE(l.reasons.kept_shared.empty()) << f.name << ": " << l.reasons.kept_shared.size()
                                               << " fragment(s) in shared memory";
    const std::map<std::string, std::string> regs = registers_of(f, 128);
    ASSERT_FALSE(regs.empty()) << f.name;
    bool tile = false;
    for (const auto& [name, type] : regs) tile = tile || type == want;
    EXPECT_TRUE(tile) << f.name << ": no fragment is a " << want;
  }
}

// Where a partitioned tile meets an mma accumulator in a T.Parallel nest,
// the accumulator keeps its layout and the other tile goes to shared memory.
TEST(Fragments, AnMmaTileWinsANestOverAPartitionedOne) {
  ir::TileBuilder b("mixed");
  const DataType bf = DataType::bfloat16(), f32 = DataType::float32();
  const Buffer A = b.tensor_param("A", {Expr(64), Expr(64)}, bf);
  const Buffer C = b.tensor_param("C", {Expr(64), Expr(64)}, f32);
  b.begin_kernel({Expr(1)}, {128});
  const Buffer A_s = b.alloc("A_s", {64, 64}, bf, Scope::kShared);
  const Buffer acc = b.alloc("acc", {64, 64}, f32, Scope::kFragment);
  const Buffer bias = b.alloc("bias", {64, 64}, f32, Scope::kFragment);
  const Buffer other = b.alloc("other", {64, 64}, f32, Scope::kFragment);
  b.copy(whole(A), whole(A_s));
  b.copy(whole(C), whole(bias));
  b.copy(whole(C), whole(other));
  b.gemm(whole(A_s), whole(A_s), whole(acc), false, true, true, 1);
  const Expr i = b.begin_for("i", 0, 64, ForKind::kParallel);
  const Expr j = b.begin_for("j", 0, 64, ForKind::kParallel);
  b.store(acc, {i, j}, ir::load(acc, {i, j}) + ir::load(bias, {i, j}));
  b.end_for();
  b.end_for();
  const Expr k = b.begin_for("k", 0, 64, ForKind::kParallel);
  const Expr l = b.begin_for("l", 0, 64, ForKind::kParallel);
  b.store(other, {k, l}, ir::load(other, {k, l}) * 2.0);
  b.end_for();
  b.end_for();
  b.copy(whole(acc), whole(C));
  b.copy(whole(other), whole(C));
  b.end_kernel();
  EXPECT_EQ(registers_of(b.finish(), 128),
            (std::map<std::string, std::string>{
                {"acc", "tilejit::cuda::MmaAcc<64, 64, 4, 1>"},
                {"other", "tilejit::cuda::PartTile<64, 64, 16, 8, 8>"}}));
}

// Note [1-D and replicated fragments]: TileLang's online softmax. The 1-D
// tiles are one row of a partitioned tile over the threads, the
// one-element fragments (written at block level, read in the nests)
// every thread's own; a whole reduction goes from one to the other.
ir::PrimFunc online_softmax(int64_t bn, int threads) {
  ir::TileBuilder b("online_softmax");
  const DataType h = DataType::float16(), f32 = DataType::float32();
  const Buffer X = b.tensor_param("X", {Expr(4), Expr(bn * 2)}, h);
  const Buffer Y = b.tensor_param("Y", {Expr(4), Expr(bn * 2)}, h);
  const Expr bx = b.begin_kernel({Expr(4)}, {threads})[0];
  const Buffer x = b.alloc("x", {bn}, h, Scope::kFragment);
  const Buffer y = b.alloc("y", {bn}, h, Scope::kFragment);
  const Buffer lse = b.alloc("lse", {1}, f32, Scope::kFragment);
  const Buffer max_x = b.alloc("max_x", {1}, h, Scope::kFragment);
  const Buffer exp_x = b.alloc("exp_x", {bn}, f32, Scope::kFragment);
  const Buffer sum_exp_x = b.alloc("sum_exp_x", {1}, f32, Scope::kFragment);
  auto exp2 = [](Expr e) { return ir::call_intrinsic(ir::Intrinsic::kExp2, {e}); };
  auto f = [&](Expr e) { return ir::cast(f32, e); };
  // Row bx, columns [k * bn, (k + 1) * bn) of X or Y.
  auto chunk = [&](const Buffer& t, Expr k) {
    return ir::Region{t, {ir::Range{bx, Expr(1)}, ir::Range{k * bn, Expr(bn)}}};
  };
  b.fill(whole(lse), Expr(-1e30));
  {
    const Expr k = b.begin_for("k", 0, 2, ForKind::kSerial);
    b.copy(chunk(X, k), whole(x));
    b.reduce(ir::ReduceKind::kMax, whole(x), whole(max_x), 0);
    const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
    b.store(exp_x, {j}, exp2(f(ir::load(x, {j})) - f(ir::load(max_x, {Expr(0)}))));
    b.end_for();
    b.reduce(ir::ReduceKind::kSum, whole(exp_x), whole(sum_exp_x), 0);
    const Expr m = f(ir::load(max_x, {Expr(0)}));
    b.store(lse, {Expr(0)},
            m + ir::call_intrinsic(ir::Intrinsic::kLog2,
                                   {exp2(ir::load(lse, {Expr(0)}) - m) +
                                    ir::load(sum_exp_x, {Expr(0)})}));
    b.end_for();
  }
  {
    const Expr k = b.begin_for("k", 0, 2, ForKind::kSerial);
    b.copy(chunk(X, k), whole(x));
    const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
    b.store(y, {j}, ir::cast(h, exp2(f(ir::load(x, {j})) - ir::load(lse, {Expr(0)}))));
    b.end_for();
    b.copy(whole(y), chunk(Y, k));
    b.end_for();
  }
  b.end_kernel();
  return b.finish();
}

TEST(Fragments, OneDimensionalTilesArePartitionedAndOneElementFragmentsReplicated) {
  const std::string tile = "tilejit::cuda::PartTile<1, 8192, 1, 128, 8>";
  const std::string one = "tilejit::cuda::Replicated<1>";
  EXPECT_EQ(registers_of(online_softmax(8192, 128), 128),
            (std::map<std::string, std::string>{{"x", tile},
                                                {"y", tile},
                                                {"exp_x", tile},
                                                {"lse", one},
                                                {"max_x", one},
                                                {"sum_exp_x", one}}));
  // 512 over 256 threads: runs of 2; over 32: one warp, runs of 8.
  EXPECT_EQ(registers_of(online_softmax(512, 256), 256).at("x"),
            "tilejit::cuda::PartTile<1, 512, 1, 256, 2>");
  EXPECT_EQ(registers_of(online_softmax(512, 32), 32).at("x"),
            "tilejit::cuda::PartTile<1, 512, 1, 32, 8>");
  // 64 elements over 128 threads: no partitioned layout; the whole
  // reductions' results then stay with their tiles in shared memory.
  const LaidOutKernel l = laid_out(online_softmax(64, 128), 128);
  EXPECT_EQ(registers_of(online_softmax(64, 128), 128),
            (std::map<std::string, std::string>{{"lse", one}}));
  ASSERT_EQ(l.reasons.kept_shared.size(), 5u);
  for (const auto& [id, d] : l.reasons.kept_shared) {
    EXPECT_TRUE(d.reason.rfind("no partitioned layout of 64 elements over 128 threads", 0) == 0 ||
                d.reason == "the result of a reduction of a 1-D fragment kept in shared memory")
        << d.reason;
  }
}

}  // namespace
}  // namespace tilejit::cuda::testing
