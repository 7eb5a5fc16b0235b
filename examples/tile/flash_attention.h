// Flash attention forward built with the C++ builder: the same program as
// examples/tile/flash_attention.py (TileLang's example style), with the
// macros written as C++ helpers that record into the builder where they are
// called. Q, K, V, Output are [batch, seq_len, heads, dim] (batch and seq_len
// symbolic); one block per (query tile, head, batch) walks the K/V tiles
// with an online softmax in fragments, scores in log2 units (exp2).
#pragma once

#include <tilejit/ir/tile_builder.h>
#include <tilejit/tilejit.h>

#include <cmath>

namespace examples::tile {

struct FlashAttentionConfig {
  int64_t heads = 2;
  int64_t dim = 64;
  bool causal = false;
  int64_t block_m = 64;
  int64_t block_n = 64;
  int stages = 1;
  int threads = 128;
  tilejit::DataType dtype = tilejit::DataType::float32();
};

namespace flash_detail {

using tilejit::ir::Buffer;
using tilejit::ir::Expr;
using tilejit::ir::ForKind;
using tilejit::ir::load;
using tilejit::ir::Range;
using tilejit::ir::Region;
using tilejit::ir::TileBuilder;
using tilejit::ir::whole;

inline Expr exp2(const Expr& x) {
  return tilejit::ir::call_intrinsic(tilejit::ir::Intrinsic::kExp2, {x});
}

// X[bz, row0 : row0 + rows, by, :] of a [batch, seq, heads, dim] tensor.
inline Region rows_of(const Buffer& x, const Expr& bz, const Expr& row0, int64_t rows,
                      const Expr& by, int64_t dim) {
  return tilejit::ir::region(x, {Range{bz, 1}, Range{row0, rows}, Range{by, 1}, Range{0, dim}});
}

}  // namespace flash_detail

///   MMA0:    T.copy(K[bz, k*bn:(k+1)*bn, by, :], K_shared)
///            for i, j in T.Parallel(bm, bn):
///                acc_s[i, j] = T.if_then_else(<key visible>, 0, -T.infinity(acc_s.dtype))
///            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
///   Softmax: T.copy(scores_max, scores_max_prev)
///            T.reduce_max(acc_s, scores_max, dim=1, clear=False)
///            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
///            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
///            T.reduce_sum(acc_s, scores_sum, dim=1)
///            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
///            T.copy(acc_s, acc_s_cast)
///   Rescale: acc_o[i, j] *= scores_scale[i]
///   MMA1:    T.copy(V[bz, k*bn:(k+1)*bn, by, :], V_shared); T.gemm(acc_s_cast, V_shared, acc_o)
/// then acc_o /= logsum and the tile goes to Output.
inline tilejit::PrimFunc flash_attention(const FlashAttentionConfig& c) {
  using namespace flash_detail;
  using tilejit::DataType;
  using tilejit::ir::ReduceKind;
  using tilejit::ir::Scope;
  const DataType dt = c.dtype, f32 = DataType::float32();
  const int64_t bm = c.block_m, bn = c.block_n, dim = c.dim;
  const double scale = 1.0 / std::sqrt(double(dim)) * 1.44269504;
  TileBuilder b("flash_attention");
  const Expr batch = tilejit::ir::symbolic("batch"), seq = tilejit::ir::symbolic("seq_len");
  const std::vector<Expr> shape = {batch, seq, Expr(c.heads), Expr(dim)};
  const Buffer Q = b.tensor_param("Q", shape, dt);
  const Buffer K = b.tensor_param("K", shape, dt);
  const Buffer V = b.tensor_param("V", shape, dt);
  const Buffer O = b.tensor_param("Output", shape, dt);
  const auto blk = b.begin_kernel({tilejit::ir::ceildiv(seq, bm), Expr(c.heads), batch}, {c.threads});
  const Expr bx = blk[0], by = blk[1], bz = blk[2];
  const Buffer Q_s = b.alloc("Q_shared", {bm, dim}, dt, Scope::kShared);
  const Buffer K_s = b.alloc("K_shared", {bn, dim}, dt, Scope::kShared);
  const Buffer V_s = b.alloc("V_shared", {bn, dim}, dt, Scope::kShared);
  const Buffer acc_s = b.alloc("acc_s", {bm, bn}, f32, Scope::kFragment);
  const Buffer acc_s_cast = b.alloc("acc_s_cast", {bm, bn}, dt, Scope::kFragment);
  const Buffer acc_o = b.alloc("acc_o", {bm, dim}, f32, Scope::kFragment);
  const Buffer m = b.alloc("scores_max", {bm}, f32, Scope::kFragment);
  const Buffer m_prev = b.alloc("scores_max_prev", {bm}, f32, Scope::kFragment);
  const Buffer sc = b.alloc("scores_scale", {bm}, f32, Scope::kFragment);
  const Buffer sum = b.alloc("scores_sum", {bm}, f32, Scope::kFragment);
  const Buffer logsum = b.alloc("logsum", {bm}, f32, Scope::kFragment);
  const Expr ninf = -tilejit::ir::infinity(f32);

  b.copy(rows_of(Q, bz, bx * bm, bm, by, dim), whole(Q_s));
  b.fill(whole(acc_o), 0.0);
  b.fill(whole(logsum), 0.0);
  b.fill(whole(m), ninf);
  const Expr all = tilejit::ir::ceildiv(seq, bn);
  const Expr steps = c.causal ? tilejit::ir::min(all, tilejit::ir::ceildiv((bx + 1) * bm, bn)) : all;
  const Expr k = b.begin_for("k", 0, steps, ForKind::kPipelined, c.stages);
  {  // MMA0
    b.copy(rows_of(K, bz, k * bn, bn, by, dim), whole(K_s));
    const Expr i = b.begin_for("i", 0, bm, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
    const Expr visible = c.causal ? bx * bm + i >= k * bn + j : k * bn + j < seq;
    b.store(acc_s, {i, j}, tilejit::ir::select(visible, Expr(0.0), ninf));
    b.end_for();
    b.end_for();
    b.gemm(whole(Q_s), whole(K_s), whole(acc_s), false, true, false, /*policy=FullRow*/ 1);
  }
  {  // Softmax
    b.copy(whole(m), whole(m_prev));
    b.reduce(ReduceKind::kMax, whole(acc_s), whole(m), 1, /*clear=*/false);
    Expr i = b.begin_for("i", 0, bm, ForKind::kParallel);
    b.store(sc, {i}, exp2(load(m_prev, {i}) * scale - load(m, {i}) * scale));
    b.end_for();
    i = b.begin_for("i", 0, bm, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
    b.store(acc_s, {i, j}, exp2(load(acc_s, {i, j}) * scale - load(m, {i}) * scale));
    b.end_for();
    b.end_for();
    b.reduce(ReduceKind::kSum, whole(acc_s), whole(sum), 1);
    i = b.begin_for("i", 0, bm, ForKind::kParallel);
    b.store(logsum, {i}, load(logsum, {i}) * load(sc, {i}) + load(sum, {i}));
    b.end_for();
    b.copy(whole(acc_s), whole(acc_s_cast));
  }
  {  // Rescale
    const Expr i = b.begin_for("i", 0, bm, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, dim, ForKind::kParallel);
    b.store(acc_o, {i, j}, load(acc_o, {i, j}) * load(sc, {i}));
    b.end_for();
    b.end_for();
  }
  {  // MMA1
    b.copy(rows_of(V, bz, k * bn, bn, by, dim), whole(V_s));
    b.gemm(whole(acc_s_cast), whole(V_s), whole(acc_o), false, false, false, /*policy=FullRow*/ 1);
  }
  b.end_for();
  {
    const Expr i = b.begin_for("i", 0, bm, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, dim, ForKind::kParallel);
    b.store(acc_o, {i, j}, tilejit::ir::div(load(acc_o, {i, j}), load(logsum, {i})));
    b.end_for();
    b.end_for();
  }
  b.copy(whole(acc_o), rows_of(O, bz, bx * bm, bm, by, dim));
  b.end_kernel();
  return b.finish();
}

}  // namespace examples::tile
