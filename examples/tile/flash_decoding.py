"""Flash-decoding (split-KV attention for one query token per head) in the
tile language, in the shape of TileLang's GQA decode examples:

    Q[batch, heads, dim], K / V[batch, seqlen_kv, kv_heads, dim],
    Output[batch, heads, dim]; heads is a multiple of kv_heads (GQA; equal
    for MHA), query head h reads kv head h // (heads // kv_heads).

The program has two kernels that run in order on one stream:

1. split: one block per (batch, kv head, split) walks its share of the K/V
   blocks with an online softmax (scores in log2 units, exp2) for all the
   query heads of its kv head at once, and writes its normalised partial
   output and its log-sum-exp to two `T.alloc_global` workspaces;
2. combine: one block per (head, batch) weighs the splits' partials by
   exp2(lse_split - lse_total) into Output.

The partials are workspaces the compiler plans (one lease for both
kernels); the caller never sees them. `seqlen_kv` may be an int or a
T.symbolic and need not divide `block_N`: the splits share the
ceildiv(seqlen_kv, block_N) blocks, a split past the end walks none (its
lse is -inf, its weight 0), and key columns past the end score -inf.

    kernel = flashdecode(batch, heads, kv_heads, seqlen_kv, dim, num_split=4)
    out = kernel(q, k, v)

`reference` is the same math in float64 numpy."""

import numpy as np

import tilejit as tilelang
import tilejit.language as T

LOG2E = 1.44269504


@tilelang.jit(out_idx=[3], target="cpu")
def flashdecode(batch, heads, kv_heads, seqlen_kv, dim, num_split=4, block_N=64, num_stages=1,
                threads=128, dtype="float16"):
    scale = (1.0 / dim) ** 0.5 * LOG2E
    group = heads // kv_heads  # query heads per kv head: the rows of one block's tiles
    accum_dtype = "float"
    q_shape = [batch, heads, dim]
    kv_shape = [batch, seqlen_kv, kv_heads, dim]

    @T.macro
    def Softmax(acc_s: T.FragmentBuffer([group, block_N], accum_dtype),
                acc_s_cast: T.FragmentBuffer([group, block_N], dtype),
                scores_max: T.FragmentBuffer([group], accum_dtype),
                scores_max_prev: T.FragmentBuffer([group], accum_dtype),
                scores_scale: T.FragmentBuffer([group], accum_dtype),
                scores_sum: T.FragmentBuffer([group], accum_dtype),
                logsum: T.FragmentBuffer([group], accum_dtype)):
        T.copy(scores_max, scores_max_prev)
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        for i in T.Parallel(group):
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
        for i, j in T.Parallel(group, block_N):
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(group):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
        T.copy(acc_s, acc_s_cast)

    @T.prim_func
    def main(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype),
             V: T.Tensor(kv_shape, dtype), Output: T.Tensor(q_shape, dtype)):
        # Written by the split kernel, read by the combine kernel.
        glse = T.alloc_global([batch, heads, num_split], accum_dtype)
        Output_partial = T.alloc_global([batch, heads, num_split, dim], accum_dtype)

        with T.Kernel(batch, kv_heads, num_split, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([group, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([group, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([group, block_N], dtype)
            acc_o = T.alloc_fragment([group, dim], accum_dtype)
            scores_max = T.alloc_fragment([group], accum_dtype)
            scores_max_prev = T.alloc_fragment([group], accum_dtype)
            scores_scale = T.alloc_fragment([group], accum_dtype)
            scores_sum = T.alloc_fragment([group], accum_dtype)
            logsum = T.alloc_fragment([group], accum_dtype)

            T.copy(Q[bx, by * group:(by + 1) * group, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            # Split bz walks blocks [first, first + loop_range) of the sequence.
            blocks = T.ceildiv(seqlen_kv, block_N)
            per_split = T.ceildiv(blocks, num_split)
            first = bz * per_split
            loop_range = T.max(T.min(per_split, blocks - first), 0)
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                start = (first + k) * block_N
                T.copy(K[bx, start:start + block_N, by, :], K_shared)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(group, block_N):
                    acc_s[i, j] = T.if_then_else(start + j < seqlen_kv, acc_s[i, j],
                                                 -T.infinity(accum_dtype))
                Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale,
                        scores_sum, logsum)
                for i, j in T.Parallel(group, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bx, start:start + block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o)

            # A split that walked no block has logsum 0: output 0, lse -inf.
            for i, j in T.Parallel(group, dim):
                acc_o[i, j] = T.if_then_else(logsum[i] > 0, acc_o[i, j] / logsum[i], 0)
            for i in T.Parallel(group):
                logsum[i] = T.if_then_else(logsum[i] > 0,
                                           T.log2(logsum[i]) + scores_max[i] * scale,
                                           -T.infinity(accum_dtype))
            T.copy(logsum, glse[bx, by * group:(by + 1) * group, bz])
            T.copy(acc_o, Output_partial[bx, by * group:(by + 1) * group, bz, :])

        with T.Kernel(heads, batch, threads=threads) as (hid, bid):
            lse = T.alloc_fragment([num_split], accum_dtype)
            lse_max = T.alloc_fragment([1], accum_dtype)
            lse_logsum = T.alloc_local([1], accum_dtype)
            weight = T.alloc_local([1], accum_dtype)
            po_local = T.alloc_fragment([dim], accum_dtype)
            o_accum = T.alloc_fragment([dim], accum_dtype)

            T.copy(glse[bid, hid, :], lse)
            T.reduce_max(lse, lse_max, dim=0)
            T.clear(lse_logsum)
            for k in T.serial(num_split):
                lse_logsum[0] += T.exp2(lse[k] - lse_max[0])
            lse_logsum[0] = T.log2(lse_logsum[0]) + lse_max[0]
            T.clear(o_accum)
            for k in T.serial(num_split):
                T.copy(Output_partial[bid, hid, k, :], po_local)
                weight[0] = T.exp2(lse[k] - lse_logsum[0])
                for i in T.Parallel(dim):
                    o_accum[i] += po_local[i] * weight[0]
            T.copy(o_accum, Output[bid, hid, :])

    return main


def reference(q, k, v):
    """softmax(q k^T / sqrt(dim)) v per (batch, head) over every key, in
    float64; head h reads kv head h // (heads // kv_heads)."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[2]
    k, v = np.repeat(k, group, axis=2), np.repeat(v, group, axis=2)
    scores = np.einsum("bhd,bkhd->bhk", q, k) / np.sqrt(q.shape[-1])
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhk,bkhd->bhd", p, v)
