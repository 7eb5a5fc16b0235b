"""The seed's sparse attention forward in the tile language, in the exact
signature of the phase-1 operator (tests/python/test_sparse_attention.py):

    Q[b, s, heads, dim], KV[b, s_kv, dim] (keys and values),
    Indices[b, s, topk] int32 (the KV rows each query attends to; -1 skips),
    Output[b, s, heads, dim]; out_idx=[3], workspace_idx=[4, 5, 6, 7]:
    ws_kv[b * s, block, dim]    the gathered KV rows of one step
    ws_s [b * s, heads, block]  f32 scores of one step
    ws_p [b * s, heads, block]  probabilities of one step (the input dtype)
    ws_o [b * s, heads, dim]    f32 running output accumulator

One block per query position (bx = bi * s + si) walks its top-k rows in
steps of `block` with an online softmax, staging each step through the
workspaces as the TileLang-Ascend authors do (the cube unit writes, the
vector unit reads). A row index of -1, or one at or past s_kv (a sentinel),
is never read: the gather's copy finds that row outside KV and writes zeros,
and the scores of such rows are masked to -inf. Every workspace is written
before it is read, so the result does not depend on what the arena held.

    op = sparse_attention_fwd(heads, dim, topk, block=64, dtype="bfloat16")
    out = op(q, kv, indices)

`reference` is the same math in float64 numpy."""

import numpy as np

import tilejit as tilelang
import tilejit.language as T


@tilelang.jit(out_idx=[3], workspace_idx=[4, 5, 6, 7], target="cpu")
def sparse_attention_fwd(heads, dim, topk, block=64, dtype="bfloat16"):
    b, s, s_kv = T.symbolic("b"), T.symbolic("s"), T.symbolic("s_kv")
    block_num = b * s
    scale = 1.0 / dim ** 0.5
    accum = "float32"

    @T.prim_func
    def main(Q: T.Tensor([b, s, heads, dim], dtype),
             KV: T.Tensor([b, s_kv, dim], dtype),
             Indices: T.Tensor([b, s, topk], "int32"),
             Output: T.Tensor([b, s, heads, dim], dtype),
             ws_kv: T.Tensor([block_num, block, dim], dtype),
             ws_s: T.Tensor([block_num, heads, block], "float32"),
             ws_p: T.Tensor([block_num, heads, block], dtype),
             ws_o: T.Tensor([block_num, heads, dim], "float32")):
        with T.Kernel(block_num, threads=128) as bx:
            bi = bx // s
            si = bx % s
            Q_s = T.alloc_shared([heads, dim], dtype)
            KV_s = T.alloc_shared([block, dim], dtype)
            P_s = T.alloc_shared([heads, block], dtype)
            acc_s = T.alloc_fragment([heads, block], accum)
            acc_o = T.alloc_fragment([heads, dim], accum)
            m_i = T.alloc_fragment([heads], accum)
            m_prev = T.alloc_fragment([heads], accum)
            scale_i = T.alloc_fragment([heads], accum)
            sum_i = T.alloc_fragment([heads], accum)
            l_i = T.alloc_fragment([heads], accum)

            T.copy(Q[bi, si, :, :], Q_s)
            T.fill(m_i, -T.infinity(accum))
            T.fill(l_i, 0)
            T.clear(acc_o)
            T.copy(acc_o, ws_o[bx, :, :])
            for k in T.Pipelined(T.ceildiv(topk, block), num_stages=1):
                # Gather the step's KV rows: a row outside KV (-1, a sentinel,
                # or past topk) is outside the tensor, so the copy writes zeros.
                for j in T.serial(block):
                    t = k * block + j
                    row = T.if_then_else(t < topk, Indices[bi, si, t], -1)
                    T.copy(KV[bi, row, :], ws_kv[bx, j, :])
                T.copy(ws_kv[bx, :, :], KV_s)
                T.gemm(Q_s, KV_s, acc_s, transpose_B=True, clear_accum=True)
                for h, j in T.Parallel(heads, block):
                    t = k * block + j
                    row = Indices[bi, si, t]
                    acc_s[h, j] = T.if_then_else((t < topk) & (row >= 0) & (row < s_kv),
                                                 acc_s[h, j] * scale, -T.infinity(accum))
                T.copy(acc_s, ws_s[bx, :, :])
                # Online softmax over the step's scores.
                T.copy(ws_s[bx, :, :], acc_s)
                T.copy(m_i, m_prev)
                T.reduce_max(acc_s, m_i, dim=1, clear=False)
                for h in T.Parallel(heads):
                    scale_i[h] = T.if_then_else(m_i[h] == -T.infinity(accum), 1.0,
                                                T.exp(m_prev[h] - m_i[h]))
                for h, j in T.Parallel(heads, block):
                    acc_s[h, j] = T.if_then_else(acc_s[h, j] == -T.infinity(accum), 0.0,
                                                 T.exp(acc_s[h, j] - m_i[h]))
                T.copy(acc_s, ws_p[bx, :, :])
                T.copy(ws_p[bx, :, :], P_s)
                # The sum of the probabilities as stored (rounded to dtype).
                T.copy(P_s, acc_s)
                T.reduce_sum(acc_s, sum_i, dim=1)
                for h in T.Parallel(heads):
                    l_i[h] = l_i[h] * scale_i[h] + sum_i[h]
                T.copy(ws_o[bx, :, :], acc_o)
                for h, d in T.Parallel(heads, dim):
                    acc_o[h, d] *= scale_i[h]
                T.gemm(P_s, KV_s, acc_o)
                T.copy(acc_o, ws_o[bx, :, :])
            for h, d in T.Parallel(heads, dim):
                acc_o[h, d] = T.if_then_else(l_i[h] > 0, acc_o[h, d] / l_i[h], 0.0)
            T.copy(acc_o, Output[bi, si, :, :])

    return main


def reference(q, kv, indices):
    """softmax(q k^T / sqrt(dim)) v over each query's valid indices, in
    float64; a query with no valid index gives zeros."""
    q, kv = q.astype(np.float64), kv.astype(np.float64)
    b, s, heads, dim = q.shape
    out = np.zeros((b, s, heads, dim))
    for bi in range(b):
        for si in range(s):
            rows = indices[bi, si]
            rows = rows[(rows >= 0) & (rows < kv.shape[1])]
            if rows.size == 0:
                continue
            keys = kv[bi, rows]                          # [k, dim]
            scores = q[bi, si] @ keys.T / np.sqrt(dim)   # [heads, k]
            p = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[bi, si] = (p / p.sum(axis=1, keepdims=True)) @ keys
    return out


def make_inputs(rng, b, s, s_kv, heads, dim, topk, dtype, sentinels=True):
    """Random Q, KV and Indices in [-1, s_kv); with `sentinels`, some
    indices are s_kv (one past the end) and query (0, 0) attends to nothing."""
    q = rng.standard_normal((b, s, heads, dim)).astype(np.float32).astype(dtype)
    kv = rng.standard_normal((b, s_kv, dim)).astype(np.float32).astype(dtype)
    indices = rng.integers(-1, s_kv, size=(b, s, topk)).astype(np.int32)  # -1 skips
    if sentinels:
        indices[..., ::7] = s_kv
        indices[0, 0] = -1
    return q, kv, indices
