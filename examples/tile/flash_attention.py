"""Flash attention forward in the tile language, written as TileLang's
examples write it (Q, K, V, Output of shape [batch, seq_len, heads, dim]):
one block per (query tile, head, batch) walks the K/V tiles with an online
softmax in fragments (scores_max / scores_scale / logsum), the scores in
log2 units so that exp2 serves. `seq_len` may be an int or a T.symbolic and
need not divide the tiles: key columns past the end are masked to -inf and
rows past the end are never written.

    kernel = flashattn(batch, heads, seq_len, dim, is_causal)
    out = kernel(q, k, v)

`reference` is the same math in float64 numpy."""

import math

import numpy as np

import tilejit as tilelang
import tilejit.language as T

LOG2E = 1.44269504


@tilelang.jit(out_idx=[3], target="cpu")
def flashattn(batch, heads, seq_len, dim, is_causal, block_M=64, block_N=64, num_stages=1,
              threads=128, dtype="float16"):
    scale = (1.0 / dim) ** 0.5 * LOG2E
    shape = [batch, seq_len, heads, dim]
    accum_dtype = "float"

    @T.macro
    def MMA0(K: T.Tensor(shape, dtype), Q_shared: T.SharedBuffer([block_M, dim], dtype),
             K_shared: T.SharedBuffer([block_N, dim], dtype),
             acc_s: T.FragmentBuffer([block_M, block_N], accum_dtype), k: T.int32,
             bx: T.int32, by: T.int32, bz: T.int32):
        T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
        # Key columns past the end (and, causal, after the query) score -inf.
        for i, j in T.Parallel(block_M, block_N):
            if is_causal:
                acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                             -T.infinity(acc_s.dtype))
            else:
                acc_s[i, j] = T.if_then_else(k * block_N + j < seq_len, 0,
                                             -T.infinity(acc_s.dtype))
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def MMA1(V: T.Tensor(shape, dtype), V_shared: T.SharedBuffer([block_N, dim], dtype),
             acc_s_cast: T.FragmentBuffer([block_M, block_N], dtype),
             acc_o: T.FragmentBuffer([block_M, dim], accum_dtype), k: T.int32, by: T.int32,
             bz: T.int32):
        T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def Softmax(acc_s: T.FragmentBuffer([block_M, block_N], accum_dtype),
                acc_s_cast: T.FragmentBuffer([block_M, block_N], dtype),
                scores_max: T.FragmentBuffer([block_M], accum_dtype),
                scores_max_prev: T.FragmentBuffer([block_M], accum_dtype),
                scores_scale: T.FragmentBuffer([block_M], accum_dtype),
                scores_sum: T.FragmentBuffer([block_M], accum_dtype),
                logsum: T.FragmentBuffer([block_M], accum_dtype)):
        T.copy(scores_max, scores_max_prev)
        # clear=False: the running max of every block so far.
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        # Rescale what was summed under the previous max.
        for i in T.Parallel(block_M):
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
        for i, j in T.Parallel(block_M, block_N):
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(block_M):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
        T.copy(acc_s, acc_s_cast)

    @T.macro
    def Rescale(acc_o: T.FragmentBuffer([block_M, dim], accum_dtype),
                scores_scale: T.FragmentBuffer([block_M], accum_dtype)):
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] *= scores_scale[i]

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             Output: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.annotate_layout({Q_shared: tilelang.layout.make_swizzled_layout(Q_shared)})
            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                          if is_causal else T.ceildiv(seq_len, block_N))
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz)
                Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum,
                        logsum)
                Rescale(acc_o, scores_scale)
                MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def reference(q, k, v, is_causal):
    """softmax(q k^T / sqrt(dim)) v per (batch, head) in float64; causal
    masks keys after the query."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    dim = q.shape[-1]
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dim)
    if is_causal:
        n = q.shape[1]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p, v)
