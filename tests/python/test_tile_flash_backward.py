"""TileLang's flash-attention backward (BHSD) end to end: its forward,
preprocess, backward and postprocess kernels verbatim, the backward adding
into a global dQ through ``T.annotate_layout({dQ: make_dq_layout(dQ)})`` (a
T.Layout on a tensor permutes its storage: Note [Remapped globals] in
python/tilejit/language/remap.py) and the postprocess copying it back
through the same layout. The driver is the example's autograd function in
numpy; gradients are checked against float64 numpy, and the raw dQ against
TileLang's permuted order. The CUDA sources compile (NVRTC) wherever
tilejit's cuda target is available, and the lowering report names the
postprocess's element-wise copy."""

import numpy as np
import pytest

import tilejit as tilelang
import tilejit.language as T
from support import raises_exact, tilejit_cuda_unavailable
from test_tile_kernels import needs_tile_cpu

_NO_CUDA = tilejit_cuda_unavailable()
needs_cuda_target = pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA or "available")

# --- TileLang's examples/flash_attention/example_mha_bwd_bhsd.py, verbatim ---

@tilelang.jit(
    out_idx=[3, 4],
    pass_configs={
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
    },
)
def flashattn_fwd(batch, heads, seq_len, dim, is_causal, block_M, block_N):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, heads, seq_len, dim]
    dtype = T.float16
    accum_dtype = T.float32

    @T.prim_func
    def flash_fwd(
        Q: T.Tensor(shape, dtype),  # type: ignore
        K: T.Tensor(shape, dtype),  # type: ignore
        V: T.Tensor(shape, dtype),  # type: ignore
        Output: T.Tensor(shape, dtype),  # type: ignore
        lse: T.Tensor([batch, heads, seq_len], accum_dtype),  # type: ignore
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            # Q_local = T.alloc_fragment([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            # T.copy(Q_shared, Q_local)
            # for i, j in T.Parallel(block_M, dim):
            #     Q_local[i, j] *= scale
            loop_range = T.ceildiv((bx + 1) * block_M, block_N) if is_causal else T.ceildiv(seq_len, block_N)
            for k in T.Pipelined(loop_range, num_stages=1):
                T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(acc_s.dtype))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len, -T.infinity(acc_s.dtype), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_shared)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.copy(acc_s, acc_s_cast)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])
            for i in T.Parallel(block_M):
                logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
            T.copy(logsum, lse[bz, by, bx * block_M : (bx + 1) * block_M])

    return flash_fwd


@tilelang.jit(
    out_idx=[2],
    pass_configs={
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
    },
)
def flashattn_bwd_preprocess(batch, heads, seq_len, dim):
    dtype = T.float16
    accum_dtype = T.float32
    shape = [batch, heads, seq_len, dim]
    blk = 32

    @T.prim_func
    def flash_bwd_prep(
        O: T.Tensor(shape, dtype),  # type: ignore
        dO: T.Tensor(shape, dtype),  # type: ignore
        Delta: T.Tensor([batch, heads, seq_len], accum_dtype),  # type: ignore
    ):
        with T.Kernel(heads, T.ceildiv(seq_len, blk), batch) as (bx, by, bz):
            o = T.alloc_fragment([blk, blk], dtype)
            do = T.alloc_fragment([blk, blk], dtype)
            acc = T.alloc_fragment([blk, blk], accum_dtype)
            delta = T.alloc_fragment([blk], accum_dtype)
            T.clear(acc)
            for k in range(T.ceildiv(dim, blk)):
                T.copy(O[bz, bx, by * blk : (by + 1) * blk, k * blk : (k + 1) * blk], o)
                T.copy(dO[bz, bx, by * blk : (by + 1) * blk, k * blk : (k + 1) * blk], do)
                for i, j in T.Parallel(blk, blk):
                    acc[i, j] += o[i, j] * do[i, j]
            T.reduce_sum(acc, delta, 1)
            T.copy(delta, Delta[bz, bx, by * blk : (by + 1) * blk])

    return flash_bwd_prep


def make_dq_layout(dQ):
    # atomicAdd can not be vectorized, so we need to reorder dq to match the 8x8 gemm fragment
    return T.Layout(dQ.shape, lambda b, h, l, d: [b, h, l // 8, d // 8, (d % 2), 4 * (l % 8) + (d % 8) // 2])


@tilelang.jit(
    out_idx=[1],
    pass_configs={
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
    },
)
def flashattn_bwd_postprocess(batch, heads, seq_len, dim):
    dtype = T.float16
    accum_dtype = T.float32
    shape = [batch, heads, seq_len, dim]
    blk = 64

    @T.prim_func
    def flash_bwd_post(
        dQ: T.Tensor(shape, accum_dtype),  # type: ignore
        dQ_out: T.Tensor(shape, dtype),  # type: ignore
    ):
        with T.Kernel(T.ceildiv(seq_len, blk), heads, batch, threads=128) as (bx, by, bz):
            T.annotate_layout({dQ: make_dq_layout(dQ)})
            T.copy(
                dQ[bz, by, bx * blk : (bx + 1) * blk, :],
                dQ_out[bz, by, bx * blk : (bx + 1) * blk, :],
            )

    return flash_bwd_post


@tilelang.jit(
    pass_configs={
        tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
    }
)
def flashattn_bwd(batch, heads, seq_len, dim, is_causal, block_M, block_N):
    sm_scale = (1.0 / dim) ** 0.5
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, heads, seq_len, dim]
    dtype = T.float16
    accum_dtype = T.float32

    @T.prim_func
    def flash_bwd(
        Q: T.Tensor(shape, dtype),  # type: ignore
        K: T.Tensor(shape, dtype),  # type: ignore
        V: T.Tensor(shape, dtype),  # type: ignore
        dO: T.Tensor(shape, dtype),  # type: ignore
        lse: T.Tensor([batch, heads, seq_len], accum_dtype),  # type: ignore
        Delta: T.Tensor([batch, heads, seq_len], accum_dtype),  # type: ignore
        dQ: T.Tensor(shape, accum_dtype),  # type: ignore
        dK: T.Tensor(shape, dtype),  # type: ignore
        dV: T.Tensor(shape, dtype),  # type: ignore
    ):
        with T.Kernel(heads, T.ceildiv(seq_len, block_M), batch, threads=128) as (bx, by, bz):
            K_shared = T.alloc_shared([block_M, dim], dtype)
            dsT_shared = T.alloc_shared([block_M, block_N], dtype)
            # should not store K to local if dim is large
            # K_local = T.alloc_fragment([block_M, dim], dtype)
            # K_local_T = T.alloc_fragment([block_M, dim], dtype)
            # V_local = T.alloc_fragment([block_M, dim], dtype)
            q = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_M, dim], dtype)
            qkT = T.alloc_fragment([block_M, block_N], accum_dtype)
            dsT = T.alloc_fragment([block_M, block_N], accum_dtype)
            qkT_cast = T.alloc_fragment([block_M, block_N], dtype)
            dsT_cast = T.alloc_fragment([block_M, block_N], dtype)
            lse_shared = T.alloc_shared([block_N], accum_dtype)
            delta = T.alloc_shared([block_N], accum_dtype)
            do = T.alloc_shared([block_N, dim], dtype)
            dv = T.alloc_fragment([block_M, dim], accum_dtype)
            dk = T.alloc_fragment([block_M, dim], accum_dtype)
            dq = T.alloc_fragment([block_N, dim], accum_dtype)
            dv_shared = T.alloc_shared([block_M, dim], dtype)
            dk_shared = T.alloc_shared([block_M, dim], dtype)

            T.annotate_layout(
                {
                    dQ: make_dq_layout(dQ),
                }
            )
            T.copy(K[bz, bx, by * block_M : (by + 1) * block_M, :], K_shared)
            T.copy(V[bz, bx, by * block_M : (by + 1) * block_M, :], V_shared)
            T.clear(dv)
            T.clear(dk)
            loop_st = T.floordiv(by * block_M, block_N) if is_causal else 0
            loop_ed = T.ceildiv(seq_len, block_N)
            for k in T.Pipelined(loop_st, loop_ed, num_stages=2):
                T.copy(Q[bz, bx, k * block_N : (k + 1) * block_N, :], q)
                T.clear(qkT)
                T.gemm(K_shared, q, qkT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(lse[bz, bx, k * block_N : (k + 1) * block_N], lse_shared)
                for i, j in T.Parallel(block_M, block_N):
                    qkT[i, j] = T.exp2(qkT[i, j] * scale - lse_shared[j])
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        qkT[i, j] = T.if_then_else(by * block_M + i <= k * block_N + j, qkT[i, j], 0)
                # We don't need to handle OOB positions for non-causal cases,
                # since OOB values won't affect other positions here.
                T.copy(dO[bz, bx, k * block_N : (k + 1) * block_N, :], do)
                T.clear(dsT)
                T.gemm(V_shared, do, dsT, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(qkT, qkT_cast)
                T.gemm(qkT_cast, do, dv, policy=T.GemmWarpPolicy.FullRow)

                T.copy(Delta[bz, bx, k * block_N : (k + 1) * block_N], delta)

                for i, j in T.Parallel(block_M, block_N):
                    dsT_cast[i, j] = qkT[i, j] * (dsT[i, j] - delta[j]) * sm_scale
                T.gemm(dsT_cast, q, dk, policy=T.GemmWarpPolicy.FullRow)

                T.copy(dsT_cast, dsT_shared)
                T.clear(dq)
                T.gemm(dsT_shared, K_shared, dq, transpose_A=True)
                for i, j in T.Parallel(block_N, dim):
                    T.atomic_add(dQ[bz, bx, k * block_N + i, j], dq[i, j])
            T.copy(dv, dv_shared)
            T.copy(dk, dk_shared)
            T.copy(dv_shared, dV[bz, bx, by * block_M : (by + 1) * block_M, :])
            T.copy(dk_shared, dK[bz, bx, by * block_M : (by + 1) * block_M, :])

    return flash_bwd

# --- the example's driver (its _attention autograd function) in numpy --------


def attention_with_grads(q, k, v, do, causal, target="cpu"):
    fwd, prep, post, bwd = (f.retarget(target) for f in (
        flashattn_fwd, flashattn_bwd_preprocess, flashattn_bwd_postprocess, flashattn_bwd))
    BATCH, H, N_CTX, D_HEAD = q.shape
    block_M = 64
    block_N = 64 if D_HEAD <= 128 else 32
    o, lse = fwd(BATCH, H, N_CTX, D_HEAD, causal, block_M, block_N)(q, k, v)
    block_N = 64 if D_HEAD <= 64 else 32
    kernel_prep = prep(BATCH, H, N_CTX, D_HEAD)
    kernel_post = post(BATCH, H, N_CTX, D_HEAD)
    delta = kernel_prep(o, do)
    kernel = bwd(BATCH, H, N_CTX, D_HEAD, causal, block_M, block_N)
    shape = [BATCH, H, N_CTX, D_HEAD]
    dq = np.zeros(shape, dtype=np.float32)
    dk = np.empty(shape, dtype=np.float16)
    dv = np.empty(shape, dtype=np.float16)
    kernel(q, k, v, do, lse, delta, dq, dk, dv)
    dq_out = kernel_post(dq)
    return o, dq, dq_out, dk, dv


def reference(q, k, v, do, causal):
    """O and dQ, dK, dV of softmax(Q K^T / sqrt(d)) V, in float64."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        n = q.shape[2]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = p @ v
    dv = np.swapaxes(p, -1, -2) @ do
    dp = do @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / np.sqrt(q.shape[-1])
    return o, ds @ k, np.swapaxes(ds, -1, -2) @ q, dv


def dq_layout_order(dq):
    """Where TileLang's make_dq_layout puts each element of dQ: the array a
    caller reading the raw dQ sees."""
    b, h, n, d = dq.shape
    out = np.zeros((b, h, n // 8, d // 8, 2, 32), dq.dtype)
    l_, d_ = np.meshgrid(np.arange(n), np.arange(d), indexing="ij")
    out[:, :, l_ // 8, d_ // 8, d_ % 2, 4 * (l_ % 8) + (d_ % 8) // 2] = dq
    return out.reshape(dq.shape)


def inputs(shape, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float16) for _ in range(4)]


@needs_tile_cpu
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_backward_bhsd(causal):
    q, k, v, do = inputs((1, 2, 128, 32), seed=int(causal))
    o, dq, dq_out, dk, dv = attention_with_grads(q, k, v, do, causal)
    o_ref, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, causal)
    np.testing.assert_allclose(np.asarray(o, np.float64), o_ref, rtol=1e-2, atol=1e-2)
    for got, want, what in ((dq_out, dq_ref, "dQ"), (dk, dk_ref, "dK"), (dv, dv_ref, "dV")):
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-2, atol=2e-2,
                                   err_msg=what)
    # The raw dQ holds TileLang's permuted order, not dQ's row-major one.
    np.testing.assert_allclose(dq, dq_layout_order(np.asarray(dq_out, np.float32)),
                               rtol=1e-2, atol=2e-2)
    assert not np.allclose(dq, np.asarray(dq_out, np.float32), atol=1e-1)


def layout_roundtrip(shape, forward):
    """Y = X through a T.Layout on X: X[i] is read at the layout's place."""
    @T.prim_func
    def main(X: T.Tensor(shape, "float32"), Y: T.Tensor(shape, "float32")):
        with T.Kernel(1, threads=32) as bx:
            T.annotate_layout({X: T.Layout(X.shape, forward)})
            for i, j in T.Parallel(*shape):
                Y[i, j] = X[i, j]
    return main


@needs_tile_cpu
def test_a_layout_on_a_tensor_reads_its_permuted_storage():
    # (i, j) -> [j, i] on a 4 x 6 tensor: element (i, j) is at j * 4 + i.
    x = np.arange(24, dtype=np.float32)
    y = np.zeros((4, 6), np.float32)
    tilelang.compile(layout_roundtrip((4, 6), lambda i, j: [j, i]), target="cpu")(
        x.reshape(4, 6), y)
    np.testing.assert_array_equal(y, x.reshape(6, 4).T)


@needs_tile_cpu
def test_a_layout_that_does_not_permute_the_tensor_is_an_error_at_its_line():
    with pytest.raises(ValueError) as info:
        layout_roundtrip((4, 6), lambda i, j: [i, j * 2])
    assert str(info.value).endswith(
        "T.annotate_layout: global buffer X [4, 6] holds 24 elements, but the layout's output "
        "shape [4, 11] holds 44; a layout on a tensor must permute its elements"), info.value
    assert "test_tile_flash_backward.py" in str(info.value)


@needs_tile_cpu
def test_a_fill_of_a_tensor_with_a_layout_is_an_error():
    with pytest.raises(ValueError) as info:
        @T.prim_func
        def main(X: T.Tensor((16, 16), "float32"), Y: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=32) as bx:
                T.annotate_layout({X: T.Layout(X.shape, lambda i, j: [j, i])})
                T.fill(X, 1)
    assert str(info.value).endswith(
        "T.fill: X is a global tensor with a T.Layout; T.fill cannot take it (T.copy, loads, "
        "stores and T.atomic_add of one element can)"), info.value


@needs_cuda_target
def test_the_cuda_sources_compile_and_report_the_elementwise_copy():
    b, h, n, d = 1, 2, 128, 32
    for factory, args in ((flashattn_fwd, (b, h, n, d, True, 64, 64)),
                          (flashattn_bwd_preprocess, (b, h, n, d)),
                          (flashattn_bwd, (b, h, n, d, True, 64, 64))):
        assert factory.retarget("cuda")(*args).get_kernel_source()
    post = flashattn_bwd_postprocess.retarget("cuda")(b, h, n, d)
    (copy,) = [e for e in post.lowering_report() if e.get("op") == "T.copy"]
    assert copy["path"] == "elementwise", copy
    assert copy["reason"] == ("dQ is a global tensor with a T.Layout: its elements are copied "
                              "one by one through the index map"), copy
