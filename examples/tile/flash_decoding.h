// Flash-decoding built with the C++ builder: the same program as
// examples/tile/flash_decoding.py. Q and Output are [batch, heads, dim], K
// and V [batch, seqlen_kv, kv_heads, dim] (batch and seqlen_kv symbolic);
// query head h reads kv head h / (heads / kv_heads).
//
// Two kernels run in order on one stream and share one workspace lease:
//   split   (batch, kv_heads, num_split): each block walks its share of the
//           ceildiv(seqlen_kv, block_n) K/V blocks with an online softmax
//           (log2 units, exp2) for the query heads of its kv head, and writes
//           its normalised partial output and log-sum-exp to the
//           T.alloc_global workspaces Output_partial and glse;
//   combine (heads, batch): weighs the partials by exp2(lse - lse_total).
// A split past the end walks no block: its lse is -inf, its weight 0.
#pragma once

#include <tilejit/ir/tile_builder.h>
#include <tilejit/tilejit.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace examples::tile {

struct FlashDecodingConfig {
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t dim = 64;
  int64_t num_split = 4;
  int64_t block_n = 32;
  tilejit::DataType dtype = tilejit::DataType::float32();
};

///   split:   T.copy(Q[bx, by*group:(by+1)*group, :], Q_shared)
///            for k in T.Pipelined(loop_range):       # this split's blocks
///                T.copy(K[bx, start:start+bn, by, :], K_shared)
///                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, clear_accum=True)
///                acc_s[i, j] = T.if_then_else(start + j < seqlen_kv, acc_s[i, j], -inf)
///                <online softmax, as flash attention's>
///                T.copy(V[...], V_shared); T.gemm(acc_s_cast, V_shared, acc_o)
///            glse[bx, heads of by, bz] = log2(logsum) + scores_max * scale (or -inf)
///            Output_partial[bx, heads of by, bz, :] = acc_o / logsum (or 0)
///   combine: lse_max = max_k glse[bid, hid, k]
///            lse_total = log2(sum_k exp2(glse - lse_max)) + lse_max
///            Output[bid, hid, :] = sum_k Output_partial[bid, hid, k, :] * exp2(glse - lse_total)
inline tilejit::PrimFunc flash_decoding(const FlashDecodingConfig& c) {
  using tilejit::DataType;
  using tilejit::ir::Buffer;
  using tilejit::ir::call_intrinsic;
  using tilejit::ir::Expr;
  using tilejit::ir::ForKind;
  using tilejit::ir::Intrinsic;
  using tilejit::ir::load;
  using tilejit::ir::Range;
  using tilejit::ir::ReduceKind;
  using tilejit::ir::region;
  using tilejit::ir::Scope;
  using tilejit::ir::select;
  using tilejit::ir::whole;
  const DataType dt = c.dtype, f32 = DataType::float32();
  const int64_t bn = c.block_n, dim = c.dim, group = c.heads / c.kv_heads, ns = c.num_split;
  const double scale = 1.0 / std::sqrt(double(dim)) * 1.44269504;
  auto exp2 = [](const Expr& x) { return call_intrinsic(Intrinsic::kExp2, {x}); };
  auto log2 = [](const Expr& x) { return call_intrinsic(Intrinsic::kLog2, {x}); };
  const Expr ninf = -tilejit::ir::infinity(f32);

  tilejit::ir::TileBuilder b("flash_decoding");
  const Expr batch = tilejit::ir::symbolic("batch"), seq = tilejit::ir::symbolic("seqlen_kv");
  const std::vector<Expr> q_shape = {batch, Expr(c.heads), Expr(dim)};
  const std::vector<Expr> kv_shape = {batch, seq, Expr(c.kv_heads), Expr(dim)};
  const Buffer Q = b.tensor_param("Q", q_shape, dt);
  const Buffer K = b.tensor_param("K", kv_shape, dt);
  const Buffer V = b.tensor_param("V", kv_shape, dt);
  const Buffer O = b.tensor_param("Output", q_shape, dt);
  const Buffer glse = b.alloc_global("glse", {batch, Expr(c.heads), Expr(ns)}, f32);
  const Buffer partial =
      b.alloc_global("Output_partial", {batch, Expr(c.heads), Expr(ns), Expr(dim)}, f32);

  {  // split
    const auto blk = b.begin_kernel({batch, Expr(c.kv_heads), Expr(ns)}, {128});
    const Expr bx = blk[0], by = blk[1], bz = blk[2];
    const Buffer Q_s = b.alloc("Q_shared", {group, dim}, dt, Scope::kShared);
    const Buffer K_s = b.alloc("K_shared", {bn, dim}, dt, Scope::kShared);
    const Buffer V_s = b.alloc("V_shared", {bn, dim}, dt, Scope::kShared);
    const Buffer acc_s = b.alloc("acc_s", {group, bn}, f32, Scope::kFragment);
    const Buffer acc_s_cast = b.alloc("acc_s_cast", {group, bn}, dt, Scope::kFragment);
    const Buffer acc_o = b.alloc("acc_o", {group, dim}, f32, Scope::kFragment);
    const Buffer m = b.alloc("scores_max", {group}, f32, Scope::kFragment);
    const Buffer m_prev = b.alloc("scores_max_prev", {group}, f32, Scope::kFragment);
    const Buffer sc = b.alloc("scores_scale", {group}, f32, Scope::kFragment);
    const Buffer sum = b.alloc("scores_sum", {group}, f32, Scope::kFragment);
    const Buffer logsum = b.alloc("logsum", {group}, f32, Scope::kFragment);
    // The query heads of kv head `by`, and the split's K/V rows.
    const Range heads_of{by * group, group};
    auto kv_rows = [&](const Buffer& x, const Expr& start) {
      return region(x, {Range{bx, 1}, Range{start, bn}, Range{by, 1}, Range{0, dim}});
    };

    b.copy(region(Q, {Range{bx, 1}, heads_of, Range{0, dim}}), whole(Q_s));
    b.fill(whole(acc_o), 0.0);
    b.fill(whole(logsum), 0.0);
    b.fill(whole(m), ninf);
    const Expr blocks = tilejit::ir::ceildiv(seq, bn);
    const Expr per_split = tilejit::ir::ceildiv(blocks, ns);
    const Expr first = bz * per_split;
    const Expr steps = tilejit::ir::max(tilejit::ir::min(per_split, blocks - first), 0);
    const Expr k = b.begin_for("k", 0, steps, ForKind::kPipelined, 1);
    const Expr start = (first + k) * bn;
    b.copy(kv_rows(K, start), whole(K_s));
    b.gemm(whole(Q_s), whole(K_s), whole(acc_s), false, true, /*clear_accum=*/true);
    {
      const Expr i = b.begin_for("i", 0, group, ForKind::kParallel);
      const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
      b.store(acc_s, {i, j}, select(start + j < seq, load(acc_s, {i, j}), ninf));
      b.end_for();
      b.end_for();
    }
    {  // Softmax
      b.copy(whole(m), whole(m_prev));
      b.reduce(ReduceKind::kMax, whole(acc_s), whole(m), 1, /*clear=*/false);
      Expr i = b.begin_for("i", 0, group, ForKind::kParallel);
      b.store(sc, {i}, exp2(load(m_prev, {i}) * scale - load(m, {i}) * scale));
      b.end_for();
      i = b.begin_for("i", 0, group, ForKind::kParallel);
      const Expr j = b.begin_for("j", 0, bn, ForKind::kParallel);
      b.store(acc_s, {i, j}, exp2(load(acc_s, {i, j}) * scale - load(m, {i}) * scale));
      b.end_for();
      b.end_for();
      b.reduce(ReduceKind::kSum, whole(acc_s), whole(sum), 1);
      i = b.begin_for("i", 0, group, ForKind::kParallel);
      b.store(logsum, {i}, load(logsum, {i}) * load(sc, {i}) + load(sum, {i}));
      b.end_for();
      b.copy(whole(acc_s), whole(acc_s_cast));
    }
    {  // Rescale, then add this block's P V
      const Expr i = b.begin_for("i", 0, group, ForKind::kParallel);
      const Expr d = b.begin_for("d", 0, dim, ForKind::kParallel);
      b.store(acc_o, {i, d}, load(acc_o, {i, d}) * load(sc, {i}));
      b.end_for();
      b.end_for();
    }
    b.copy(kv_rows(V, start), whole(V_s));
    b.gemm(whole(acc_s_cast), whole(V_s), whole(acc_o));
    b.end_for();
    {  // A split that walked no block has logsum 0: output 0, lse -inf.
      const Expr i = b.begin_for("i", 0, group, ForKind::kParallel);
      const Expr d = b.begin_for("d", 0, dim, ForKind::kParallel);
      b.store(acc_o, {i, d}, select(load(logsum, {i}) > 0.0,
                                    tilejit::ir::div(load(acc_o, {i, d}), load(logsum, {i})),
                                    Expr(0.0)));
      b.end_for();
      b.end_for();
      const Expr r = b.begin_for("i", 0, group, ForKind::kParallel);
      b.store(logsum, {r}, select(load(logsum, {r}) > 0.0,
                                  log2(load(logsum, {r})) + load(m, {r}) * scale, ninf));
      b.end_for();
    }
    b.copy(whole(logsum), region(glse, {Range{bx, 1}, heads_of, Range{bz, 1}}));
    b.copy(whole(acc_o), region(partial, {Range{bx, 1}, heads_of, Range{bz, 1}, Range{0, dim}}));
    b.end_kernel();
  }
  {  // combine
    const auto blk = b.begin_kernel({Expr(c.heads), batch}, {128});
    const Expr hid = blk[0], bid = blk[1];
    const Buffer lse = b.alloc("lse", {ns}, f32, Scope::kFragment);
    const Buffer lse_max = b.alloc("lse_max", {1}, f32, Scope::kFragment);
    const Buffer lse_logsum = b.alloc("lse_logsum", {1}, f32, Scope::kLocal);
    const Buffer weight = b.alloc("weight", {1}, f32, Scope::kLocal);
    const Buffer po = b.alloc("po_local", {dim}, f32, Scope::kFragment);
    const Buffer acc = b.alloc("o_accum", {dim}, f32, Scope::kFragment);
    const Expr zero(0);
    b.copy(region(glse, {Range{bid, 1}, Range{hid, 1}, Range{0, ns}}), whole(lse));
    b.reduce(ReduceKind::kMax, whole(lse), whole(lse_max), 0);
    b.fill(whole(lse_logsum), 0.0);
    Expr k = b.begin_for("k", 0, ns);
    b.store(lse_logsum, {zero},
            load(lse_logsum, {zero}) + exp2(load(lse, {k}) - load(lse_max, {zero})));
    b.end_for();
    b.store(lse_logsum, {zero}, log2(load(lse_logsum, {zero})) + load(lse_max, {zero}));
    b.fill(whole(acc), 0.0);
    k = b.begin_for("k", 0, ns);
    b.copy(region(partial, {Range{bid, 1}, Range{hid, 1}, Range{k, 1}, Range{0, dim}}), whole(po));
    b.store(weight, {zero}, exp2(load(lse, {k}) - load(lse_logsum, {zero})));
    const Expr i = b.begin_for("i", 0, dim, ForKind::kParallel);
    b.store(acc, {i}, load(acc, {i}) + load(po, {i}) * load(weight, {zero}));
    b.end_for();
    b.end_for();
    b.copy(whole(acc), region(O, {Range{bid, 1}, Range{hid, 1}, Range{0, dim}}));
    b.end_kernel();
  }
  return b.finish();
}

/// The reference: softmax(q k^T / sqrt(dim)) v per (batch, head) over every
/// key, in double, for float32 Q [batch, heads, dim], K and V [batch, seq,
/// kv_heads, dim]; query head h reads kv head h / (heads / kv_heads).
inline std::vector<double> flash_decoding_reference(const tilejit::Tensor& q,
                                                    const tilejit::Tensor& k,
                                                    const tilejit::Tensor& v) {
  const int64_t batch = q.shape(0), heads = q.shape(1), dim = q.shape(2);
  const int64_t seq = k.shape(1), kv_heads = k.shape(2), group = heads / kv_heads;
  const float *Q = q.data_as<float>(), *K = k.data_as<float>(), *V = v.data_as<float>();
  std::vector<double> out(size_t(q.numel()), 0.0);
  std::vector<double> p(static_cast<size_t>(seq));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const float* qh = Q + (b * heads + h) * dim;
      auto kv = [&](int64_t s) { return ((b * seq + s) * kv_heads + h / group) * dim; };
      double mx = -INFINITY, sum = 0;
      for (int64_t s = 0; s < seq; ++s) {
        double acc = 0;
        for (int64_t d = 0; d < dim; ++d) acc += double(qh[d]) * K[kv(s) + d];
        p[size_t(s)] = acc / std::sqrt(double(dim));
        mx = std::max(mx, p[size_t(s)]);
      }
      for (int64_t s = 0; s < seq; ++s) sum += (p[size_t(s)] = std::exp(p[size_t(s)] - mx));
      double* o = out.data() + (b * heads + h) * dim;
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t d = 0; d < dim; ++d) o[d] += p[size_t(s)] / sum * V[kv(s) + d];
    }
  return out;
}

}  // namespace examples::tile
