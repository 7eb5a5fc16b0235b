"""Accumulators whose warps split the columns (T.GemmWarpPolicy.FullCol, as
TileLang's MLA decoding has them), with their row vectors and the A operand
of the second gemm in registers (Note [Register accumulators] in
src/backend/cuda/fragments.h): each of the WN warps of a warp row holds the
row's maxima and sums, the row reductions combine the warps through shared
memory, a loop over the rows runs on every holder and one of them stores,
the log-sum-exp goes to a strided column of a global tensor, and the
probabilities reach the second gemm as its A in registers (loaded from a
shared tile by ldmatrix) or, cast straight from the accumulator, through
shared memory. Each program runs on the CPU target and, where a GPU is, on
CUDA, against numpy; the placements are checked where tilejit's cuda target
can compile (a GPU, or the null driver, bench/null_driver, first on
LD_LIBRARY_PATH)."""

import numpy as np
import pytest

import tilejit
import tilejit.language as T
from support import as_numpy, on_targets, tilejit_cuda_unavailable, to_target
from test_tile_kernels import needs_tile_cpu

LOG2E = 1.44269504


def decode(heads, seqlen, dim, block_h, block_n, splits, threads, via_shared, stages=2):
    """One kv head shared by `heads` query heads, split over `splits` blocks
    of the kv length (TileLang's MLA decoding without the rotary part):
    O_part[h, s, :] and the log2-sum-exp Lse[h, s] of each split."""
    scale = dim ** -0.5 * LOG2E
    split_len = seqlen // splits

    @T.prim_func
    def main(Q: T.Tensor((heads, dim), "float16"), KV: T.Tensor((seqlen, dim), "float16"),
             O: T.Tensor((heads, splits, dim), "float32"),
             Lse: T.Tensor((heads, splits), "float32")):
        with T.Kernel(heads // block_h, splits, threads=threads) as (hid, bz):
            Q_s = T.alloc_shared((block_h, dim), "float16")
            KV_s = T.alloc_shared((block_n, dim), "float16")
            S_s = T.alloc_shared((block_h, block_n), "float16")
            acc_s = T.alloc_fragment((block_h, block_n), "float32")
            p = T.alloc_fragment((block_h, block_n), "float16")
            acc_o = T.alloc_fragment((block_h, dim), "float32")
            m = T.alloc_fragment((block_h,), "float32")
            m_prev = T.alloc_fragment((block_h,), "float32")
            sc = T.alloc_fragment((block_h,), "float32")
            ssum = T.alloc_fragment((block_h,), "float32")
            lsum = T.alloc_fragment((block_h,), "float32")
            T.copy(Q[hid * block_h:(hid + 1) * block_h, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(lsum, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(split_len // block_n, num_stages=stages):
                start = split_len * bz + k * block_n
                T.copy(KV[start:start + block_n, :], KV_s)
                T.clear(acc_s)
                T.gemm(Q_s, KV_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity("float32"))
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_h):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(block_h):
                    sc[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_h, block_n):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, ssum, dim=1)
                if via_shared:
                    T.copy(acc_s, S_s)
                    T.copy(S_s, p)
                else:
                    T.copy(acc_s, p)
                for i in T.Parallel(block_h):
                    lsum[i] = lsum[i] * sc[i] + ssum[i]
                for i, j in T.Parallel(block_h, dim):
                    acc_o[i, j] *= sc[i]
                T.gemm(p, KV_s, acc_o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(block_h, dim):
                acc_o[i, j] /= lsum[i]
            for i in T.Parallel(block_h):
                lsum[i] = T.log2(lsum[i]) + m[i] * scale
            T.copy(lsum, Lse[hid * block_h:(hid + 1) * block_h, bz])
            T.copy(acc_o, O[hid * block_h:(hid + 1) * block_h, bz, :])
    return main


def reference(q, kv, splits):
    qf, kf = q.astype(np.float64), kv.astype(np.float64)
    heads, dim = q.shape
    n = kv.shape[0] // splits
    o = np.zeros((heads, splits, dim))
    lse = np.zeros((heads, splits))
    for s in range(splits):
        k = kf[s * n:(s + 1) * n]
        x = qf @ k.T * dim ** -0.5
        mx = x.max(axis=1, keepdims=True)
        e = np.exp(x - mx)
        o[:, s] = (e @ k) / e.sum(axis=1, keepdims=True)
        lse[:, s] = (np.log(e.sum(axis=1)) + mx[:, 0]) * LOG2E
    return o, lse


# 4 warps over a 64 x 32 score tile: 8 columns a warp; 8 warps over 64 x 64.
SHAPES = [
    dict(heads=128, seqlen=512, dim=64, block_h=64, block_n=32, splits=2, threads=128),
    dict(heads=64, seqlen=1024, dim=128, block_h=64, block_n=64, splits=4, threads=256),
]


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("shape", SHAPES, ids=["4warps", "8warps"])
@pytest.mark.parametrize("via_shared", [True, False], ids=["via_shared", "cast"])
def test_decode_fullcol(target, shape, via_shared):
    k = tilejit.compile(decode(**shape, via_shared=via_shared), out_idx=[2, 3], target=target)
    rng = np.random.default_rng(shape["dim"])
    q = rng.standard_normal((shape["heads"], shape["dim"])).astype(np.float16)
    kv = rng.standard_normal((shape["seqlen"], shape["dim"])).astype(np.float16)
    o, lse = k(to_target(target, q), to_target(target, kv))
    want_o, want_lse = reference(q, kv, shape["splits"])
    np.testing.assert_allclose(as_numpy(o), want_o, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(as_numpy(lse), want_lse, rtol=1e-3, atol=1e-3)


def rows_kernel(m, n, threads):
    """Row maxima and sums of a FullCol accumulator into register row
    vectors, a row loop over them, and strided stores to a column of Out."""
    @T.prim_func
    def main(A: T.Tensor((m, 64), "float16"), B: T.Tensor((n, 64), "float16"),
             Out: T.Tensor((m, 3), "float32"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared((m, 64), "float16")
            B_s = T.alloc_shared((n, 64), "float16")
            acc = T.alloc_fragment((m, n), "float32")
            mx = T.alloc_fragment((m,), "float32")
            sm = T.alloc_fragment((m,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, transpose_B=True, clear_accum=True,
                   policy=T.GemmWarpPolicy.FullCol)
            T.reduce_max(acc, mx, dim=1)
            for i, j in T.Parallel(m, n):
                acc[i, j] = acc[i, j] - mx[i]
            T.reduce_sum(acc, sm, dim=1)
            for i in T.Parallel(m):
                sm[i] = sm[i] * 0.5
                Out[i, 2] = mx[i] + sm[i]
            T.copy(mx, Out[0:m, 0])
            T.copy(sm, Out[0:m, 1])
            T.copy(acc, C)
    return main


@needs_tile_cpu
@on_targets
@pytest.mark.parametrize("m, n, threads", [(64, 64, 256), (32, 128, 128), (64, 32, 128)])
def test_fullcol_row_vectors(target, m, n, threads):
    k = tilejit.compile(rows_kernel(m, n, threads), out_idx=[2, 3], target=target)
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((m, 64)).astype(np.float16)
    b = rng.standard_normal((n, 64)).astype(np.float16)
    out, c = k(to_target(target, a), to_target(target, b))
    x = a.astype(np.float64) @ b.astype(np.float64).T
    mx = x.max(axis=1)
    sm = (x - mx[:, None]).sum(axis=1) * 0.5
    np.testing.assert_allclose(as_numpy(c), x - mx[:, None], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(as_numpy(out), np.stack([mx, sm, mx + sm], axis=1),
                               rtol=1e-3, atol=1e-3)


_NO_CUDA = tilejit_cuda_unavailable()


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
@pytest.mark.parametrize("arch", ["compute_80", "sm_90a"])
def test_decode_fullcol_lowering(arch):
    """Every fragment of the decoding in registers, its loop pipelined.
    Before Hopper (compute_80: PTX, which a Hopper GPU runs too) the gemms
    run on mma.sync over 8 warps split by columns;
    on sm_90a on wgmma, the two warpgroups split by columns (Note [Warpgroup
    gemms]), the probabilities held whole by both."""
    k = tilejit.compile(decode(**SHAPES[1], via_shared=True), out_idx=[2, 3], target="cuda",
                        extra_compile_flags=[f"--gpu-architecture={arch}"])
    report = k.lowering_report()
    for e in report:
        if e.get("kind") == "buffer" and e.get("scope") == "fragment":
            assert e.get("placement") == "registers", e
    loops = [e for e in report if e.get("kind") == "op" and e["op"] == "T.Pipelined"]
    # On sm_90a its tiles come through TMA from a producer warpgroup.
    want = "pipelined, 2 stages" if arch == "compute_80" else "warp_specialized, 2 stages"
    assert [e["path"] for e in loops] == [want]
    gemms = [e["path"] for e in report if e.get("kind") == "op" and e["op"] == "T.gemm"]
    src = k.get_kernel_source()
    if arch == "compute_80":
        assert gemms == ["mma", "mma"]
        assert "tilejit::cuda::MmaRows<64, 1, 8>" in src
        assert "acc_load_shared<tilejit::cuda::MmaAcc<64, 64, 1, 1, 64, 8>" in src
        # a warp's 8 columns are one 16 x 8 tile: no whole 16 x 16 block for stmatrix
        assert "acc_store<tilejit::cuda::MmaAcc<64, 64, 1, 8>" in src
        assert "acc_store_shared" not in src
        assert "rows_store<tilejit::cuda::MmaRows<64, 1, 8>, true>" in src
    else:
        assert gemms == ["wgmma_ss", "wgmma_rs"]
        assert "tilejit::cuda::MmaRows<64, 4, 2, true>" in src
        assert "acc_load_shared<tilejit::cuda::MmaAcc<64, 64, 4, 1, 64, 2, true>" in src
        # the scores' trip through shared memory: stmatrix out, ldmatrix back
        assert "acc_store_shared<tilejit::cuda::MmaAcc<64, 64, 4, 2, 64, 1, true>, 64>" in src
        assert "rows_store<tilejit::cuda::MmaRows<64, 4, 2, true>, true>" in src
        assert "acc_gemm_wg_rs<tilejit::cuda::MmaAcc<64, 128, 4, 2, 64, 1, true>" in src


@pytest.mark.skipif(bool(_NO_CUDA), reason=_NO_CUDA)
def test_decode_cast_in_registers_falls_back_to_mma():
    """Cast straight from the scores (T.copy(acc_s, p)), the probabilities
    cannot be both warpgroups' whole A in registers (each holds half of the
    scores' columns), so they stay in shared memory and the second gemm
    cannot read them through wgmma: its accumulator takes the mma layouts,
    the tiles stay row-major, and the report names the gemm that decided."""
    k = tilejit.compile(decode(**SHAPES[1], via_shared=False), out_idx=[2, 3], target="cuda",
                        extra_compile_flags=["--gpu-architecture=sm_90a"])
    report = k.lowering_report()
    gemms = [e for e in report if e.get("kind") == "op" and e["op"] == "T.gemm"]
    assert [e["path"] for e in gemms] == ["mma", "mma"]
    assert "would run on mma.sync" in gemms[1]["reason"], gemms[1]
    src = k.get_kernel_source()
    assert "swizzled" not in src
    assert ", true>" not in src.split("acc_o[")[1].split("\n")[0]

