// The chunked gated delta rule forward built with the C++ builder: the same
// program as examples/tile/gated_delta_rule.py (the math is in its
// docstring). Per (batch, head) a state S[dk, dv] follows
//   S_t = exp(g_t) S_{t-1} + beta_t k_t (v_t - exp(g_t) S_{t-1}^T k_t)^T,
//   o_t = S_t^T (scale q_t),
// computed a chunk of C tokens at a time: (I + A)^-1 by forward substitution,
// W, U, the output and the state update as gemms, the decay masks in
// parallel loops. workspace_idx = {7, 8, 9} (W, U and the decayed keys, one
// tile per (batch, head)) and no out_idx: the call writes the caller's O and
// S and returns an empty Outputs.
//   Q, K[b, seq, heads, dk], V[b, seq, heads, dv], G, Beta[b, seq, heads],
//   O[b, seq, heads, dv], S[b, heads, dk, dv]; b and seq symbolic; float32.
#pragma once

#include <tilejit/ir/tile_builder.h>
#include <tilejit/tilejit.h>

#include <cmath>

namespace examples::tile {

struct GatedDeltaRuleConfig {
  int64_t heads = 2;
  int64_t dim_k = 32;
  int64_t dim_v = 16;
  int64_t chunk = 16;
};

inline tilejit::PrimFunc gated_delta_rule(const GatedDeltaRuleConfig& c) {
  using tilejit::DataType;
  using tilejit::ir::Buffer;
  using tilejit::ir::Expr;
  using tilejit::ir::ForKind;
  using tilejit::ir::load;
  using tilejit::ir::Range;
  using tilejit::ir::region;
  using tilejit::ir::Scope;
  using tilejit::ir::select;
  using tilejit::ir::whole;
  const DataType f32 = DataType::float32();
  const int64_t C = c.chunk, dk = c.dim_k, dv = c.dim_v;
  const double scale = 1.0 / std::sqrt(double(dk));
  auto exp = [](const Expr& x) {
    return tilejit::ir::call_intrinsic(tilejit::ir::Intrinsic::kExp, {x});
  };

  tilejit::ir::TileBuilder b("gated_delta_rule");
  const Expr batch = tilejit::ir::symbolic("batch"), seq = tilejit::ir::symbolic("seq");
  const Expr H(c.heads);
  const Buffer Q = b.tensor_param("Q", {batch, seq, H, Expr(dk)}, f32);
  const Buffer K = b.tensor_param("K", {batch, seq, H, Expr(dk)}, f32);
  const Buffer V = b.tensor_param("V", {batch, seq, H, Expr(dv)}, f32);
  const Buffer G = b.tensor_param("G", {batch, seq, H}, f32);
  const Buffer Beta = b.tensor_param("Beta", {batch, seq, H}, f32);
  const Buffer O = b.tensor_param("O", {batch, seq, H, Expr(dv)}, f32);
  const Buffer S = b.tensor_param("S", {batch, H, Expr(dk), Expr(dv)}, f32);
  const Buffer ws_w = b.tensor_param("ws_w", {batch, H, Expr(C), Expr(dk)}, f32);
  const Buffer ws_u = b.tensor_param("ws_u", {batch, H, Expr(C), Expr(dv)}, f32);
  const Buffer ws_kd = b.tensor_param("ws_kd", {batch, H, Expr(C), Expr(dk)}, f32);

  const auto blk = b.begin_kernel({H, batch}, {128});
  const Expr bh = blk[0], bb = blk[1];
  auto alloc = [&](const char* name, std::vector<int64_t> shape, Scope scope) {
    std::vector<Expr> dims(shape.begin(), shape.end());
    return b.alloc(name, dims, f32, scope);
  };
  const Buffer Q_s = alloc("Q_s", {C, dk}, Scope::kShared);
  const Buffer K_s = alloc("K_s", {C, dk}, Scope::kShared);
  const Buffer V_s = alloc("V_s", {C, dv}, Scope::kShared);
  const Buffer Kb_s = alloc("Kb_s", {C, dk}, Scope::kShared);
  const Buffer Vb_s = alloc("Vb_s", {C, dv}, Scope::kShared);
  const Buffer W_s = alloc("W_s", {C, dk}, Scope::kShared);
  const Buffer U_s = alloc("U_s", {C, dv}, Scope::kShared);
  const Buffer Kd_s = alloc("Kd_s", {C, dk}, Scope::kShared);
  const Buffer S_s = alloc("S_s", {dk, dv}, Scope::kShared);
  const Buffer A_inv = alloc("A_inv", {C, C}, Scope::kShared);
  const Buffer g_f = alloc("g_f", {C}, Scope::kFragment);
  const Buffer beta_f = alloc("beta_f", {C}, Scope::kFragment);
  const Buffer A = alloc("A", {C, C}, Scope::kFragment);
  const Buffer P = alloc("P", {C, C}, Scope::kFragment);
  const Buffer W_f = alloc("W_f", {C, dk}, Scope::kFragment);
  const Buffer U_f = alloc("U_f", {C, dv}, Scope::kFragment);
  const Buffer WS_f = alloc("WS_f", {C, dv}, Scope::kFragment);
  const Buffer Kd_f = alloc("Kd_f", {C, dk}, Scope::kFragment);
  const Buffer O_f = alloc("O_f", {C, dv}, Scope::kFragment);
  const Buffer S_f = alloc("S_f", {dk, dv}, Scope::kFragment);

  // for i, j in T.Parallel(rows, cols): body(i, j)
  auto parallel = [&](int64_t rows, int64_t cols, auto body) {
    const Expr i = b.begin_for("i", 0, rows, ForKind::kParallel);
    const Expr j = b.begin_for("j", 0, cols, ForKind::kParallel);
    body(i, j);
    b.end_for();
    b.end_for();
  };
  auto tile_of = [&](const Buffer& ws) {  // ws[bb, bh, :, :]
    return region(ws, {Range{bb, 1}, Range{bh, 1}, Range{0, C}, Range{0, ws.shape()[3]}});
  };

  b.fill(whole(S_f), 0.0);
  b.fill(whole(S_s), 0.0);
  const Expr chunk = b.begin_for("c", 0, tilejit::ir::ceildiv(seq, C));
  const Expr t0 = chunk * C;
  auto rows = [&](const Buffer& x) {  // x[bb, t0:t0+C, bh, :]
    return region(x, {Range{bb, 1}, Range{t0, C}, Range{bh, 1}, Range{0, x.shape()[3]}});
  };
  auto scalars = [&](const Buffer& x) {  // x[bb, t0:t0+C, bh]
    return region(x, {Range{bb, 1}, Range{t0, C}, Range{bh, 1}});
  };
  b.copy(rows(Q), whole(Q_s));
  b.copy(rows(K), whole(K_s));
  b.copy(rows(V), whole(V_s));
  b.copy(scalars(G), whole(g_f));
  b.copy(scalars(Beta), whole(beta_f));
  {  // the decay's cumulative sum in the chunk
    const Expr i = b.begin_for("i", 1, Expr(C - 1));
    b.store(g_f, {i}, load(g_f, {i}) + load(g_f, {i - 1}));
    b.end_for();
  }
  const Expr g_last = load(g_f, {Expr(C - 1)});

  // A and its inverse (I + A)^-1, row by row.
  b.gemm(whole(K_s), whole(K_s), whole(A), false, true, /*clear_accum=*/true);
  parallel(C, C, [&](const Expr& i, const Expr& j) {
    b.store(A, {i, j}, select(j < i, load(beta_f, {i}) * load(A, {i, j}) *
                                         exp(load(g_f, {i}) - load(g_f, {j})),
                              Expr(0.0)));
  });
  {
    const Expr i = b.begin_for("i", 0, C);
    Expr j = b.begin_for("j", 0, C, ForKind::kParallel);
    b.store(A_inv, {i, j}, select(tilejit::ir::eq(i, j), Expr(1.0), Expr(0.0)));
    b.end_for();
    const Expr m = b.begin_for("m", 0, i);
    j = b.begin_for("j", 0, C, ForKind::kParallel);
    b.store(A_inv, {i, j}, load(A_inv, {i, j}) - load(A, {i, m}) * load(A_inv, {m, j}));
    b.end_for();
    b.end_for();
    b.end_for();
  }

  // W = A_inv (beta gamma k), U = A_inv (beta v) - W S0, staged through ws_w, ws_u.
  parallel(C, dk, [&](const Expr& i, const Expr& d) {
    b.store(Kb_s, {i, d}, load(K_s, {i, d}) * load(beta_f, {i}) * exp(load(g_f, {i})));
  });
  parallel(C, dv, [&](const Expr& i, const Expr& d) {
    b.store(Vb_s, {i, d}, load(V_s, {i, d}) * load(beta_f, {i}));
  });
  b.gemm(whole(A_inv), whole(Kb_s), whole(W_f), false, false, true);
  b.copy(whole(W_f), tile_of(ws_w));
  b.copy(tile_of(ws_w), whole(W_s));
  b.gemm(whole(A_inv), whole(Vb_s), whole(U_f), false, false, true);
  b.gemm(whole(W_s), whole(S_s), whole(WS_f), false, false, true);
  parallel(C, dv, [&](const Expr& i, const Expr& d) {
    b.store(U_f, {i, d}, load(U_f, {i, d}) - load(WS_f, {i, d}));
  });
  b.copy(whole(U_f), tile_of(ws_u));
  b.copy(tile_of(ws_u), whole(U_s));

  // O = (gamma q) S0 + (q k^T under the decay mask) U.
  parallel(C, dk, [&](const Expr& i, const Expr& d) {
    b.store(Q_s, {i, d}, load(Q_s, {i, d}) * scale);
  });
  b.gemm(whole(Q_s), whole(K_s), whole(P), false, true, true);
  parallel(C, C, [&](const Expr& i, const Expr& j) {
    b.store(P, {i, j}, select(j <= i, load(P, {i, j}) * exp(load(g_f, {i}) - load(g_f, {j})),
                              Expr(0.0)));
  });
  parallel(C, dk, [&](const Expr& i, const Expr& d) {
    b.store(Q_s, {i, d}, load(Q_s, {i, d}) * exp(load(g_f, {i})));
  });
  b.gemm(whole(Q_s), whole(S_s), whole(O_f), false, false, true);
  b.gemm(whole(P), whole(U_s), whole(O_f));
  b.copy(whole(O_f), rows(O));

  // S = exp(G_last) S0 + (k exp(G_last - G))^T U, the keys staged through ws_kd.
  parallel(C, dk, [&](const Expr& i, const Expr& d) {
    b.store(Kd_f, {i, d}, load(K_s, {i, d}) * exp(g_last - load(g_f, {i})));
  });
  b.copy(whole(Kd_f), tile_of(ws_kd));
  b.copy(tile_of(ws_kd), whole(Kd_s));
  parallel(dk, dv, [&](const Expr& d, const Expr& e) {
    b.store(S_f, {d, e}, load(S_f, {d, e}) * exp(g_last));
  });
  b.gemm(whole(Kd_s), whole(U_s), whole(S_f), /*trans_a=*/true);
  b.copy(whole(S_f), whole(S_s));
  b.end_for();
  b.copy(whole(S_f), region(S, {Range{bb, 1}, Range{bh, 1}, Range{0, dk}, Range{0, dv}}));
  b.end_kernel();
  return b.finish();
}

inline tilejit::JitOptions gated_delta_rule_options() {
  tilejit::JitOptions o;
  o.workspace_idx = {7, 8, 9};
  o.target = "cpu";
  return o;
}

}  // namespace examples::tile
