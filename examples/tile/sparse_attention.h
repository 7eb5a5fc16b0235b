// The seed's sparse attention forward built with the C++ builder: the same
// program as examples/tile/sparse_attention.py, in the phase-1 operator's
// exact signature (examples/kernels/sparse_attention.h):
//   Q[b, s, heads, dim], KV[b, s_kv, dim], Indices[b, s, topk] int32 (-1
//   skips), Output[b, s, heads, dim]; workspaces ws_kv[b*s, block, dim],
//   ws_s[b*s, heads, block] f32, ws_p[b*s, heads, block], ws_o[b*s, heads,
//   dim] f32 (out_idx = {3}, workspace_idx = {4, 5, 6, 7}).
// One block per query position gathers each step's KV rows with a T.copy of
// a data-dependent slice (a row outside KV, -1 or a sentinel, reads as
// zeros and is never dereferenced), scores them with T.gemm, masks invalid
// rows to -inf, and folds the step into an online softmax, staging each
// step through the workspaces.
#pragma once

#include <tilejit/ir/tile_builder.h>
#include <tilejit/tilejit.h>

#include <cmath>

namespace examples::tile {

struct SparseAttentionTileConfig {
  int64_t heads = 16;
  int64_t dim = 128;
  int64_t topk = 512;
  int64_t block = 64;
  tilejit::DataType dtype = tilejit::DataType::bfloat16();
};

inline tilejit::PrimFunc sparse_attention_tile(const SparseAttentionTileConfig& c) {
  using tilejit::DataType;
  using tilejit::ir::Buffer;
  using tilejit::ir::Expr;
  using tilejit::ir::ForKind;
  using tilejit::ir::load;
  using tilejit::ir::Range;
  using tilejit::ir::ReduceKind;
  using tilejit::ir::Region;
  using tilejit::ir::Scope;
  using tilejit::ir::select;
  using tilejit::ir::whole;
  const DataType dt = c.dtype, f32 = DataType::float32(), i32 = DataType::int32();
  const int64_t heads = c.heads, dim = c.dim, topk = c.topk, block = c.block;
  const double scale = 1.0 / std::sqrt(double(dim));
  tilejit::ir::TileBuilder b("sparse_attention_fwd");
  const Expr B = tilejit::ir::symbolic("b"), S = tilejit::ir::symbolic("s"),
             S_kv = tilejit::ir::symbolic("s_kv");
  const Expr block_num = B * S;
  const Buffer Q = b.tensor_param("Q", {B, S, heads, dim}, dt);
  const Buffer KV = b.tensor_param("KV", {B, S_kv, dim}, dt);
  const Buffer Idx = b.tensor_param("Indices", {B, S, topk}, i32);
  const Buffer Out = b.tensor_param("Output", {B, S, heads, dim}, dt);
  const Buffer ws_kv = b.tensor_param("ws_kv", {block_num, block, dim}, dt);
  const Buffer ws_s = b.tensor_param("ws_s", {block_num, heads, block}, f32);
  const Buffer ws_p = b.tensor_param("ws_p", {block_num, heads, block}, dt);
  const Buffer ws_o = b.tensor_param("ws_o", {block_num, heads, dim}, f32);
  // ws[bx, :, :] of a [block_num, rows, cols] workspace.
  auto slab = [](const Buffer& ws, const Expr& bx, int64_t rows, int64_t cols) {
    return tilejit::ir::region(ws, {Range{bx, 1}, Range{0, rows}, Range{0, cols}});
  };

  const Expr bx = b.begin_kernel({block_num}, {128})[0];
  const Expr bi = b.let("bi", tilejit::ir::floordiv(bx, S));
  const Expr si = b.let("si", tilejit::ir::floormod(bx, S));
  const Buffer Q_s = b.alloc("Q_s", {heads, dim}, dt, Scope::kShared);
  const Buffer KV_s = b.alloc("KV_s", {block, dim}, dt, Scope::kShared);
  const Buffer P_s = b.alloc("P_s", {heads, block}, dt, Scope::kShared);
  const Buffer acc_s = b.alloc("acc_s", {heads, block}, f32, Scope::kFragment);
  const Buffer acc_o = b.alloc("acc_o", {heads, dim}, f32, Scope::kFragment);
  const Buffer m_i = b.alloc("m_i", {heads}, f32, Scope::kFragment);
  const Buffer m_prev = b.alloc("m_prev", {heads}, f32, Scope::kFragment);
  const Buffer scale_i = b.alloc("scale_i", {heads}, f32, Scope::kFragment);
  const Buffer sum_i = b.alloc("sum_i", {heads}, f32, Scope::kFragment);
  const Buffer l_i = b.alloc("l_i", {heads}, f32, Scope::kFragment);
  const Expr ninf = -tilejit::ir::infinity(f32);

  b.copy(tilejit::ir::region(Q, {Range{bi, 1}, Range{si, 1}, Range{0, heads}, Range{0, dim}}),
         whole(Q_s));
  b.fill(whole(m_i), ninf);
  b.fill(whole(l_i), 0.0);
  b.fill(whole(acc_o), 0.0);
  b.copy(whole(acc_o), slab(ws_o, bx, heads, dim));
  const Expr k = b.begin_for("k", 0, tilejit::ir::ceildiv(Expr(topk), Expr(block)),
                             ForKind::kPipelined, 1);
  {  // gather: a row outside KV (-1, a sentinel, past topk) copies as zeros
    const Expr j = b.begin_for("j", 0, block, ForKind::kSerial);
    const Expr t = k * block + j;
    const Expr row = b.let("row", select(t < topk, load(Idx, {bi, si, t}), Expr(-1)));
    b.copy(tilejit::ir::region(KV, {Range{bi, 1}, Range{row, 1}, Range{0, dim}}),
           tilejit::ir::region(ws_kv, {Range{bx, 1}, Range{j, 1}, Range{0, dim}}));
    b.end_for();
  }
  b.copy(slab(ws_kv, bx, block, dim), whole(KV_s));
  b.gemm(whole(Q_s), whole(KV_s), whole(acc_s), false, true, /*clear_accum=*/true);
  {
    const Expr h = b.begin_for("h", 0, heads, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, block, ForKind::kParallel);
    const Expr t = k * block + j;
    const Expr row = load(Idx, {bi, si, t});
    const Expr valid =
        tilejit::ir::logical_and(tilejit::ir::logical_and(t < topk, row >= 0), row < S_kv);
    b.store(acc_s, {h, j}, select(valid, load(acc_s, {h, j}) * scale, ninf));
    b.end_for();
    b.end_for();
  }
  b.copy(whole(acc_s), slab(ws_s, bx, heads, block));
  b.copy(slab(ws_s, bx, heads, block), whole(acc_s));
  b.copy(whole(m_i), whole(m_prev));
  b.reduce(ReduceKind::kMax, whole(acc_s), whole(m_i), 1, /*clear=*/false);
  auto exp = [](const Expr& x) {
    return tilejit::ir::call_intrinsic(tilejit::ir::Intrinsic::kExp, {x});
  };
  {
    const Expr h = b.begin_for("h", 0, heads, ForKind::kParallel);
    b.store(scale_i, {h},
            select(tilejit::ir::eq(load(m_i, {h}), ninf), Expr(1.0),
                   exp(load(m_prev, {h}) - load(m_i, {h}))));
    b.end_for();
  }
  {
    const Expr h = b.begin_for("h", 0, heads, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, block, ForKind::kParallel);
    b.store(acc_s, {h, j},
            select(tilejit::ir::eq(load(acc_s, {h, j}), ninf), Expr(0.0),
                   exp(load(acc_s, {h, j}) - load(m_i, {h}))));
    b.end_for();
    b.end_for();
  }
  b.copy(whole(acc_s), slab(ws_p, bx, heads, block));
  b.copy(slab(ws_p, bx, heads, block), whole(P_s));
  b.copy(whole(P_s), whole(acc_s));  // the probabilities as stored
  b.reduce(ReduceKind::kSum, whole(acc_s), whole(sum_i), 1);
  {
    const Expr h = b.begin_for("h", 0, heads, ForKind::kParallel);
    b.store(l_i, {h}, load(l_i, {h}) * load(scale_i, {h}) + load(sum_i, {h}));
    b.end_for();
  }
  b.copy(slab(ws_o, bx, heads, dim), whole(acc_o));
  {
    const Expr h = b.begin_for("h", 0, heads, ForKind::kParallel);
    const Expr d = b.begin_for("d", 0, dim, ForKind::kParallel);
    b.store(acc_o, {h, d}, load(acc_o, {h, d}) * load(scale_i, {h}));
    b.end_for();
    b.end_for();
  }
  b.gemm(whole(P_s), whole(KV_s), whole(acc_o));
  b.copy(whole(acc_o), slab(ws_o, bx, heads, dim));
  b.end_for();
  {
    const Expr h = b.begin_for("h", 0, heads, ForKind::kParallel);
    const Expr d = b.begin_for("d", 0, dim, ForKind::kParallel);
    b.store(acc_o, {h, d},
            select(load(l_i, {h}) > 0.0, tilejit::ir::div(load(acc_o, {h, d}), load(l_i, {h})),
                   Expr(0.0)));
    b.end_for();
    b.end_for();
  }
  b.copy(whole(acc_o),
         tilejit::ir::region(Out, {Range{bi, 1}, Range{si, 1}, Range{0, heads}, Range{0, dim}}));
  b.end_kernel();
  return b.finish();
}

inline tilejit::JitOptions sparse_attention_tile_options() {
  tilejit::JitOptions o;
  o.out_idx = {3};
  o.workspace_idx = {4, 5, 6, 7};
  o.target = "cpu";
  return o;
}

}  // namespace examples::tile
