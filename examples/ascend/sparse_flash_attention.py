"""TileLang-Ascend's sparse flash attention (tile-ai/tilelang-ascend, branch
ascendc_pto, examples/sparse_flash_attention/example_sparse_flash_attn.py),
run on the CPU emulation (docs/ascend.md). From `pass_configs` to the
factory's `return main` the text is the example's, byte for byte (commit
95acbd7f; tests/python/test_ascend_sparse_attention.py checks it); the
imports above it and the driver below it are tilejit's: numpy instead of
torch on an NPU, and no tilelang.disable_cache().

    Q[batch, seq_len, heads, dim + tail_dim], KV[batch, seq_len_kv, kv_group,
    dim + tail_dim], Indices[batch, seq_len, kv_group, topk] int32 (the KV
    rows each query attends to), Output[batch, seq_len, heads, dim] float16;
    out_idx=[3], workspace_idx=[4..8]: the five GM workspaces through which
    the cube part and the vector part hand each other the gathered KV rows,
    the scores, the probabilities and the partial output.

The kernel fixes batch 1, seq_len 128 and seq_len_kv 32768; heads, dim,
tail_dim, topk and block_I are the factory's arguments, so the tests run it
with small ones, and the demo at the example's own (heads 128, dim 512,
tail_dim 64, topk 2048), whose two L0C accumulators share L0C's bytes as
TileLang-Ascend's memory planning places them (Note [Ascend memory
planning] in python/tilejit/language/ascend_memory.py).

Its cube part comes first in the text and reads the KV rows that the vector
part below it gathers by sparse index; the vector part reads the scores the
cube computes and hands P back: the two parts run interleaved at their waits
(python/tilejit/language/ascend_concurrent.py, Note [Cube and vector
concurrently]).

    kernel = sparse_attention_fwd(heads, dim, tail_dim, topk, 1, block_I=64)
    out = kernel(q, kv, indices)      # the workspaces are the framework's

`reference` is the same math in numpy. Run as a program, the file is the
Python step of scripts/demo.sh: it prints the kernel's workspace arena and
its error against the reference, and exits non-zero on a mismatch
(`--quick`: smaller heads, dim and topk, as the tests run it)."""

import argparse
import sys

import numpy as np

import tilejit as tilelang
import tilejit.language as T

pass_configs = {
    tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_COMBINE: True,
    tilelang.PassConfigKey.TL_ASCEND_AUTO_CV_SYNC: True,
    tilelang.PassConfigKey.TL_ASCEND_AUTO_SYNC: True,
    tilelang.PassConfigKey.TL_ASCEND_MEMORY_PLANNING: True,
}


@tilelang.jit(out_idx=[3], workspace_idx=[4, 5, 6, 7, 8], pass_configs=pass_configs)
def sparse_attention_fwd(
    heads,
    dim,
    tail_dim,
    topk,
    kv_stride,
    kv_group=1,
    sm_scale=None,
    is_causal=True,
    block_I=64,
):
    assert dim == tilelang.math.next_power_of_2(dim), f"haven't check padding correctness yet, dim={dim}"
    assert tail_dim == tilelang.math.next_power_of_2(tail_dim), f"haven't check padding correctness yet, dim={tail_dim}"
    assert is_causal, "non-casual is not supported"
    assert topk % block_I == 0, "otherwise will load some index=0 thus causing wrong kv to be loaded"

    # NOTE: ascend only support exp interface instead of exp2
    sm_scale = (1.0 / (dim + tail_dim)) ** 0.5 if sm_scale is None else sm_scale

    batch = 1  # T.symbolic("batch")
    seq_len = 128  # T.symbolic("seq_len")

    seq_len_kv = 32768  # T.symbolic("seq_len_kv")
    head_kv = heads // kv_group
    q_shape = [batch, seq_len, heads, dim + tail_dim]
    kv_shape = [batch, seq_len_kv, kv_group, dim + tail_dim]
    o_shape = [batch, seq_len, heads, dim]
    indices_shape = [batch, seq_len, kv_group, topk]
    # lse_shape = [batch, seq_len, heads]
    indices_dtype = "int32"
    dtype = "float16"
    accum_dtype = "float"

    H = head_kv

    padded_H = max(tilelang.math.next_power_of_2(head_kv), 16)
    if padded_H != H:
        assert kv_group == 1, (
            "here we solve the H padding automatically, other wise you should handle Q copy and Output copy with your mask (when kv_group == 1, use g_i * padded_H:(g_i+1) * padded_H would be handled automatically)"
        )

    BI = block_I
    NI = tilelang.cdiv(topk, block_I)
    D = dim
    D_tail = tail_dim

    if head_kv > 64:
        assert head_kv % 64 == 0, "head_kv should be a multiple of 64"
        REPLICATE_H = head_kv // 64
    else:
        REPLICATE_H = 1

    H_per_block = padded_H if REPLICATE_H == 1 else 64

    v_block = H_per_block // 2

    block_num = seq_len * REPLICATE_H * batch * kv_group

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, dtype),  # type: ignore
        KV: T.Tensor(kv_shape, dtype),  # type: ignore
        Indices: T.Tensor(indices_shape, indices_dtype),  # type: ignore
        Output: T.Tensor(o_shape, dtype),  # type: ignore
        # TODO: implement automatically
        workspace_1: T.Tensor([block_num, BI, D], dtype),
        workspace_2: T.Tensor([block_num, BI, D_tail], dtype),
        workspace_3: T.Tensor([block_num, H_per_block, BI], accum_dtype),
        workspace_4: T.Tensor([block_num, H_per_block, BI], dtype),
        workspace_5: T.Tensor([block_num, H_per_block, D], accum_dtype),
    ):
        with T.Kernel(block_num, is_npu=True) as (cid, vid):
            bx = cid % (seq_len * REPLICATE_H)
            by = cid // (seq_len * REPLICATE_H) % batch
            bz = cid // (seq_len * REPLICATE_H) // batch % kv_group

            q_l1 = T.alloc_L1([H_per_block, D], dtype)
            q_tail_l1 = T.alloc_L1([H_per_block, D_tail], dtype)
            kv_l1 = T.alloc_L1([BI, D], dtype)
            kv_tail_l1 = T.alloc_L1([BI, D_tail], dtype)
            acc_s_l1 = T.alloc_L1([H_per_block, BI], dtype)

            acc_s_l0c = T.alloc_L0C([H_per_block, BI], accum_dtype)
            acc_o_l0c = T.alloc_L0C([H_per_block, D], accum_dtype)

            ## 2. Vector
            acc_o = T.alloc_ub([v_block, D], accum_dtype)
            sumexp = T.alloc_ub([v_block], accum_dtype)
            m_i = T.alloc_ub([v_block], accum_dtype)
            indices_ub_ = T.alloc_ub([BI], indices_dtype)
            kv_ub = T.alloc_ub([D], dtype)
            kv_tail_ub = T.alloc_ub([D_tail], dtype)
            acc_s_ub = T.alloc_ub([v_block, BI], accum_dtype)
            m_i_prev = T.alloc_ub([v_block], accum_dtype)
            acc_s_ub_ = T.alloc_ub([v_block, BI], accum_dtype)
            sumexp_i_ub = T.alloc_ub([v_block], accum_dtype)
            acc_s_half = T.alloc_ub([v_block, BI], dtype)
            acc_o_ub = T.alloc_ub([v_block, D], accum_dtype)
            acc_o_half = T.alloc_ub([v_block, D], dtype)

            # Uncomment and set MEMORY_PLANNING false to annotate address manually
            # T.annotate_address({
            #     # L1 address
            #     q_l1: 0,
            #     q_tail_l1: 65536,
            #     kv_l1: 73728,
            #     kv_tail_l1: 139264,
            #     acc_s_l1: 139264,

            #     # L0C address
            #     acc_s_l0c: 0,
            #     acc_o_l0c: 0,

            #     ## ub address
            #     acc_o: 0,
            #     sumexp: 65536,
            #     m_i: 65664,
            #     indices_ub_: 65792,
            #     kv_ub: 66048,
            #     kv_tail_ub: 67072,
            #     acc_s_ub: 66048,
            #     m_i_prev: 74240,
            #     acc_s_ub_: 74368,
            #     tmp_ub: 74368,
            #     sumexp_i_ub: 98944,
            #     acc_s_half: 98944,
            #     acc_o_ub: 98944,
            #     acc_o_half: 98944
            # })

            b_i = by
            g_i = bz

            s_i = bx // REPLICATE_H

            H0 = g_i * padded_H + (0 if REPLICATE_H == 1 else (bx % REPLICATE_H) * 64)
            H1 = H0 + H_per_block

            T.copy(Q[b_i, s_i, H0:H1, :D], q_l1)
            T.copy(Q[b_i, s_i, H0:H1, D:], q_tail_l1)
            for _ in T.serial(NI):
                T.copy(workspace_1[cid, 0:BI, 0:D], kv_l1)
                T.copy(workspace_2[cid, 0:BI, 0:D_tail], kv_tail_l1)

                T.gemm_v0(q_l1, kv_l1, acc_s_l0c, transpose_B=True, init=True)
                T.gemm_v0(q_tail_l1, kv_tail_l1, acc_s_l0c, transpose_B=True)

                T.copy(acc_s_l0c, workspace_3[cid, 0:H_per_block, 0:BI])
                T.copy(workspace_4[cid, 0:H_per_block, 0:BI], acc_s_l1)

                T.gemm_v0(acc_s_l1, kv_l1, acc_o_l0c, init=True)

                T.copy(acc_o_l0c, workspace_5[cid, 0:H_per_block, 0:D])

            T.tile.fill(acc_o, 0.0)
            T.tile.fill(sumexp, 0.0)
            T.tile.fill(m_i, -(2.0**30))

            for i_i in range(NI):
                T.copy(Indices[b_i, s_i, g_i, i_i * BI : i_i * BI + BI], indices_ub_)

                for bi_i in range(BI // 2):
                    T.copy(KV[b_i, indices_ub_[bi_i + vid * BI // 2], g_i, :D], kv_ub)
                    T.copy(KV[b_i, indices_ub_[bi_i + vid * BI // 2], g_i, D:], kv_tail_ub)
                    T.copy(kv_ub, workspace_1[cid, bi_i + vid * BI // 2, :])
                    T.copy(kv_tail_ub, workspace_2[cid, bi_i + vid * BI // 2, :])

                T.tile.fill(acc_s_ub, 0.0)

                T.copy(m_i, m_i_prev)

                T.copy(workspace_3[cid, vid * v_block : vid * v_block + v_block, :], acc_s_ub_)

                for i, j in T.Parallel(v_block, BI):
                    acc_s_ub[i, j] = acc_s_ub[i, j] + acc_s_ub_[i, j]

                for i, j in T.Parallel(v_block, BI):
                    acc_s_ub[i, j] = acc_s_ub[i, j] * sm_scale

                T.reduce_max(acc_s_ub, m_i, dim=-1)

                for i in T.Parallel(v_block):
                    m_i[i] = T.max(m_i[i], m_i_prev[i])

                # alpha_ub = m_i_prev

                for i in T.Parallel(v_block):
                    m_i_prev[i] = m_i_prev[i] - m_i[i]

                for i in T.Parallel(v_block):
                    m_i_prev[i] = T.exp(m_i_prev[i])

                for h_i, j in T.Parallel(v_block, BI):
                    acc_s_ub[h_i, j] = acc_s_ub[h_i, j] - m_i[h_i]

                for i, j in T.Parallel(v_block, BI):
                    acc_s_ub[i, j] = T.exp(acc_s_ub[i, j])

                T.reduce_sum(acc_s_ub, sumexp_i_ub, dim=-1)

                for i in T.Parallel(v_block):
                    sumexp[i] *= m_i_prev[i]

                for i in T.Parallel(v_block):
                    sumexp[i] += sumexp_i_ub[i]

                for h_i, j in T.Parallel(v_block, D):
                    acc_o[h_i, j] = acc_o[h_i, j] * m_i_prev[h_i]

                T.copy(acc_s_ub, acc_s_half)

                T.copy(acc_s_half, workspace_4[cid, vid * v_block : vid * v_block + v_block, :])

                T.copy(workspace_5[cid, vid * v_block : vid * v_block + v_block, :], acc_o_ub)

                for i, j in T.Parallel(v_block, D):
                    acc_o[i, j] += acc_o_ub[i, j]

            for h_i, j in T.Parallel(v_block, D):
                acc_o[h_i, j] = acc_o[h_i, j] / sumexp[h_i]

            T.copy(acc_o, acc_o_half)
            T.copy(acc_o_half, Output[b_i, s_i, H0 + vid * v_block : H0 + v_block + vid * v_block, :])

    return main


def reference(q, kv, indices, dim, sm_scale):
    """Each query row attends to the KV rows its indices name (kv_group 1):
    K is a row's dim + tail_dim values, V its first dim."""
    q, kv = q.astype(np.float32), kv.astype(np.float32)
    b, s, h, _ = q.shape
    out = np.zeros((b, s, h, dim), np.float32)
    for bi in range(b):
        for si in range(s):
            rows = kv[bi, indices[bi, si, 0], 0]  # [topk, dim + tail_dim]
            scores = q[bi, si] @ rows.T * sm_scale  # [h, topk]
            p = np.exp(scores - scores.max(axis=-1, keepdims=True))
            p /= p.sum(axis=-1, keepdims=True)
            out[bi, si] = p @ rows[:, :dim]
    return out


def inputs(seq_len, seq_len_kv, heads, dim, tail_dim, topk, seed, batch=1):
    """Random float16 Q and KV (kv_group 1), and topk distinct KV rows per
    query."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch, seq_len, heads, dim + tail_dim)).astype(np.float16)
    kv = rng.standard_normal((batch, seq_len_kv, 1, dim + tail_dim)).astype(np.float16)
    indices = np.stack([rng.permutation(seq_len_kv)[:topk] for _ in range(batch * seq_len)])
    return q, kv, indices.reshape(batch, seq_len, 1, topk).astype(np.int32)


# The example fixes batch 1, seq_len 128 and seq_len_kv 32768 (BATCH, SEQ_LEN
# and SEQ_LEN_KV, as its kernel has them); the rest are the factory's
# arguments: the seed's own (128 heads: two blocks of 64 per query, as the
# example's REPLICATE_H makes them), and the quick ones the tests run.
BATCH, SEQ_LEN, SEQ_LEN_KV = 1, 128, 32768
SIZES = dict(heads=128, dim=512, tail_dim=64, topk=2048, block_I=64)
QUICK = dict(heads=16, dim=64, tail_dim=16, topk=64, block_I=32)


def main(argv=None):
    """Runs the kernel once on random inputs, prints what ran, its
    workspace arena and its error against `reference`; 0 when they match."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller heads, dim and topk")
    z = argparse.Namespace(**(QUICK if parser.parse_args(argv).quick else SIZES))
    print(f"sparse_flash_attention (TileLang-Ascend, emulated on the CPU): b={BATCH} "
          f"s={SEQ_LEN} s_kv={SEQ_LEN_KV} heads={z.heads} dim={z.dim} "
          f"tail_dim={z.tail_dim} topk={z.topk} block_I={z.block_I} f16")
    print("inputs: Q, KV, Indices; the caller passes no output and none of the five workspaces")
    kernel = sparse_attention_fwd(z.heads, z.dim, z.tail_dim, z.topk, 1, block_I=z.block_I)
    q, kv, indices = inputs(SEQ_LEN, SEQ_LEN_KV, z.heads, z.dim, z.tail_dim, z.topk, seed=2026,
                            batch=BATCH)
    layout = kernel.workspace_layout(q, kv, indices)
    print(f"workspace arena per call: {kernel.workspace_bytes(q, kv, indices)} bytes, "
          f"{len(layout)} slices")
    for w in layout:
        shape = ", ".join(map(str, w["shape"]))
        print(f"  {w['name']:<15} offset {w['offset']:>9}  bytes {w['bytes']:>9}  "
              f"{w['dtype']}[{shape}]")
    out = np.asarray(kernel(q, kv, indices))
    want = reference(q, kv, indices, z.dim, (1.0 / (z.dim + z.tail_dim)) ** 0.5)
    err = float(np.abs(out.astype(np.float32) - want).max())
    print(f"output {list(out.shape)} f16, max |error| vs reference: {err:.3g}")
    ok = err < 2e-2
    print("OK: matches its numpy reference" if ok else "FAIL: max |error| over 2e-2")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
