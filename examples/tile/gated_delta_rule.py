"""The chunked gated delta rule forward in the tile language, in the form of
TileLang-Ascend's kernels: `workspace_idx` and no `out_idx`, so the call
writes the caller's tensors and returns None.

The recurrence, per (batch, head), with a state S[dk, dv] that starts at 0:

    S_t = exp(g_t) S_{t-1} + beta_t k_t (v_t - exp(g_t) S_{t-1}^T k_t)^T
    o_t = S_t^T (scale q_t)

(g is the log decay, beta the write strength). The kernel walks the sequence
in chunks of C tokens. With G the cumulative sum of g inside the chunk,
gamma_r = exp(G_r) and S0 the state at the chunk's start:

    A[r, j] = beta_r (k_r . k_j) exp(G_r - G_j)   for j < r, else 0
    W = (I + A)^-1 (beta gamma k)      U = (I + A)^-1 (beta v) - W S0
    O = (gamma q) S0 + ((q k^T) * exp(G_r - G_j) [j <= r]) U
    S = exp(G_last) S0 + (k * exp(G_last - G))^T U

(I + A)^-1 is a forward substitution over the chunk's rows; the products
are T.gemm, the masks and decays T.Parallel. W, U and the decayed keys pass
through workspaces, one tile per (batch, head), as the Ascend authors stage
them between the cube and vector units:

    Q, K[b, seq, heads, dk], V[b, seq, heads, dv], G, Beta[b, seq, heads]
    (float32), O[b, seq, heads, dv] (written), S[b, heads, dk, dv] (the final
    state, float32, written); workspace_idx=[7, 8, 9]:
    ws_w[b, heads, C, dk], ws_u[b, heads, C, dv], ws_kd[b, heads, C, dk] (float32)

`seq` need not divide C: rows past the end load as zeros (k = v = g = beta
= 0 add nothing and decay nothing) and are never written.

    kernel = chunk_gated_delta_rule_fwd(heads, dim_k, dim_v, chunk_size=64)
    kernel(q, k, v, g, beta, o, s)   # returns None

`reference` is the recurrence, token by token, in float64."""

import numpy as np

import tilejit as tilelang
import tilejit.language as T


@tilelang.jit(workspace_idx=[7, 8, 9], target="cpu")
def chunk_gated_delta_rule_fwd(heads, dim_k, dim_v, chunk_size=64, scale=None, threads=128,
                               dtype="float32"):
    batch, seq = T.symbolic("batch"), T.symbolic("seq")
    C = chunk_size
    scale = dim_k ** -0.5 if scale is None else scale
    accum = "float32"

    @T.prim_func
    def main(Q: T.Tensor([batch, seq, heads, dim_k], dtype),
             K: T.Tensor([batch, seq, heads, dim_k], dtype),
             V: T.Tensor([batch, seq, heads, dim_v], dtype),
             G: T.Tensor([batch, seq, heads], accum),
             Beta: T.Tensor([batch, seq, heads], accum),
             O: T.Tensor([batch, seq, heads, dim_v], dtype),
             S: T.Tensor([batch, heads, dim_k, dim_v], accum),
             ws_w: T.Tensor([batch, heads, C, dim_k], accum),
             ws_u: T.Tensor([batch, heads, C, dim_v], accum),
             ws_kd: T.Tensor([batch, heads, C, dim_k], accum)):
        with T.Kernel(heads, batch, threads=threads) as (bh, bb):
            Q_s = T.alloc_shared([C, dim_k], accum)
            K_s = T.alloc_shared([C, dim_k], accum)
            V_s = T.alloc_shared([C, dim_v], accum)
            Kb_s = T.alloc_shared([C, dim_k], accum)   # beta gamma k
            Vb_s = T.alloc_shared([C, dim_v], accum)   # beta v
            W_s = T.alloc_shared([C, dim_k], accum)
            U_s = T.alloc_shared([C, dim_v], accum)
            Kd_s = T.alloc_shared([C, dim_k], accum)   # k exp(G_last - G)
            S_s = T.alloc_shared([dim_k, dim_v], accum)
            A_inv = T.alloc_shared([C, C], accum)
            g_f = T.alloc_fragment([C], accum)
            beta_f = T.alloc_fragment([C], accum)
            A = T.alloc_fragment([C, C], accum)
            P = T.alloc_fragment([C, C], accum)
            W_f = T.alloc_fragment([C, dim_k], accum)
            U_f = T.alloc_fragment([C, dim_v], accum)
            WS_f = T.alloc_fragment([C, dim_v], accum)
            Kd_f = T.alloc_fragment([C, dim_k], accum)
            O_f = T.alloc_fragment([C, dim_v], accum)
            S_f = T.alloc_fragment([dim_k, dim_v], accum)

            T.clear(S_f)
            T.clear(S_s)
            for c in T.serial(T.ceildiv(seq, C)):
                t0 = c * C
                T.copy(Q[bb, t0:t0 + C, bh, :], Q_s)
                T.copy(K[bb, t0:t0 + C, bh, :], K_s)
                T.copy(V[bb, t0:t0 + C, bh, :], V_s)
                T.copy(G[bb, t0:t0 + C, bh], g_f)
                T.copy(Beta[bb, t0:t0 + C, bh], beta_f)
                for i in T.serial(1, C):  # the decay's cumulative sum in the chunk
                    g_f[i] += g_f[i - 1]

                # A and its inverse (I + A)^-1, row by row.
                T.gemm(K_s, K_s, A, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(C, C):
                    A[i, j] = T.if_then_else(j < i, beta_f[i] * A[i, j] * T.exp(g_f[i] - g_f[j]),
                                             0)
                for i in T.serial(C):
                    for j in T.Parallel(C):
                        A_inv[i, j] = T.if_then_else(i == j, 1, 0)
                    for m in T.serial(i):
                        for j in T.Parallel(C):
                            A_inv[i, j] -= A[i, m] * A_inv[m, j]

                # W = A_inv (beta gamma k), U = A_inv (beta v) - W S0.
                for i, d in T.Parallel(C, dim_k):
                    Kb_s[i, d] = K_s[i, d] * beta_f[i] * T.exp(g_f[i])
                for i, d in T.Parallel(C, dim_v):
                    Vb_s[i, d] = V_s[i, d] * beta_f[i]
                T.gemm(A_inv, Kb_s, W_f, clear_accum=True)
                T.copy(W_f, ws_w[bb, bh, :, :])
                T.copy(ws_w[bb, bh, :, :], W_s)
                T.gemm(A_inv, Vb_s, U_f, clear_accum=True)
                T.gemm(W_s, S_s, WS_f, clear_accum=True)
                for i, d in T.Parallel(C, dim_v):
                    U_f[i, d] -= WS_f[i, d]
                T.copy(U_f, ws_u[bb, bh, :, :])
                T.copy(ws_u[bb, bh, :, :], U_s)

                # O = (gamma q) S0 + (q k^T under the decay mask) U.
                for i, d in T.Parallel(C, dim_k):
                    Q_s[i, d] *= scale
                T.gemm(Q_s, K_s, P, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(C, C):
                    P[i, j] = T.if_then_else(j <= i, P[i, j] * T.exp(g_f[i] - g_f[j]), 0)
                for i, d in T.Parallel(C, dim_k):
                    Q_s[i, d] *= T.exp(g_f[i])
                T.gemm(Q_s, S_s, O_f, clear_accum=True)
                T.gemm(P, U_s, O_f)
                T.copy(O_f, O[bb, t0:t0 + C, bh, :])

                # S = exp(G_last) S0 + (k exp(G_last - G))^T U.
                for i, d in T.Parallel(C, dim_k):
                    Kd_f[i, d] = K_s[i, d] * T.exp(g_f[C - 1] - g_f[i])
                T.copy(Kd_f, ws_kd[bb, bh, :, :])
                T.copy(ws_kd[bb, bh, :, :], Kd_s)
                for d, e in T.Parallel(dim_k, dim_v):
                    S_f[d, e] *= T.exp(g_f[C - 1])
                T.gemm(Kd_s, U_s, S_f, transpose_A=True)
                T.copy(S_f, S_s)
            T.copy(S_f, S[bb, bh, :, :])

    return main


def reference(q, k, v, g, beta, scale=None):
    """The recurrence token by token in float64: (o [b, seq, heads, dv],
    final state [b, heads, dk, dv])."""
    q, k, v, g, beta = (x.astype(np.float64) for x in (q, k, v, g, beta))
    b, seq, heads, dk = q.shape
    dv = v.shape[-1]
    scale = dk ** -0.5 if scale is None else scale
    o = np.zeros((b, seq, heads, dv))
    state = np.zeros((b, heads, dk, dv))
    for bi in range(b):
        for h in range(heads):
            s = np.zeros((dk, dv))
            for t in range(seq):
                kt = k[bi, t, h]
                s = np.exp(g[bi, t, h]) * s
                s = s + beta[bi, t, h] * np.outer(kt, v[bi, t, h] - s.T @ kt)
                o[bi, t, h] = s.T @ (scale * q[bi, t, h])
            state[bi, h] = s
    return o, state


def make_inputs(rng, b, seq, heads, dk, dv, dtype=np.float32):
    """q and k L2-normalised per token (as gated delta networks use them),
    beta in (0, 1), g a log decay in (-0.5, 0)."""
    def unit(x):
        return x / np.linalg.norm(x, axis=-1, keepdims=True)
    q = unit(rng.standard_normal((b, seq, heads, dk)))
    k = unit(rng.standard_normal((b, seq, heads, dk)))
    v = rng.standard_normal((b, seq, heads, dv))
    g = -rng.uniform(0.0, 0.5, (b, seq, heads))
    beta = 1.0 / (1.0 + np.exp(-rng.standard_normal((b, seq, heads))))
    return ([x.astype(dtype) for x in (q, k, v)]
            + [x.astype(np.float32) for x in (g, beta)])
